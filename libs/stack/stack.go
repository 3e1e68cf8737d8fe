// Package stack grows a new goroutine's stack to the size a request's work needs, in one step.
//
// A goroutine starts with a small stack, and the runtime doubles it each time a call runs out:
// it copies the whole stack and walks every frame on it to adjust the pointers into it, so the
// deeper the calls when it runs out, the more a doubling costs. The platform starts a goroutine
// for each queue task (asynq runs every handler in one of its own), for each event of a batch,
// and for each store write held on a document; their work (a MongoDB command, JSON, BSON, a
// Redis script, spans) runs 40 to 60 frames deep. CPU profiles of payments-svc and webhooks-svc
// under the payments bench put 9 % and 13 % of their CPU in those doublings
// (runtime.copystack), nearly all of it in such goroutines; with Grow called first thing in
// them, 2 % and 5 % (the rest: that one growth, and the goroutine asynq starts for itself to
// mark each task done). Grow makes the one growth needed while the stack holds a frame or two.
package stack

// frameBytes is the stack frame of grow. The runtime grows a stack at least enough for the frame
// that ran out (newstack), so calling grow from a shallow stack gives the goroutine a stack of
// 32 KiB in one copy of a few frames, which the work above fits in (the profiles' doublings).
const frameBytes = 16 << 10

// Grow grows the calling goroutine's stack, if it is smaller, to fit the work of one task or
// request without further copies. Call it first in a goroutine started for such work; it costs
// the clearing of frameBytes when the stack is already large enough.
func Grow() { grow() }

//go:noinline
func grow() {
	var frame [frameBytes]byte
	keep(frame[:])
}

// keep uses the frame, so the compiler keeps it on the stack at its full size.
//
//go:noinline
func keep(b []byte) { b[0] = 1 }
