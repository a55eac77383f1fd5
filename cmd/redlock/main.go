// Command redlock runs a command under a Redlock distributed lock and shows
// or breaks a lock's state on every node.
//
//	redlock run [-n N] [flags] NAME [--] COMMAND [ARGS...]
//	redlock run [-n N] [flags] NAME -c 'SHELL COMMAND'
//	redlock status [-n N] [flags] NAME
//	redlock elect [flags] NAME [--] COMMAND [ARGS...]
//	redlock leader [flags] NAME
//	redlock break --yes [flags] NAME
//	redlock help [COMMAND]
//
// The demo of fencing under faults is a module of its own (demo/ in the
// repository; make demo), so that this command does not link Docker's SDK.
//
// Nodes are given with --nodes or $REDLOCK_NODES as URLs separated by
// commas or spaces: redis://[user:password@]host:port[/db], rediss:// for
// TLS, redis+sentinel:// and redis+cluster:// for a Sentinel-managed master
// or a Redis Cluster; each is one independent node. Every flag falls back to
// $REDLOCK_<FLAG>; --node-timeout bounds each node's answer in every
// command (status, leader and break also take its old name, --timeout).
//
// With -n N, run takes one of the N permits of semaphore NAME instead of
// lock NAME, so that at most N commands run at once, and status -n N shows
// the permits.
//
// Exit codes (run): the command's own exit code (128+N if it was killed by
// signal N); 64 bad usage; 69 too few nodes reachable for a quorum; 75 (or
// --conflict-exit-code) lock not acquired within --wait (with -n: every
// permit held, or the semaphore in use with another -n); 76 lock lost while
// the command ran, or held for --max-hold (its process group was sent
// SIGTERM, then SIGKILL after --grace); 126/127 the command could not be
// started.
package main

import (
	"context"
	"os"
)

func main() {
	becomeSubreaper()
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
