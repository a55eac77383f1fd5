package transport

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// What a round's request costs with its two tricks (its strings boxed
// without an allocation, its arrays sized for a lock's round) and without
// them: an acquire's request to five nodes, as the lock builds it.
// BENCHMARKS.md quotes it (make bench).

var (
	benchKeys = []string{"redlock:{bench}"}
	benchArgv = []string{"0123456789abcdefghijkl.1", "10000", "1", "wait", "0123456789abcdefghijkl:client1234:10000:1", "1764000000000000", "1000"}
	sinkCmds  []*redis.Cmd
)

func BenchmarkRequest(b *testing.B) {
	ctx := context.Background()
	const nodes = 5
	b.Run("as built", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := NewRequest(echo, benchKeys, benchArgv...)
			ops := r.opsFor(nodes)
			for i := range ops {
				ops[i].cmd = r.cmd(ctx)
			}
			sinkCmds = append(sinkCmds[:0], ops[0].cmd)
		}
	})
	b.Run("without the tricks", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			// The straightforward form: strings boxed into []any one by
			// one, each slice made for the request, a call per node.
			args := make([]any, 0, 3+len(benchKeys)+len(benchArgv))
			args = append(args, "evalsha", echo.sha, len(benchKeys))
			for _, k := range benchKeys {
				args = append(args, k)
			}
			for _, a := range benchArgv {
				args = append(args, a)
			}
			ops := make([]*op, nodes)
			for i := range ops {
				ops[i] = &op{cmd: redis.NewCmd(ctx, args...)}
			}
			sinkCmds = append(sinkCmds[:0], ops[0].cmd)
		}
	})
}
