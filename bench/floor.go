package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// The floors are the physical floor of a one-round-trip Redlock, each a
// parallel round to every node, decided at the quorum-th success, through
// persistent per-node workers (no goroutine per call), on go-redis defaults.
// They differ in what a round runs on a node:
//   - floor: a trivial script (floorScript) to take and to release, no lock
//     at all: the cost of the round itself;
//   - floor (plain SET): SET key token NX PX to take, compare-and-delete
//     (casDelScript) to release: redsync's commands, without its client;
//   - floor (fenced): a script doing only SET NX PX and INCR of the fence
//     counter (fencedSetScript), compare-and-delete to release: the least a
//     fenced one-round-trip lock runs.

// floorScript is the trivial script of the floor's rounds: one key and one
// argument, like a lock script, and no work.
const floorScript = "return 1"

// casDelScript deletes KEYS[1] if it holds ARGV[1] (redsync's release).
const casDelScript = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`

// fencedSetScript takes KEYS[1] for ARGV[1] for ARGV[2] ms if it is free and
// then increments the fence counter KEYS[2]; nil if the key is held.
const fencedSetScript = `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('INCR', KEYS[2]) end return false`

// floorWorkers is the number of persistent worker goroutines per node,
// more than the concurrency of any scenario.
const floorWorkers = 64

// floorKind is what a floor's rounds run on one node.
type floorKind int

const (
	floorTrivial floorKind = iota
	floorPlainSet
	floorFenced
)

// floorLocker is a floor: a "lock" is one round, its "unlock" a second.
type floorLocker struct {
	clients                    []*redis.Client
	kind                       floorKind
	trivial, casDel, fencedSet *redis.Script
	ttlMs                      string
	tokens                     atomic.Uint64 // the lock values: a number per lock, unique in the process
	reqs                       []chan *floorRound
	wg                         sync.WaitGroup
	quorum                     int
}

// floorRound is one round; it is also the held "lock", whose release is
// the second round.
type floorRound struct {
	f                 *floorLocker
	key, fence, token string
	freeing           bool       // the release round
	replies           chan error // buffered: late replies never block a worker
}

var (
	errFloorBusy = errors.New("floor: node's workers all busy")
	errFloorHeld = errors.New("floor: key held")
)

func openFloor(kind floorKind) func(addrs []string) (locker, error) {
	return func(addrs []string) (locker, error) {
		cs := defaultClients(addrs)
		f := &floorLocker{
			clients: cs, kind: kind, quorum: len(cs)/2 + 1, ttlMs: strconv.FormatInt(ttl.Milliseconds(), 10),
			trivial: redis.NewScript(floorScript), casDel: redis.NewScript(casDelScript), fencedSet: redis.NewScript(fencedSetScript),
		}
		for i, c := range cs {
			for _, s := range []*redis.Script{f.trivial, f.casDel, f.fencedSet} {
				if err := s.Load(context.Background(), c).Err(); err != nil {
					closeClients(cs)
					return nil, fmt.Errorf("floor: loading the scripts on node %d: %w", i, err)
				}
			}
		}
		for _, c := range cs {
			ch := make(chan *floorRound, 256)
			f.reqs = append(f.reqs, ch)
			for range floorWorkers {
				f.wg.Add(1)
				go func() { // owner: f; stopped by close (channel closed), joined there
					defer f.wg.Done()
					for r := range ch {
						r.replies <- f.exec(c, r)
					}
				}()
			}
		}
		return f, nil
	}
}

// exec runs round r's command on one node.
func (f *floorLocker) exec(c *redis.Client, r *floorRound) error {
	ctx := context.Background()
	switch {
	case f.kind == floorTrivial:
		return f.trivial.EvalSha(ctx, c, []string{r.key}, r.token).Err()
	case r.freeing:
		return f.casDel.EvalSha(ctx, c, []string{r.key}, r.token).Err()
	case f.kind == floorPlainSet:
		err := c.Do(ctx, "SET", r.key, r.token, "NX", "PX", f.ttlMs).Err()
		if errors.Is(err, redis.Nil) {
			return errFloorHeld
		}
		return err
	default:
		err := f.fencedSet.EvalSha(ctx, c, []string{r.key, r.fence}, r.token, f.ttlMs).Err()
		if errors.Is(err, redis.Nil) {
			return errFloorHeld
		}
		return err
	}
}

func (f *floorLocker) take(key string) (*floorRound, error) {
	r := &floorRound{f: f, key: key, token: "token"}
	if f.kind != floorTrivial {
		// The fenced floor's keys are the library's: {name} and {name}:fence.
		r.key = "{" + key + "}"
		r.fence = r.key + ":fence"
		r.token = strconv.FormatUint(f.tokens.Add(1), 10)
	}
	if err := f.round(r); err != nil {
		return nil, err
	}
	return r, nil
}

func (f *floorLocker) round(r *floorRound) error {
	r.replies = make(chan error, len(f.reqs))
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
		return errors.New("floor: no quorum")
	}
	return nil
}

func (f *floorLocker) tryLock(_ context.Context, key string) (held, error) { return f.take(key) }
func (f *floorLocker) lock(_ context.Context, key string) (held, error)    { return f.take(key) }

// release is a second round on the same keys. A round's replies channel is
// not reused: a late reply of the first round lands in the old one.
func (r *floorRound) release(context.Context) error {
	rel := &floorRound{f: r.f, key: r.key, token: r.token, freeing: true}
	return r.f.round(rel)
}

func (f *floorLocker) close() {
	for _, ch := range f.reqs {
		close(ch)
	}
	closeClients(f.clients) // frees workers stuck on a dead node
	f.wg.Wait()
}
