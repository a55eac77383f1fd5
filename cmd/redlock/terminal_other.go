//go:build !linux

package main

import (
	"errors"
	"os"
	"syscall"
)

// terminal is unused outside Linux: the command runs in a background
// process group and the terminal stays with redlock.
type terminal struct{ fd int }

func foregroundTerminal(*os.File) *terminal { return nil }
func (*terminal) takeBack(int)              {}
func (*terminal) handTo(int)                {}

// setParentDeathSignal does nothing outside Linux: there is no parent-death
// signal, and a command whose redlock was SIGKILLed runs on without the
// lock, which expires within --ttl.
func setParentDeathSignal(*syscall.SysProcAttr) {}

func becomeSubreaper() {}

func groupAlive(pgid int) bool {
	return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}
