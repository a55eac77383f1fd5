package redlock

import (
	"context"
	"sync"
)

// turns serialises, within one Client, the Acquire calls of each lock name:
// only the call at the head of a name's queue contends on the nodes, and
// it keeps the turn while it holds the lock. Goroutines of one process then
// never split the vote among themselves, and a local Release hands the
// lock to the next local waiter at once, without waiting for a notice from
// the nodes. Contention between processes is still settled by the nodes.
type turns struct {
	mu     sync.Mutex                 // protects queues
	queues map[string][]chan struct{} // key -> waiting calls; [0] has the turn
}

// enter joins key's queue and waits until it is this call's turn or ctx
// ends; a turn that is the call's at once is taken whatever ctx says (the
// caller checks ctx itself). If the turn is not the call's at once, it
// calls waiting (if not nil) before it waits. On success the caller must call leave exactly once
// (it is idempotent): when its Acquire failed, or when its lock has ended.
func (t *turns) enter(ctx context.Context, key string, waiting func()) (leave func(), err error) {
	ch := make(chan struct{}, 1)
	t.mu.Lock()
	if t.queues == nil {
		t.queues = map[string][]chan struct{}{}
	}
	q := t.queues[key]
	first := len(q) == 0
	if first {
		ch <- struct{}{}
	}
	t.queues[key] = append(q, ch)
	t.mu.Unlock()
	var once sync.Once
	leave = func() { once.Do(func() { t.leave(key, ch) }) }
	if first {
		return leave, nil // not a wait: the turn is the call's at once, whatever ctx says
	}
	if waiting != nil {
		waiting()
	}
	select {
	case <-ch:
		return leave, nil
	case <-ctx.Done():
		leave() // passes the turn on if it had just come to us
		return nil, ctx.Err()
	}
}

// leave removes ch from key's queue and, if it had the turn, gives the turn
// to the next call.
func (t *turns) leave(key string, ch chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.queues[key]
	for i, c := range q {
		if c != ch {
			continue
		}
		q = append(q[:i:i], q[i+1:]...)
		if len(q) == 0 {
			delete(t.queues, key)
			return
		}
		t.queues[key] = q
		if i == 0 {
			q[0] <- struct{}{} // buffered, and each channel gets the turn once
		}
		return
	}
}
