package main

import (
	"context"
	"io"
	"testing"

	"rentalplatform/libs/config/configtest"
)

// Every variable collections-svc reads is in docs/operations.md's table, and every row naming
// it is read. Through run(), which reads the configuration first and stops at its refusal
// (nothing is set), so the check follows whatever run() reads.
func TestConfigDocumented(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	configtest.CheckLoad(t, "collections-svc", nil, func(getenv func(string) string) {
		if err := run(ctx, getenv, io.Discard); err == nil {
			t.Error("run started without INTERNAL_AUTH_SECRET")
		}
	})
}
