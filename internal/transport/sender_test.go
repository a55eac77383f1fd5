package transport

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// The sender against a node that speaks the Redis protocol and runs Lua
// (miniredis): what it sends, when, and in how many writes. No Docker.

// gate holds the answer to the first EVALSHA a client sends (after the node
// ran it) until open is closed, and records the pipelines the client sends.
type gate struct {
	open    chan struct{}
	holding chan struct{} // closed once the first EVALSHA is held

	mu        sync.Mutex // protects the fields below
	held      bool
	pipelines []int // the number of commands of each pipeline sent
	noScript  int   // pipelined commands the node answered NOSCRIPT
}

func newGate() *gate { return &gate{open: make(chan struct{}), holding: make(chan struct{})} }

func (g *gate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		g.mu.Lock()
		first := !g.held && cmd.Name() == "evalsha"
		g.held = g.held || first
		g.mu.Unlock()
		if first {
			close(g.holding)
			<-g.open
		}
		return err
	}
}

func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		g.mu.Lock()
		defer g.mu.Unlock()
		if cmds[0].Name() == "evalsha" {
			g.pipelines = append(g.pipelines, len(cmds))
			for _, c := range cmds {
				if IsNoScript(c.Err()) {
					g.noScript++
				}
			}
		}
		return err
	}
}

// echo answers its first argument.
var echo = NewScript("return ARGV[1]")

func textReply(cmd *redis.Cmd) (string, error) { return cmd.Text() }

func TestSenderPipelinesCallsWhileBusy(t *testing.T) {
	for _, flush := range []bool{false, true} {
		t.Run(fmt.Sprintf("flush=%v", flush), func(t *testing.T) {
			mr := miniredis.RunT(t)
			rc := redis.NewClient(&redis.Options{Addr: mr.Addr()})
			t.Cleanup(func() { rc.Close() })
			if err := echo.Load(t.Context(), rc).Err(); err != nil {
				t.Fatalf("SCRIPT LOAD = %v", err)
			}
			g := newGate()
			rc.AddHook(g)
			var goes Tracker
			life, stop := context.WithCancel(context.Background())
			defer func() {
				stop()
				<-goes.Idle()
			}()
			s := NewSender(rc, &goes, life)
			if s == nil {
				t.Fatal("NewSender of a go-redis client = nil; want a sender")
			}
			nodes := []Node{{Client: rc, Sender: s}}
			call := func(arg string) (string, error) {
				r := Run(t.Context(), &goes, nodes, NewRequest(echo, nil, arg), &Spec[string]{
					Need: 1, Decided: func(ok, failed, n, need int) bool { return ok >= need || failed > n-need },
					PerNode: 10 * time.Second, Parse: textReply, Accept: func(_ string, err error) bool { return err == nil }})
				return r.Replies[0].Val, r.Replies[0].Err
			}
			const calls = 8
			type answer struct {
				want, got string
				err       error
			}
			answers := make(chan answer, calls+1)
			go func() { // owner: the test; read below
				got, err := call("first")
				answers <- answer{"first", got, err}
			}()
			<-g.holding // the first call is in flight: the others queue
			for k := range calls {
				go func() { // owner: the test; read below
					want := fmt.Sprint(k)
					got, err := call(want)
					answers <- answer{want, got, err}
				}()
			}
			for deadline := time.Now().Add(10 * time.Second); s.Queued() < calls; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d calls queued behind the first after 10s; want %d", s.Queued(), calls)
				}
			}
			if flush {
				// The node forgets the script: the queued calls meet NOSCRIPT.
				if err := redis.NewClient(&redis.Options{Addr: mr.Addr()}).ScriptFlush(t.Context()).Err(); err != nil {
					t.Fatalf("SCRIPT FLUSH = %v", err)
				}
			}
			close(g.open)
			for range calls + 1 {
				a := <-answers
				if a.err != nil || a.got != a.want {
					t.Errorf("call %q answered %q, %v; want its own argument back", a.want, a.got, a.err)
				}
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			if len(g.pipelines) != 1 || g.pipelines[0] != calls {
				t.Errorf("pipelines sent: %v; want one of the %d queued calls", g.pipelines, calls)
			}
			if flush && g.noScript != calls {
				t.Errorf("%d pipelined calls answered NOSCRIPT after the flush; want %d, each sent again with EVAL", g.noScript, calls)
			}
		})
	}
}
