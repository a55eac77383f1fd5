package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// floorScript is the trivial script of the floor's rounds: one key and one
// argument, like a lock script, and no work.
const floorScript = "return 1"

// floorWorkers is the number of persistent worker goroutines per node,
// more than the concurrency of any scenario.
const floorWorkers = 64

// floorLocker is the floor: a "lock" or "unlock" is one parallel round of
// EVALSHA floorScript to every node, decided at the quorum-th success,
// through persistent per-node workers (no goroutine per call).
type floorLocker struct {
	clients []*redis.Client
	sha     string
	reqs    []chan *floorRound
	wg      sync.WaitGroup
	quorum  int
}

// floorRound is one round; it is also the held "lock", whose release is
// the second round.
type floorRound struct {
	f       *floorLocker
	key     string
	replies chan error // buffered: late replies never block a worker
}

var errFloorBusy = errors.New("floor: node's workers all busy")

func openFloor(addrs []string) (locker, error) {
	cs := defaultClients(addrs)
	f := &floorLocker{clients: cs, quorum: len(cs)/2 + 1}
	for i, c := range cs {
		sha, err := c.ScriptLoad(context.Background(), floorScript).Result()
		if err != nil {
			closeClients(cs)
			return nil, fmt.Errorf("floor: loading the script on node %d: %w", i, err)
		}
		f.sha = sha
	}
	for _, c := range cs {
		ch := make(chan *floorRound, 256)
		f.reqs = append(f.reqs, ch)
		for range floorWorkers {
			f.wg.Add(1)
			go func() { // owner: f; stopped by close (channel closed), joined there
				defer f.wg.Done()
				for r := range ch {
					r.replies <- c.EvalSha(context.Background(), f.sha, []string{r.key}, "token").Err()
				}
			}()
		}
	}
	return f, nil
}

func (f *floorLocker) round(key string) (*floorRound, error) {
	r := &floorRound{f: f, key: key, replies: make(chan error, len(f.reqs))}
	for _, ch := range f.reqs {
		select {
		case ch <- r:
		default:
			r.replies <- errFloorBusy
		}
	}
	ok, failed := 0, 0
	for ok < f.quorum && failed <= len(f.reqs)-f.quorum {
		if err := <-r.replies; err == nil {
			ok++
		} else {
			failed++
		}
	}
	if ok < f.quorum {
		return nil, errors.New("floor: no quorum")
	}
	return r, nil
}

func (f *floorLocker) tryLock(_ context.Context, key string) (held, error) { return f.round(key) }
func (f *floorLocker) lock(_ context.Context, key string) (held, error)    { return f.round(key) }

func (r *floorRound) release(context.Context) error {
	_, err := r.f.round(r.key)
	return err
}

func (f *floorLocker) close() {
	for _, ch := range f.reqs {
		close(ch)
	}
	closeClients(f.clients) // frees workers stuck on a dead node
	f.wg.Wait()
}
