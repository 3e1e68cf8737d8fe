package main

import (
	"io"
	"maps"
	"slices"
	"testing"

	"rentalplatform/libs/config/configtest"
)

// The launcher reads its own settings, hands its whole environment to the stack (which gives
// each program what it documents) and relaxes the delivery safeguards unless told otherwise.
func TestOptions(t *testing.T) {
	dir := t.TempDir()
	environ := []string{"DATA_DIR=" + dir, "ADMIN_TOKEN=admin_given_token", "GATEWAY_ADDR=127.0.0.1:9080",
		"WEBHOOKS_RETRY_SCHEDULE=1s,1s", "WEBHOOKS_TLS_INSECURE=false", "PAYMENTS_ADDR=127.0.0.1:9093"}
	opts, err := options(lookup(environ), environ, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if opts.DataDir != dir || opts.AdminToken != "admin_given_token" || opts.GatewayAddr != "127.0.0.1:9080" || opts.AdminAddr != "127.0.0.1:8081" {
		t.Errorf("launcher settings: %+v", opts)
	}
	// Services take free ports unless their address is set.
	if !maps.Equal(opts.ServiceAddrs, map[string]string{"payments-svc": "127.0.0.1:9093"}) {
		t.Errorf("ServiceAddrs = %v; want payments-svc's alone", opts.ServiceAddrs)
	}
	if !slices.Equal(opts.Environ, environ) {
		t.Errorf("Environ = %v; want the launcher's environment", opts.Environ)
	}
	dev := opts.ProgramEnv["webhooks-svc"]
	if dev["WEBHOOKS_ALLOW_PRIVATE"] != "true" || dev["WEBHOOKS_TLS_INSECURE"] != "false" {
		t.Errorf("webhooks-svc's dev defaults = %v; want ALLOW_PRIVATE true (unset), TLS_INSECURE false (as set)", dev)
	}
	if v := opts.ProgramEnv["verification-svc"]; v["VERIFICATION_WEBHOOK_ALLOW_PRIVATE"] != "true" {
		t.Errorf("verification-svc's dev defaults = %v; want WEBHOOK_ALLOW_PRIVATE true (unset)", v)
	}
}

// The launcher's own settings are the rows of docs/operations.md's table that name `make run`.
func TestOptionsDocumented(t *testing.T) {
	env := map[string]string{"DATA_DIR": t.TempDir(), "ADMIN_TOKEN": "admin_given_token"}
	configtest.CheckLoad(t, "make run", env, func(getenv func(string) string) {
		if _, err := options(getenv, nil, io.Discard); err != nil {
			t.Error(err)
		}
	})
}
