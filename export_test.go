package redlock

// SetSharedAttemptValue makes every attempt of c's Acquire calls write the
// same value (the bare token), as the library did before values were per
// attempt. It exists only for the negative control of the chaos suite,
// which shows that a delayed cleanup then deletes a later attempt's key.
// Call it before c is used.
func SetSharedAttemptValue(c *Client) { c.sharedValue = true }

// LogSink is a slog.Handler that keeps what the library logs, for the
// chaos suite.
type LogSink = logSink

// MsgStraggler is what the library logs for a node that failed to delete a
// released key after Release returned.
const MsgStraggler = msgStraggler

// Nodes returns the "node" attribute of the records whose message is msg.
func (s *logSink) Nodes(msg string) []int {
	var out []int
	for _, a := range s.find(msg) {
		if i, ok := a["node"].(int64); ok {
			out = append(out, int(i))
		}
	}
	return out
}

// CleanupSource is the plain lock's cleanup script's source as the Client
// loads it.
var CleanupSource = cleanupPlainScript.Source()

// AcquireHashes are the SHA1s of the acquire scripts of the plain lock, the
// lock with metadata and the re-entrant lock; CleanupHashes those of the
// cleanup scripts of the first two; HoldReleaseHash the re-entrant lock's
// release and cleanup script's.
var (
	AcquireHashes   = []string{acquirePlainScript.Hash(), acquireMetaScript.Hash(), holdAcquireScript.Hash()}
	CleanupHashes   = []string{cleanupPlainScript.Hash(), cleanupMetaScript.Hash()}
	HoldReleaseHash = holdReleaseScript.Hash()
)

// ScriptSources are the sources of every script a lock's attempt or its
// cleanup may run, for a test that holds them on their way: a held EVALSHA
// that finds no script does nothing, so the test loads them first.
var ScriptSources = []string{acquirePlainScript.Source(), acquireMetaScript.Source(), holdAcquireScript.Source(),
	cleanupPlainScript.Source(), cleanupMetaScript.Source(), holdReleaseScript.Source()}

// ExtendSource is the plain lock's extend script's source as the Client
// loads it, for the chaos suite's controls d and f, which run earlier forms
// of the script in its place.
var ExtendSource = extendPlainScript.Source()
