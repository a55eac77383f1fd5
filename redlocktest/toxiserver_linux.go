package redlocktest

import "syscall"

// serverProcAttr makes the kernel kill the toxiproxy-server when the test
// process dies without closing its Net. (Linux sends the signal when the
// thread that started the server ends; Go ends a thread only when a
// goroutine locked to it by runtime.LockOSThread returns still locked.)
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
