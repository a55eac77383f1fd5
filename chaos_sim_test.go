package redlock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/guard"
	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/redlocktest/history"
	"github.com/redlock-go/redlock/redlocktest/record"
)

// A chaos client (sim): a *redlock.Client over its own Net, recording what
// it does, and the workloads clients run.

// sim is one simulated client process: its own network path and Client.
type sim struct {
	e    *chaosEnv
	name string
	net  *redlocktest.Net
	lc   *redlock.Client // records through rc
	rc   record.Client

	// pauseOneIn, if > 0, makes work stop the process past its lease
	// once in that many holds, between its read and its write (a GC
	// pause): a fault the soak injects from inside the client. Only for
	// holds without a watchdog, which a real pause would stop too.
	pauseOneIn int
}

// client starts a simulated client with the environment's options.
func (e *chaosEnv) client(name string) *sim { return e.clientWith(name, &e.opts) }

// clientWith starts a simulated client with opts.
func (e *chaosEnv) clientWith(name string, opts *redlock.Options) *sim {
	e.t.Helper()
	return e.clientOver(name, opts, nil)
}

// clientOver is clientWith for a client whose Client reaches each node
// through wrap(node), a fault the test puts inside the client process (nil:
// the nodes as they are).
func (e *chaosEnv) clientOver(name string, opts *redlock.Options, wrap func(redis.UniversalClient) redlock.Node) *sim {
	e.t.Helper()
	n, err := e.cl.NewNet(name)
	if err != nil {
		e.t.Fatalf("NewNet(%q): %v", name, err)
	}
	e.t.Cleanup(func() {
		if err := n.Close(); err != nil {
			e.t.Errorf("Net(%q).Close: %v", name, err)
		}
	})
	rc := record.As(e.rec, name)
	var o redlock.Options
	if opts != nil {
		o = *opts
	}
	o.OnEvent = recordShares(rc, o.OnEvent)
	var lc *redlock.Client
	if wrap == nil {
		lc, err = redlock.New(n.Clients(), &o)
	} else {
		nodes := make([]redlock.Node, 0, e.cl.Len())
		for _, nd := range n.Clients() {
			nodes = append(nodes, wrap(nd))
		}
		lc, err = redlock.NewWithNodes(nodes, &o)
	}
	if err != nil {
		e.t.Fatalf("redlock.New(%q): %v", name, err)
	}
	e.t.Cleanup(func() { lc.Close() })
	return &sim{e: e, name: name, net: n, lc: lc, rc: rc}
}

// recordShares returns an Observe that records each event through rc, then
// calls next if set. The events of a lock made by Resume or Reenter (a
// share of another lock's lease: Event.Hold set) are recorded under a token
// of their own, shareToken, so that the history shows each share as a hold
// with its own deadline. Check then counts two shares of one lease as two
// owners: check such a history with checkLease.
func recordShares(rc record.Client, next func(context.Context, redlock.Event)) func(context.Context, redlock.Event) {
	return func(ctx context.Context, ev redlock.Event) {
		rec := ev
		if rec.Hold != "" {
			rec.Token = shareToken(rec.Token, rec.Hold)
		}
		rc.Observe(ctx, rec)
		if next != nil {
			next(ctx, ev)
		}
	}
}

// shareToken is the token in the history of the share hold of the lease
// token.
func shareToken(token, hold string) string { return token + "/" + hold }

// warmUp opens s's connections to every node and loads the scripts there,
// through a client on the same Net that records nothing.
func (s *sim) warmUp(name string) {
	s.e.t.Helper()
	lc, err := redlock.New(s.net.Clients(), &s.e.opts)
	if err != nil {
		s.e.t.Fatalf("redlock.New: %v", err)
	}
	defer lc.Close()
	l, err := lc.Acquire(within(s.e.t, 5*time.Second), name, time.Second, nil)
	if err == nil {
		err = l.Release(within(s.e.t, 5*time.Second))
	}
	if err != nil {
		s.e.t.Fatalf("warm-up of %s: %v", s.name, err)
	}
}

// acquire acquires name for ttl (recorded, with the extends and the loss
// of the hold) and keeps the hold for waitHolds.
func (s *sim) acquire(ctx context.Context, name string, ttl time.Duration, o *redlock.AcquireOptions) (*redlock.Lock, error) {
	l, err := s.lc.Acquire(ctx, name, ttl, o)
	if err != nil {
		return nil, err
	}
	s.e.mu.Lock()
	s.e.holds = append(s.e.holds, l)
	s.e.mu.Unlock()
	return l, nil
}

