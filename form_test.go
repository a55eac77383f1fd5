package redlock

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/internal/transport"
)

// formShape is what a form's requests carry, as its scripts' headers
// declare: how many KEYS, and the ARGV by name. An acquire's wait-mode
// arguments (entry, priority, entry TTL) come after its mode.
type formShape struct {
	acquireKeys int
	acquireArgv []string // a barging or try attempt's
	extendArgv  []string
	releaseArgv []string
	cleanupArgv []string
}

// TestFormRequests lists every form and checks each request it makes
// against what its script declares (form.go, lua/*.lua): the keys it sends
// (only the lock key, and what a script cannot derive from it), its
// arguments in order, and that the script, run on miniredis with them, does
// what the form needs: an attempt takes a free key, the lease's extend
// counts it, a failed attempt's cleanup and the release delete it, and
// nothing is left but the fence counter. A form whose builder sent one
// argument more or less than its script reads fails here, without Docker.
func TestFormRequests(t *testing.T) {
	s := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { rdb.Close() })
	c := newTestClient(t, []redis.UniversalClient{rdb}, &Options{NodeTimeout: 5 * time.Second})
	ctx := context.Background()

	string4 := []string{"value", "ttl", "fenced", "mode"}
	shapes := map[string]formShape{
		"plain":         {1, string4, []string{"won", "ttl"}, []string{"prefix"}, []string{"value"}},
		"with metadata": {1, append(string4, "metadata"), []string{"won", "ttl"}, []string{"prefix"}, []string{"value"}},
		"re-entrant":    {1, append(string4, "metadata"), []string{"token", "hold", "ttl", "add", "won"}, []string{"token", "hold", "channel", "attempt"}, []string{"token", "hold", "channel", "attempt"}},
		"slot":          {1, append(string4, "limit", "yield"), []string{"won", "ttl", "limit"}, []string{"prefix"}, []string{"value"}},
		"slot with metadata": {1, append(string4, "metadata", "limit", "yield"), []string{"won", "ttl", "limit"}, []string{"prefix"},
			[]string{"value"}},
		"gate":   {1, string4, []string{"won", "ttl"}, []string{"prefix"}, []string{"value"}},
		"shared": {1, append(string4, "metadata"), []string{"won", "ttl"}, []string{"prefix", "release"}, []string{"value", "cleanup"}},
	}
	forms := []struct {
		name string
		f    form
		meta string
	}{
		{"plain", formPlain, ""}, {"with metadata", formMeta, "m"}, {"re-entrant", formHold, "m"},
		{"slot", formSlot, ""}, {"slot with metadata", formSlotM, "m"}, {"gate", formGate, ""},
		{"shared", formShared, ""},
	}
	if len(forms) != len(shapes) {
		t.Fatalf("%d forms listed, %d shapes: list every form", len(forms), len(shapes))
	}
	for i, fc := range forms {
		t.Run(fc.name, func(t *testing.T) {
			want := shapes[fc.name]
			name := fmt.Sprintf("form-%d", i)
			sk := semKeysOf(c.opts.KeyPrefix, name)
			spec := leaseSpec{form: fc.f, fenced: true, meta: fc.meta}
			switch fc.f {
			case formSlot, formSlotM:
				k := sk.slotKeys(0)
				spec.keys = &k
				spec.permit = &permitSpec{limitArg: "2", yield: "1"}
			case formGate:
				spec.keys = &sk.gate
			}
			ls := c.newLease(name, 10*time.Second, spec)
			run := func(op string, r *transport.Request, wantArgv []string, wantKeys int) any {
				t.Helper()
				if len(r.Keys()) != wantKeys || len(r.Argv()) != len(wantArgv) {
					t.Errorf("%s request: %d keys %q, %d arguments %q; want %d keys, arguments %v",
						op, len(r.Keys()), r.Keys(), len(r.Argv()), r.Argv(), wantKeys, wantArgv)
				}
				v, err := r.Run(ctx, rdb)
				if err != nil {
					t.Fatalf("%s: %v", op, err)
				}
				return v
			}
			for _, mode := range []string{queueBarge, queueTry, queueWait} {
				if (fc.f == formSlot || fc.f == formSlotM) && mode != queueBarge {
					continue // a slot's attempts always barge: its waiters queue at the gate
				}
				w := newWaiter(ls, mode, c.clock.Now(), c.waker.id)
				argv := want.acquireArgv
				if mode == queueWait {
					argv = slices.Insert(slices.Clone(argv), 4, "entry", "priority", "entry ttl")
				}
				g, err := takeOf(run("acquire ("+mode+")", ls.acquireRequest(w.place, ls.value(1)), argv, want.acquireKeys))
				if err != nil || !g.ok || g.fence == 0 {
					t.Fatalf("acquire (%s) of a free key = %+v, %v; want it granted with a fence", mode, g, err)
				}
				if got := run("extend", ls.extendRequest("20000", ls.counted(1)), want.extendArgv, 1); got != int64(1) {
					t.Errorf("extend of the lease won with attempt 1 = %v; want 1", got)
				}
				if fc.meta != "" && fc.f != formHold {
					if got := s.TTL(ls.keys.meta); got < 15*time.Second {
						t.Errorf("the meta key lives %v after the extend to 20s; want it extended with the lock key", got)
					}
				}
				if got := run("cleanup", ls.cleanupRequest(ls.value(1)), want.cleanupArgv, 1); got != int64(1) {
					t.Errorf("cleanup of attempt 1's value = %v; want 1 (deleted)", got)
				}
				run("acquire again ("+mode+")", ls.acquireRequest(w.place, ls.value(2)), argv, want.acquireKeys)
				if got := run("release", ls.releaseRequest(), want.releaseArgv, 1); got != int64(1) {
					t.Errorf("release = %v; want 1 (deleted)", got)
				}
				left := slices.DeleteFunc(s.Keys(), func(k string) bool {
					return strings.HasSuffix(k, ":fence") || strings.HasSuffix(k, ":permits:limit") // counters; a record expiring with its last slot
				})
				if len(left) > 0 {
					t.Errorf("keys left after the release (%s): %q; want only the fence counter (and a slot's limit record)", mode, left)
				}
			}
		})
	}
}
