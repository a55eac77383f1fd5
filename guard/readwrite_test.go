package guard_test

import (
	"testing"

	"github.com/redlock-go/redlock/guard"
)

// TestReadWriteAcceptsRead: a read is valid above the last write's fence
// only; readers' fences among themselves do not matter.
func TestReadWriteAcceptsRead(t *testing.T) {
	for _, tc := range []struct {
		lastWrite, fence uint64
		want             bool
	}{
		{0, 1, true},  // no write yet
		{5, 6, true},  // a reader after the write of fence 5
		{5, 9, true},  // another reader, later
		{5, 5, false}, // the writer's own fence: not a reader after it
		{5, 3, false}, // a reader from before the write: stale
		{0, 0, false}, // no fencing
	} {
		if got := guard.AcceptsRead(tc.lastWrite, tc.fence); got != tc.want {
			t.Errorf("AcceptsRead(%d, %d) = %v; want %v", tc.lastWrite, tc.fence, got, tc.want)
		}
	}
}
