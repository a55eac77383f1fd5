package redlock

import (
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestReadWriteModelStepsMatchScripts runs every node step of the
// read-write model (model_rw_node_test.go) and the real script it stands
// for from the same start states on a real Redis node, and compares the
// node after it (the lock key, its expiry, the reader set with each
// reader's expiry, the counter) and the answer. A model time unit is 10s
// of the node's, so the few ms a step takes never change a whole unit.
func TestReadWriteModelStepsMatchScripts(t *testing.T) {
	rdb := nodes(t, 1)[0]
	if n := rwStepsAgainstScripts(t, rdb, rwVariant{}, t.Errorf); n == 0 {
		t.Fatal("no step checked")
	}
	// The control: the one-TTL node (every reader's expiry set at once)
	// must disagree with the scripts.
	mismatches := 0
	rwStepsAgainstScripts(t, rdb, rwVariant{oneTTL: true}, func(string, ...any) { mismatches++ })
	if mismatches == 0 {
		t.Errorf("control: the one-TTL node agrees with every script; want mismatches (the check must be able to fail)")
	}
	t.Logf("control: the one-TTL node disagrees with the scripts on %d steps", mismatches)
}

// rwStepsAgainstScripts runs the comparison for the model's node v,
// reporting each mismatch to report, and returns the steps it checked.
func rwStepsAgainstScripts(t *testing.T, rdb redis.UniversalClient, v rwVariant, report func(string, ...any)) int {
	t.Helper()
	ctx := t.Context()
	const key = "redlock:{model-rw}"
	const unit = 10000 // ms
	const now = 1
	tok := func(c int) string { return modelToken(uint8(c + 1)) }
	member := func(r, att int) string { return tok(r) + "." + strconv.Itoa(att) }
	ms := func(u uint8) string { return strconv.Itoa(int(u) * unit) }

	setup := func(n rwNode) {
		rdb.Del(ctx, key, key+readersSuffix, key+":fence")
		tm := rdb.Time(ctx).Val().UnixMilli()
		switch n.key {
		case rwMarker:
			rdb.Set(ctx, key, readersMarker, time.Duration(int(n.exp-now)*unit)*time.Millisecond)
			for r := range n.rd {
				for a, s := range n.rd[r] {
					if s != 0 {
						rdb.ZAdd(ctx, key+readersSuffix, redis.Z{Score: float64(tm + int64(s-now)*unit), Member: member(r, a)})
					}
				}
			}
			rdb.PExpire(ctx, key+readersSuffix, time.Duration(int(n.exp-now)*unit)*time.Millisecond)
		case rwWriter:
			rdb.Set(ctx, key, member(rwReaders, int(n.watt)), time.Duration(int(n.exp-now)*unit)*time.Millisecond)
		}
		rdb.Set(ctx, key+":fence", n.ctr, 0)
	}
	units := func(msLeft int64) uint8 { return uint8(now + math.Round(float64(msLeft)/unit)) }
	read := func() rwNode {
		var n rwNode
		tm := rdb.Time(ctx).Val().UnixMilli()
		v, err := rdb.Get(ctx, key).Result()
		switch {
		case err == redis.Nil:
		case v == readersMarker:
			n.key = rwMarker
		default:
			n.key = rwWriter
			a, _ := strconv.Atoi(v[len(tok(rwReaders))+1:])
			n.watt = uint8(a)
		}
		if n.key != rwFree {
			n.exp = units(rdb.PTTL(ctx, key).Val().Milliseconds())
		}
		zs, _ := rdb.ZRangeWithScores(ctx, key+readersSuffix, 0, -1).Result()
		for _, z := range zs {
			m := z.Member.(string)
			for r := range rwReaders {
				for a := 1; a <= rwAttempts; a++ {
					if m == member(r, a) {
						n.rd[r][a] = units(int64(z.Score) - tm)
					}
				}
			}
		}
		c, _ := rdb.Get(ctx, key+":fence").Int()
		n.ctr = uint8(c)
		return n
	}
	check := func(what string, want rwNode, wantOK bool, res any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		ok := false
		switch v := res.(type) {
		case string:
			g, err := parseTake(v)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			ok = g.ok
		case int64:
			ok = v == 1
		}
		if got := read(); got != want || ok != wantOK {
			report("%s: script says ok=%v, node %+v; model says ok=%v, node %+v", what, ok, got, wantOK, want)
		}
	}

	var starts []rwNode
	starts = append(starts, rwNode{ctr: 4}, rwNode{key: rwWriter, watt: 1, exp: 4, ctr: 4})
	for _, rd := range [][rwReaders][rwAttempts + 1]uint8{
		{{0, 3, 0}, {0, 0, 0}},
		{{0, 3, 0}, {0, 6, 0}},
		{{0, 0, 4}, {0, 2, 0}},
	} {
		n := rwNode{key: rwMarker, rd: rd, ctr: 4}
		n.exp = n.lastReader()
		starts = append(starts, n)
	}
	steps := 0
	for _, start := range starts {
		name := fmt.Sprintf("start %+v", start)
		for _, ra := range [][2]int{{0, 1}, {0, 2}, {1, 1}} {
			r, a := ra[0], ra[1]
			want, ok, _ := nodeRWShared(start, now, 3, r, a, v)
			setup(start)
			res, err := sharedAcquireScript.Run(ctx, rdb, []string{key}, member(r, a), ms(3), "1", queueBarge, "").Result()
			check(fmt.Sprintf("%s: shared acquire %s", name, member(r, a)), want, ok, res, err)
			for _, ttl := range []uint8{1, 5} {
				want, ok = nodeRWSharedExtend(start, now, ttl, r, a, v)
				setup(start)
				res, err = sharedExtendScript.Run(ctx, rdb, []string{key}, member(r, a), ms(ttl)).Result()
				check(fmt.Sprintf("%s: shared extend %s by %d", name, member(r, a), ttl), want, ok, res, err)
			}
			want, ok = nodeRWSharedEnd(start, now, r, a)
			setup(start)
			res, err = sharedReleaseScript.Run(ctx, rdb, []string{key}, member(r, a), "cleanup").Result()
			check(fmt.Sprintf("%s: shared cleanup %s", name, member(r, a)), want, ok, res, err)
			steps += 4
		}
		for r := range rwReaders {
			want, ok := nodeRWSharedEnd(start, now, r, 0)
			setup(start)
			res, err := sharedReleaseScript.Run(ctx, rdb, []string{key}, tok(r)+".", "release").Result()
			check(fmt.Sprintf("%s: shared release by r%d", name, r), want, ok, res, err)
			steps++
		}
		w := member(rwReaders, 1)
		for _, a := range []int{1, 2} {
			want, ok, _ := nodeRWWrite(start, now, 3, a, v)
			setup(start)
			res, err := acquirePlainScript.Run(ctx, rdb, []string{key}, member(rwReaders, a), ms(3), "1", queueBarge).Result()
			check(fmt.Sprintf("%s: writer's acquire %d", name, a), want, ok, takeText(res), err)
			want, ok = nodeRWWriteEnd(start, a)
			setup(start)
			res, err = cleanupPlainScript.Run(ctx, rdb, []string{key}, member(rwReaders, a)).Result()
			check(fmt.Sprintf("%s: writer's cleanup %d", name, a), want, ok, res, err)
			steps += 2
		}
		want, ok := nodeRWWriteExtend(start, now, 5, 1)
		setup(start)
		res, err := extendPlainScript.Run(ctx, rdb, []string{key}, w, ms(5)).Result()
		check(name+": writer's extend", want, ok, res, err)
		want, ok = nodeRWWriteEnd(start, 0)
		setup(start)
		res, err = releasePlainScript.Run(ctx, rdb, []string{key}, tok(rwReaders)+".").Result()
		check(name+": writer's release", want, ok, res, err)
		steps += 2
	}
	t.Logf("%d steps checked against the scripts", steps)
	return steps
}
