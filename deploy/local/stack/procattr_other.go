//go:build !linux

package stack

import "syscall"

// procAttr puts a program in its own process group (see procattr_linux.go). Only Linux can
// have the kernel kill it with the launcher; elsewhere a launcher killed with kill -9 leaves
// its programs running, and the next start names what holds the ports (checkAddrs).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
