package main

import (
	"io"
	"testing"

	"rentalplatform/libs/config/configtest"
)

// Every variable ferretdb reads is in docs/operations.md's table, and every row naming it is
// read. An unexpected argument stops run() after its settings are read, before it starts.
func TestConfigDocumented(t *testing.T) {
	configtest.CheckLoad(t, "ferretdb", nil, func(getenv func(string) string) {
		if err := run(t.Context(), []string{"unexpected"}, getenv, io.Discard); err == nil {
			t.Error("run accepted an argument")
		}
	})
}
