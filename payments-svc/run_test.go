package main

import (
	"testing"

	"rentalplatform/libs/servicetest"
)

// TestComponent runs what every service must do through run(): boot, health, identity, errors,
// configuration.
func TestComponent(t *testing.T) { servicetest.Component(t, run, nil) }
