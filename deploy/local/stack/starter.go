package stack

import (
	"os/exec"
	"runtime"
)

// starter starts the stack's programs, all from one goroutine locked to its OS thread.
//
// Programs are started with Pdeathsig (procattr_linux.go), which Linux sends when the program's
// parent *thread* ends, not its process. The Go runtime ends a thread when a goroutine locked
// to it (runtime.LockOSThread, which libraries call too) returns without unlocking; a program
// started from any goroutine may have been forked by such a thread and would then be killed
// while the launcher runs on (golang/go#27505). The starter's goroutine locks its thread and
// never unlocks it, so that thread lives until the starter is closed, which Stop does only
// after every program has exited: then a thread ending has no program left to kill.
type starter struct {
	reqs chan startReq
}

type startReq struct {
	cmd  *exec.Cmd
	done chan error
}

func newStarter() *starter {
	st := &starter{reqs: make(chan startReq)}
	go st.loop()
	return st
}

func (st *starter) loop() {
	runtime.LockOSThread() // never unlocked: see the type's comment
	for r := range st.reqs {
		r.done <- r.cmd.Start()
	}
}

// start starts cmd from the starter's thread.
func (st *starter) start(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	st.reqs <- startReq{cmd: cmd, done: done}
	return <-done
}

// close ends the starter, and its thread with it. Only once no program it started runs.
func (st *starter) close() { close(st.reqs) }
