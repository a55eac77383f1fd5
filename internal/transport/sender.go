package transport

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Optional methods of a node that let its Sender pipeline; every go-redis
// client has both.
type (
	processor interface {
		Process(ctx context.Context, cmd redis.Cmder) error
	}
	pipeliner interface {
		Pipeline() redis.Pipeliner
	}
)

// senderLinger is how long a node's Sender goroutine waits for more calls
// once it has none, before it ends: long enough that a busy client reuses
// one goroutine per node, short enough that an idle one holds none.
const senderLinger = 20 * time.Millisecond

// Sender sends one node's calls. A call that comes while the node has none
// in flight goes at once, in its own write. Calls that come while some are
// in flight wait, and go together, in one pipeline (one write, one read),
// as soon as those have answered: a busy node gets few large writes rather
// than many small ones, and an idle node gets each call without delay.
// Calls to one node are sent in the order they came.
//
// One goroutine of the Client's tracker does the sending; it lingers for
// senderLinger after its last call, and ends at once when the Client is
// closed (calls made after Close start a new one, which does not linger).
type Sender struct {
	node redis.Scripter // for EVAL after NOSCRIPT
	proc processor
	pipe pipeliner
	goes *Tracker
	life context.Context // ends at Close

	wake chan struct{} // buffered to 1: wakes the lingering goroutine

	// Used by the goroutine only: the pipeline it reuses (nil until its
	// first batch), and the batch's commands.
	p    redis.Pipeliner
	cmds []redis.Cmder

	mu      sync.Mutex // protects the fields below
	queue   []*op      // calls waiting to be sent, oldest first
	running bool       // the goroutine runs (sending or lingering)
	idle    bool       // it lingers, waiting on wake
}

// NewSender returns a Sender for n, or nil if n cannot pipeline.
func NewSender(n redis.Scripter, goes *Tracker, life context.Context) *Sender {
	proc, ok1 := n.(processor)
	pipe, ok2 := n.(pipeliner)
	if !ok1 || !ok2 {
		return nil
	}
	return &Sender{node: n, proc: proc, pipe: pipe, goes: goes, life: life, wake: make(chan struct{}, 1)}
}

// Queued returns how many calls wait to be sent.
func (s *Sender) Queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// submit queues o; the Sender's goroutine sends it and calls o.to.answer.
func (s *Sender) submit(o *op) {
	s.mu.Lock()
	s.queue = append(s.queue, o)
	switch {
	case s.idle:
		s.idle = false
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default: // a wake-up is pending already
		}
	case !s.running:
		s.running = true
		s.mu.Unlock()
		s.goes.Go(s.run)
	default:
		s.mu.Unlock() // the goroutine takes it after the calls in flight
	}
}

// run is the Sender's goroutine: it sends what is queued, as one batch,
// until nothing is, then lingers.
func (s *Sender) run() {
	var batch []*op
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		s.mu.Lock()
		batch, s.queue = s.queue, batch[:0]
		if len(batch) == 0 {
			if s.life.Err() != nil {
				s.running = false
				s.mu.Unlock()
				return
			}
			s.idle = true
			s.mu.Unlock()
			if t == nil {
				t = time.NewTimer(senderLinger)
			} else {
				t.Reset(senderLinger)
			}
			select {
			case <-s.wake:
				continue
			case <-t.C:
			case <-s.life.Done():
			}
			s.mu.Lock()
			if len(s.queue) > 0 {
				s.idle = false
				s.mu.Unlock()
				continue
			}
			s.idle, s.running = false, false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		s.send(batch)
		for i, o := range batch {
			o.to.answer(o)
			batch[i] = nil
		}
	}
}

// send sends batch and waits for its replies: one call on its own, more as
// one pipeline. The calls whose script the node did not have cached go
// again with EVAL.
func (s *Sender) send(batch []*op) {
	// The batch runs under the latest deadline of its calls, so that none
	// is cut short by another's. If even that has passed (the calls waited
	// behind a slow one until their rounds were decided), they still go,
	// each with one per-node timeout from now: the rounds gave up on these
	// answers, but a release must still be sent.
	ctx, timeout := batch[0].to.bounds()
	d, _ := ctx.Deadline()
	for _, o := range batch[1:] {
		octx, ot := o.to.bounds()
		if od, _ := octx.Deadline(); od.After(d) {
			ctx, timeout, d = octx, ot, od
		}
	}
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
	}
	if len(batch) == 1 {
		_ = s.proc.Process(ctx, batch[0].cmd)
	} else {
		if s.p == nil {
			s.p = s.pipe.Pipeline() // reusable: Exec empties it
		}
		for _, o := range batch {
			s.cmds = append(s.cmds, o.cmd)
		}
		_ = s.p.BatchProcess(ctx, s.cmds...)
		clear(s.cmds)
		s.cmds = s.cmds[:0]
		_, _ = s.p.Exec(ctx)
	}
	for _, o := range batch {
		if IsNoScript(o.cmd.Err()) {
			o.cmd = o.req.script.Eval(ctx, s.node, o.req.keys, o.req.argv...)
		}
	}
}
