package main

import (
	"testing"

	"rentalplatform/libs/config/configtest"
)

// Every variable devkey reads is in docs/operations.md's table, and every row naming it is read.
// Nothing set: load refuses, having read every variable.
func TestConfigDocumented(t *testing.T) {
	configtest.CheckLoad(t, "devkey", nil, func(getenv func(string) string) { _, _ = load(getenv) })
}
