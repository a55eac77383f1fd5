package redlock

import (
	"github.com/redlock-go/redlock/internal/transport"

	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// gateHook, when armed, holds the answer to the next EVALSHA a client sends
// (after the node ran it) until open is closed, and counts the pipelines
// the client sends to run scripts.
type gateHook struct {
	open chan struct{}

	mu        sync.Mutex     // protects the fields below
	armed     bool           // hold the next EVALSHA's answer
	pipelines []int          // the number of commands of each pipeline sent
	shas      map[string]int // script calls sent, by SHA1
	noScript  int            // pipelined commands the node answered NOSCRIPT
}

func (h *gateHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *gateHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.mu.Lock()
		h.countLocked(cmd)
		first := h.armed && cmd.Name() == "evalsha"
		h.armed = h.armed && !first
		h.mu.Unlock()
		err := next(ctx, cmd)
		if first {
			<-h.open
		}
		return err
	}
}

func (h *gateHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if cmds[0].Name() != "evalsha" {
			return err // go-redis's own, when it opens a connection
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		h.pipelines = append(h.pipelines, len(cmds))
		for _, c := range cmds {
			h.countLocked(c)
			if transport.IsNoScript(c.Err()) {
				h.noScript++
			}
		}
		return err
	}
}

func (h *gateHook) countLocked(cmd redis.Cmder) {
	if cmd.Name() != "evalsha" {
		return
	}
	if h.shas == nil {
		h.shas = map[string]int{}
	}
	h.shas[fmt.Sprint(cmd.Args()[1])]++
}

// count returns how many calls of script ("acquire", "release", "cleanup")
// the client sent with EVALSHA.
func (h *gateHook) count(script string) int {
	s := map[string]*transport.Script{"acquire": acquirePlainScript, "release": releasePlainScript, "cleanup": cleanupPlainScript}[script]
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.shas[s.Hash()]
}

// queued returns how many calls wait in the sender of c's node i.
func queued(c *Client, i int) int {
	return c.links[i].Sender.Queued()
}

