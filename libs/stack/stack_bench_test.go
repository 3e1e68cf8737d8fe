package stack

import (
	"sync"
	"testing"
)

// deep calls itself n times with a frame of about 256 bytes each, as a task's work does.
//
//go:noinline
func deep(n int) byte {
	var pad [256]byte
	pad[n%len(pad)] = byte(n)
	if n == 0 {
		return pad[0]
	}
	return deep(n-1) + pad[n%len(pad)]
}

// A new goroutine doing work 60 frames (about 15 KiB) deep, with and without Grow first: what
// the stack's doublings cost such a goroutine.
func BenchmarkNewGoroutine(b *testing.B) {
	for _, tc := range []struct {
		name string
		grow bool
	}{{"doubling", false}, {"grown", true}} {
		b.Run(tc.name, func(b *testing.B) {
			var wg sync.WaitGroup
			for b.Loop() {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if tc.grow {
						Grow()
					}
					deep(60)
				}()
				wg.Wait()
			}
		})
	}
}
