package main

import (
	"testing"

	"rentalplatform/libs/config/configtest"
)

// Every variable payments-svc reads is in docs/operations.md's table, and every row naming it is read.
// Nothing set: loadConfig refuses, having read every variable.
func TestConfigDocumented(t *testing.T) {
	configtest.CheckLoad(t, "payments-svc", nil, func(getenv func(string) string) { _, _ = loadConfig(getenv) })
}
