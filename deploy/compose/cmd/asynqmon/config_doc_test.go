package main

import (
	"context"
	"io"
	"testing"

	"rentalplatform/libs/config/configtest"
)

// Every variable asynqmon reads is in docs/operations.md's table, and every row naming it is
// read. A REDIS_URL that is no URL stops run() after its settings are read, before it listens.
func TestConfigDocumented(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	env := map[string]string{"ASYNQMON_ADDR": "127.0.0.1:0", "REDIS_URL": "no-url"}
	configtest.CheckLoad(t, "asynqmon", env, func(getenv func(string) string) {
		if err := run(ctx, getenv, io.Discard, nil); err == nil {
			t.Error("run accepted a REDIS_URL that is no URL")
		}
	})
}
