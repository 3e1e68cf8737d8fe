package stack

import "syscall"

// procAttr puts a program in its own process group, so a Ctrl-C in the terminal reaches only
// the launcher, which then stops the programs in order; and has the kernel kill it when the
// launcher dies without stopping it (kill -9, a crash, a panic), so no program outlives the
// launcher holding its ports. The kernel sends Pdeathsig when the *thread* that started the
// program ends, which is why programs are started from a thread that lives as long as they
// do (starter).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
