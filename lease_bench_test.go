package redlock

import (
	"crypto/rand"
	"encoding/base64"
	"strconv"
	"testing"
	"time"
)

// What a lease costs with its one-allocation trick (every key, the token
// and the TTL argument in one string) and without it: each string made on
// its own. BENCHMARKS.md quotes it (make bench).

var sinkLease *lease

func BenchmarkNewLease(b *testing.B) {
	c := &Client{opts: Options{KeyPrefix: DefaultKeyPrefix, NodeTimeout: DefaultNodeTimeout, DriftFactor: DefaultDriftFactor}}
	const name, ttl = "orders:42", 10 * time.Second
	b.Run("as built", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkLease = c.newLease(name, ttl, leaseSpec{fenced: true})
		}
	})
	b.Run("without the trick", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p := c.opts.KeyPrefix
			lock := p + "{" + name + "}"
			var random [16]byte
			_, _ = rand.Read(random[:])
			token := base64.RawURLEncoding.EncodeToString(random[:])
			sinkLease = &lease{name: name, ttl: ttl, timeout: c.nodeTimeout(ttl), fenceArg: "1",
				keys:  keys{lock: lock, fence: lock + ":fence", queue: lock + ":q", queueTimes: lock + ":qt", channel: p + "released:" + lock},
				token: token, prefix: token + ".", first: token + ".1", ttlArg: strconv.FormatInt(ttl.Milliseconds(), 10)}
		}
	})
}
