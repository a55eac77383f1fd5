package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// fakeNode is an in-memory stand-in for one Redis node, for the pure logic
// of quorum counting, timing and fence planning. It runs the four scripts'
// semantics in Go; the scripts themselves are tested on real Redis.
type fakeNode struct {
	mu          sync.Mutex // protects the fields below
	kv          map[string]string
	expiry      map[string]time.Time
	delay       time.Duration // every call answers after this long, whatever its context says
	slowCleanup time.Duration // cleanups reach the node this long after they were sent, whatever their context says
	errAfter    error         // when non-nil, every call runs its script and then answers with this error (a lost reply)
	hang        chan struct{} // when non-nil, calls block until it is closed
	err         error         // when non-nil, every call fails with it
	calls       map[string]int
	deleted     []string // keys deleted by the release script
}

var _ redis.Scripter = (*fakeNode)(nil)

func newFakeNode() *fakeNode {
	return &fakeNode{kv: map[string]string{}, expiry: map[string]time.Time{}, calls: map[string]int{}}
}

func (f *fakeNode) set(fn func(f *fakeNode)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeNode) get(key string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expireLocked(key)
	v, ok := f.kv[key]
	return v, ok
}

func (f *fakeNode) count(script string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[script]
}

// sent returns how many scripts the node has run, of every kind.
func (f *fakeNode) sent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, k := range f.calls {
		n += k
	}
	return n
}

func (f *fakeNode) expireLocked(key string) {
	if t, ok := f.expiry[key]; ok && !time.Now().Before(t) {
		delete(f.kv, key)
		delete(f.expiry, key)
	}
}

func (f *fakeNode) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	f.mu.Lock()
	delay, hang, err, errAfter := f.delay, f.hang, f.err, f.errAfter
	if sha == cleanupPlainScript.Hash() || sha == cleanupMetaScript.Hash() {
		delay += f.slowCleanup
	}
	f.mu.Unlock()
	if hang != nil {
		<-hang
	}
	if delay > 0 {
		time.Sleep(delay)
	}
	if err != nil {
		return redis.NewCmdResult(nil, err)
	}
	cmd := f.run(sha, keys, args)
	if errAfter != nil {
		return redis.NewCmdResult(nil, errAfter)
	}
	return cmd
}

// run runs the script sha on the node's data.
func (f *fakeNode) run(sha string, keys []string, args []any) *redis.Cmd {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range keys {
		f.expireLocked(k)
	}
	str := func(i int) string { return args[i].(string) }
	switch sha {
	case acquirePlainScript.Hash(), acquireMetaScript.Hash(): // (the fake keeps no metadata)
		f.calls["acquire"]++
		key, fkey, value := keys[0], keys[0]+":fence", str(0)
		ms, _ := strconv.Atoi(str(1))
		if !f.takes(key, value) {
			return redis.NewCmdResult(fmt.Sprintf("0:%d", time.Until(f.expiry[key]).Milliseconds()), nil)
		}
		_, had := f.kv[key]
		f.kv[key] = value
		if e := time.Now().Add(time.Duration(ms) * time.Millisecond); !had || e.After(f.expiry[key]) {
			f.expiry[key] = e // a key of the call's only lives longer (acquire.lua)
		}
		if str(2) != "1" {
			return redis.NewCmdResult("1:0", nil)
		}
		n, _ := strconv.ParseUint(f.kv[fkey], 10, 64)
		n++
		f.kv[fkey] = strconv.FormatUint(n, 10)
		return redis.NewCmdResult("1:"+f.kv[fkey], nil)
	case extendPlainScript.Hash(), extendMetaScript.Hash():
		f.calls["extend"]++
		ms, _ := strconv.Atoi(str(1))
		// The won value, or the call's grant (extend.lua).
		token, _, _ := strings.Cut(str(0), ".")
		if cur, ok := f.kv[keys[0]]; !ok || cur != str(0) && cur != token+".0" {
			return redis.NewCmdResult(int64(0), nil)
		}
		if e := time.Now().Add(time.Duration(ms) * time.Millisecond); e.After(f.expiry[keys[0]]) {
			f.expiry[keys[0]] = e // the expiry only moves later (extend.lua)
		}
		return redis.NewCmdResult(int64(1), nil)
	case releasePlainScript.Hash(), cleanupPlainScript.Hash(), releaseMetaScript.Hash(), cleanupMetaScript.Hash():
		op, match := "release", func(cur string) bool { return strings.HasPrefix(cur, str(0)) }
		if sha == cleanupPlainScript.Hash() || sha == cleanupMetaScript.Hash() {
			op, match = "cleanup", func(cur string) bool { return cur == str(0) }
		}
		f.calls[op]++
		if cur, ok := f.kv[keys[0]]; !ok || !match(cur) {
			return redis.NewCmdResult(int64(0), nil)
		}
		delete(f.kv, keys[0])
		delete(f.expiry, keys[0])
		f.deleted = append(f.deleted, keys[0])
		return redis.NewCmdResult(int64(1), nil)
	case fenceScript.Hash():
		f.calls["fence"]++
		cur, _ := strconv.ParseUint(f.kv[keys[0]], 10, 64)
		want, _ := strconv.ParseUint(str(0), 10, 64)
		if cur < want {
			f.kv[keys[0]] = str(0)
		}
		return redis.NewCmdResult(int64(1), nil)
	}
	return redis.NewCmdResult(nil, errors.New("NOSCRIPT fake node does not know "+sha))
}

// takes reports whether the acquire script would set key to value: the key
// is free, holds value already, or holds an earlier attempt of the same
// call ("<token>.<attempt>", see acquire.lua).
func (f *fakeNode) takes(key, value string) bool {
	cur, ok := f.kv[key]
	if !ok || cur == value {
		return true
	}
	token, mine, _ := strings.Cut(value, ".")
	prefix, theirs, found := strings.Cut(cur, ".")
	m, err1 := strconv.Atoi(mine)
	t, err2 := strconv.Atoi(theirs)
	return found && prefix == token && err1 == nil && err2 == nil && t < m
}

func (f *fakeNode) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return f.EvalSha(ctx, "unknown", keys, args...)
}

func (f *fakeNode) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return f.Eval(ctx, script, keys, args...)
}

func (f *fakeNode) EvalShaRO(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return f.EvalSha(ctx, sha, keys, args...)
}

func (f *fakeNode) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	return redis.NewBoolSliceResult(make([]bool, len(hashes)), nil)
}

func (f *fakeNode) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	return redis.NewStringResult("", nil)
}

// newFakeClient returns a Client over n fake nodes.
func newFakeClient(t testing.TB, n int, opts *Options) (*Client, []*fakeNode) {
	t.Helper()
	fakes := make([]*fakeNode, n)
	nodes := make([]node, n)
	for i := range fakes {
		fakes[i] = newFakeNode()
		nodes[i] = node{addr: "fake" + strconv.Itoa(i), client: fakes[i]}
	}
	c, err := newClient(nodes, opts)
	if err != nil {
		t.Fatalf("newClient: %v", err)
	}
	t.Cleanup(func() {
		c.Close()
		settle()
	})
	return c, fakes
}

// settle lets the goroutines a test leaves behind (calls to nodes that
// answer late) finish: a synctest bubble must end with none left.
func settle() { time.Sleep(time.Hour) }
