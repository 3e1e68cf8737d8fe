package service

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// Background loops end, and shutdown waits for them, before the connections registered
// earlier close: a loop never runs against a closed store or queue.
func TestGoStopsBeforeEarlierClosers(t *testing.T) {
	rt := &Process{Name: "test"}
	rt.cfg.ShutdownTimeout = time.Second
	var mu sync.Mutex
	var order []string
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	rt.OnClose(func(context.Context) error { note("connection closed"); return nil })
	started := make(chan struct{}, 2)
	for _, name := range []string{"relay", "sweep"} {
		rt.Go(func(ctx context.Context) {
			started <- struct{}{}
			<-ctx.Done()
			time.Sleep(10 * time.Millisecond) // a loop finishing its last run
			note(name + " stopped")
		})
	}
	<-started
	<-started
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if len(order) != 3 || order[2] != "connection closed" || !slices.Contains(order[:2], "relay stopped") || !slices.Contains(order[:2], "sweep stopped") {
		t.Fatalf("shutdown order %v", order)
	}
}
