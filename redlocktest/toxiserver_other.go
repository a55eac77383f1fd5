//go:build !linux

package redlocktest

import "syscall"

// serverProcAttr is empty where the kernel cannot kill a child with its
// parent: a test process that dies without closing its Net leaves its
// toxiproxy-server running.
func serverProcAttr() *syscall.SysProcAttr { return nil }
