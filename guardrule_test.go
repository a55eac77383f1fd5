package redlock

import "github.com/redlock-go/redlock/guard"

// The model's guard rule is compared with the one of package guard
// (TestModelGuardMatchesGuard).
var (
	OwnerID      = guard.OwnerID
	fenceAccepts = guard.Accepts
)
