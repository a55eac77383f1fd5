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

// CleanupSource is the cleanup script's source as the Client loads it (the
// handOn fragment, then cleanup.lua).
var CleanupSource = luaSource("handon.lua", "cleanup.lua")

// AcquireSource is the acquire script's source as the Client loads it.
var AcquireSource = luaSource("acquire.lua")

// HoldReleaseSource is the re-entrant form's release and cleanup script
// as the Client loads it.
var HoldReleaseSource = luaSource("handon.lua", "hold_release.lua")

// ExtendSource is the extend script's source as the Client loads it, for
// the chaos suite's control d, which runs the script's earlier,
// unconditional form in its place.
var ExtendSource = luaSource("extend.lua")
