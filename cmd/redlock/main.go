// Command redlock runs a command under a Redlock distributed lock, shows a
// lock's state on every node, and demonstrates fencing under faults.
//
//	redlock run [flags] NAME -- COMMAND [ARGS...]
//	redlock status [flags] NAME
//	redlock demo [flags]
//	redlock help [COMMAND]
//
// Nodes are given with --nodes or $REDLOCK_NODES as comma-separated URLs,
// redis://[user:password@]host:port[/db] or rediss:// for TLS; each is an
// independent Redis master.
//
// Exit codes (run): the command's own exit code (128+N if it was killed by
// signal N); 64 bad usage; 69 too few nodes reachable for a quorum; 75 lock
// not acquired within --wait; 76 lock lost while the command ran (the command
// was sent SIGTERM, then SIGKILL after --grace); 126/127 the command could
// not be started.
package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