// resume resumes the lock of h for ttl (recorded as a share of its lease,
// with the extends and the loss of the share) and keeps the lock for
// waitHolds.
func (s *sim) resume(ctx context.Context, h redlock.Handle, ttl time.Duration, o *redlock.ResumeOptions) (*redlock.Lock, error) {
	l, err := s.lc.Resume(ctx, h, ttl, o)
	if err != nil {
		return nil, err
	}
	s.e.mu.Lock()
	s.e.holds = append(s.e.holds, l)
	s.e.mu.Unlock()
	return l, nil
}

// extend extends l (recorded; a failure also ends the lock, and its loss
// is recorded).
func (s *sim) extend(ctx context.Context, l *redlock.Lock, ttl time.Duration) error {
	return l.Extend(ctx, ttl)
}

// release releases l (recorded).
func (s *sim) release(l *redlock.Lock) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return l.Release(ctx)
}

// read is the fenced read of resource under l: it returns the counter, or
// an error matching errStale, which is recorded as a rejected write (the
// increment did not happen).
func (s *sim) read(l *redlock.Lock, resource string) (v int64, err error) {
	err = s.rc.Read(resource, l, func() (err error) {
		v, err = s.e.store.read(resource, l)
		return err
	})
	if err != nil && !errors.Is(err, guard.ErrStaleFence) {
		s.e.t.Errorf("downstream read of %s: %v; want nil or ErrStaleFence", s.name, err)
	}
	return v, err
}

// write is the fenced write of v to resource under l; it records the write
// and reports whether the store accepted it.
func (s *sim) write(l *redlock.Lock, resource string, v int64) bool {
	err := s.rc.Write(resource, l, v, func() (int64, error) { return s.e.store.write(resource, v, l) })
	if err != nil && !errors.Is(err, guard.ErrStaleFence) {
		s.e.t.Errorf("downstream write of %s: %v; want nil or ErrStaleFence", s.name, err)
	}
	return err == nil
}

// increment adds one to resource's counter under l: a fenced read, then a
// fenced write. It reports whether the write was accepted.
func (s *sim) increment(l *redlock.Lock, resource string) bool {
	v, err := s.read(l, resource)
	if err != nil {
		return false
	}
	return s.write(l, resource, v+1)
}

// work runs the usual critical section until ctx ends: acquire name (waiting
// at most wait), read resource's counter, work on it for up to hold, write
// it back plus one, release.
func (s *sim) work(ctx context.Context, name, resource string, ttl, wait, hold time.Duration, o *redlock.AcquireOptions) {
	for ctx.Err() == nil {
		actx, cancel := context.WithTimeout(ctx, wait)
		l, err := s.acquire(actx, name, ttl, o)
		cancel()
		if err != nil {
			continue
		}
		if v, err := s.read(l, resource); err == nil {
			if hold > 0 {
				time.Sleep(rand.N(hold))
			}
			if s.pauseOneIn > 0 && (o == nil || !o.AutoExtend) && rand.N(s.pauseOneIn) == 0 {
				s.pausePast(l)
			}
			s.write(l, resource, v+1)
		}
		s.release(l)
	}
}

// pausePast stops the client until its lease has run out and a little
// more (the keys' TTL on the nodes), as a GC pause would, and records it.
func (s *sim) pausePast(l *redlock.Lock) {
	s.e.testFault(history.FaultProcessPause, -1, s.name, true)
	select {
	case <-l.Done():
	case <-time.After(time.Until(l.ValidUntil()) + 5*time.Second):
		s.e.t.Errorf("Done of %s's hold of %q not closed 5s after its deadline; want closed at the deadline", s.name, l.Name())
	}
	time.Sleep(500 * time.Millisecond)
	s.e.testFault(history.FaultProcessPause, -1, s.name, false)
}

// waitFor polls cond every 10ms for up to d and reports whether it held.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runWorkers runs work on every client until d has passed, and waits for
// them.
func runWorkers(d time.Duration, clients []*sim, name, resource string, ttl, wait, hold time.Duration, o *redlock.AcquireOptions) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.work(ctx, name, resource, ttl, wait, hold, o)
		}()
	}
	wg.Wait()
}