// TestSenderPipelinesQueuedCalls: calls that come while a node has one in
// flight are sent together, as one pipeline, once it answers, and each
// gets its own answer; after SCRIPT FLUSH, the pipelined calls answered
// NOSCRIPT go again with EVAL. On real Redis.
func TestSenderPipelinesQueuedCalls(t *testing.T) {
	for _, flush := range []bool{false, true} {
		t.Run(fmt.Sprintf("flush=%v", flush), func(t *testing.T) {
			const n = 3
			hooks := make([]*gateHook, n)
			clients := make([]redis.UniversalClient, n)
			for i := range n {
				rc := redis.NewClient(&redis.Options{Addr: cluster(t).Addr(i)})
				t.Cleanup(func() { rc.Close() })
				hooks[i] = &gateHook{open: make(chan struct{}), armed: i == 0} // only node 0 holds an answer
				rc.AddHook(hooks[i])
				clients[i] = rc
			}
			// A long node timeout: the queued calls must not pass their
			// deadline while the test holds node 0, however slow the machine.
			c := newTestClient(t, clients, &Options{NodeTimeout: 5 * time.Second})
			for i := range n {
				if c.links[i].Sender == nil {
					t.Fatalf("node %d has no sender; want one for a go-redis client", i)
				}
			}
			// Node 0 holds its answer to its first call (the first
			// Acquire's), so the next calls queue behind it there; nodes 1
			// and 2 make the quorum meanwhile.
			const calls = 8
			ctx := t.Context()
			type result struct {
				l   *Lock
				err error
			}
			results := make(chan result, calls+1)
			acquire := func(name string) {
				l, err := c.Acquire(ctx, name, 10*time.Second, &AcquireOptions{Retry: NoRetry()})
				results <- result{l, err}
			}
			go acquire("pipe-first")
			first := <-results
			if first.err != nil {
				t.Fatalf("Acquire(%q) = %v", "pipe-first", first.err)
			}
			for k := range calls {
				go acquire(fmt.Sprintf("pipe-%d", k))
			}
			var locks []*Lock
			for range calls {
				r := <-results
				if r.err != nil {
					t.Fatalf("Acquire = %v; want the lock from nodes 1 and 2", r.err)
				}
				locks = append(locks, r.l)
			}
			if got := queued(c, 0); got != calls {
				t.Fatalf("node 0 has %d calls queued; want %d behind the one it holds", got, calls)
			}
			// The first lock ends while node 0 still holds its grant: the
			// release queued behind it there deletes the key after it (and
			// the late grant's exact cleanup finds nothing).
			if err := first.l.Release(ctx); err != nil {
				t.Fatalf("Release(%q) = %v", "pipe-first", err)
			}
			if flush {
				if err := clients[0].ScriptFlush(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			}
			close(hooks[0].open)
			// Nothing waits for node 0's answers (the locks were granted by
			// the quorum): poll until every queued acquire ran there (EVAL
			// after NOSCRIPT too), each setting its own token.
			deadline := time.Now().Add(10 * time.Second)
			for _, l := range locks {
				key, _ := c.Keys(l.Name())
				for {
					v, err := clients[0].Get(ctx, key).Result()
					if err == nil && strings.HasPrefix(v, l.Token()+".") {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("node 0: %s = %q, %v after 10s; want a value of token %s", key, v, err, l.Token())
					}
					time.Sleep(time.Millisecond)
				}
			}
			hooks[0].mu.Lock()
			pipes, noScript := hooks[0].pipelines, hooks[0].noScript
			hooks[0].mu.Unlock()
			if len(pipes) == 0 || pipes[0] < calls+1 {
				t.Errorf("node 0's pipelines had %v commands; want the %d queued calls in the first", pipes, calls+1)
			}
			if flush && noScript != calls+1 {
				t.Errorf("node 0 answered NOSCRIPT to %d pipelined calls after SCRIPT FLUSH; want %d", noScript, calls+1)
			}
			for _, l := range locks {
				if err := l.Release(ctx); err != nil {
					t.Errorf("Release(%q) = %v", l.Name(), err)
				}
			}
			c.Close() // waits for node 0's straggler calls
			if n := hooks[0].count("cleanup"); n != 0 {
				t.Errorf("node 0 got %d cleanups; want none: the release followed every late answer there (lateCovered)", n)
			}
			for _, l := range append(locks, first.l) {
				key, _ := c.Keys(l.Name())
				assertNoLockKey(t, clients, key)
			}
		})
	}
}

// TestSenderSendsCallsPastTheirDeadline: a release that waited behind a
// slow call on a node until its round had given up on that node is still
// sent when the node is free, with a round trip of its own: the key goes.
// On real Redis.
func TestSenderSendsCallsPastTheirDeadline(t *testing.T) {
	const n = 3
	const timeout = 50 * time.Millisecond
	gate := &gateHook{open: make(chan struct{})}
	clients := make([]redis.UniversalClient, n)
	for i := range n {
		rc := redis.NewClient(&redis.Options{Addr: cluster(t).Addr(i)})
		t.Cleanup(func() { rc.Close() })
		if i == 0 {
			rc.AddHook(gate)
		}
		clients[i] = rc
	}
	c := newTestClient(t, clients, &Options{NodeTimeout: timeout})
	ctx := t.Context()
	try := &AcquireOptions{Retry: NoRetry()}
	l, err := c.Acquire(ctx, "past-deadline", 10*time.Second, try)
	if err != nil {
		t.Fatalf("Acquire = %v", err)
	}
	key, _ := c.Keys("past-deadline")
	if v := clients[0].Get(ctx, key).Val(); !strings.HasPrefix(v, l.Token()+".") {
		t.Fatalf("node 0: %s = %q; want our token there before the test", key, v)
	}
	// Node 0 holds its answer to another lock's acquire; the release
	// queues behind it there, and its round ends without node 0.
	gate.mu.Lock()
	gate.armed = true
	gate.mu.Unlock()
	other, err := c.Acquire(ctx, "past-deadline-other", 10*time.Second, try)
	if err != nil {
		t.Fatalf("Acquire(other) = %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release = %v; want success on nodes 1 and 2", err)
	}
	time.Sleep(3 * timeout) // past the release round's deadline
	close(gate.open)
	deadline := time.Now().Add(10 * time.Second)
	for clients[0].Exists(ctx, key).Val() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("node 0 still has %s 10s after it was free; want the queued release sent", key)
		}
		time.Sleep(time.Millisecond)
	}
	if err := other.Release(ctx); err != nil {
		t.Errorf("Release(other) = %v", err)
	}
}
