package stack

import (
	"maps"
	"testing"
)

// Each program is given the settings of the caller's environment that it documents, and
// nothing else: not another program's, not the stack's own, not a stray variable.
func TestProgramEnv(t *testing.T) {
	opts := Options{
		Environ: []string{
			"WEBHOOKS_RETRY_SCHEDULE=1s,1s",
			"WEBHOOKS_RETRY_SCHEDULE=ignored, as os.Getenv would",
			"OUTBOX_RELAY_INTERVAL=50ms",
			"EVENTS_RETENTION=1h",
			"PAYMENTS_X=1",
			"VERIFICATION_X=2",
			"COLLECTIONS_X=3",
			"GATEWAY_RATE_LIMIT_TEST=0",
			"UPSTREAM_TIMEOUT=5s",
			"BODY_LIMIT=2MiB",
			"BODY_LIMITS=not a setting",
			"ADMIN_X=4",
			"LOG_LEVEL=debug",
			"SHUTDOWN_TIMEOUT=3s",
			"OTEL_SERVICE_NAME=mine",
			"PATH=/bin",
			"HOME=/home/me",
			"AWS_SECRET_ACCESS_KEY=not a setting",
			// set by the stack: never taken from the caller
			"HTTP_ADDR=0.0.0.0:1",
			"MONGODB_URI=mongodb://elsewhere",
			"MONGODB_DATABASE=other",
			"REDIS_URL=redis://elsewhere",
			"INTERNAL_AUTH_SECRET=guessable",
			"GATEWAY_ADDR=0.0.0.0:2",
			"ADMIN_ADDR=0.0.0.0:3",
			"ADMIN_TOKEN=guessable",
			"WEBHOOKS_URL=http://elsewhere",
			"PAYMENTS_URL=http://elsewhere",
			"WEBHOOKS_ADDR=127.0.0.1:9094", // the launcher's, for HTTP_ADDR
			"VERIFICATION_ADDR=127.0.0.1:9091",
		},
		ProgramEnv: map[string]map[string]string{"webhooks-svc": {"WEBHOOKS_ALLOW_PRIVATE": "true"}},
	}
	shared := map[string]string{"MONGODB_URI": "mongodb://stack", "REDIS_URL": "redis://stack", "INTERNAL_AUTH_SECRET": "stack-secret"}
	every := map[string]string{
		"LOG_LEVEL": "debug", "SHUTDOWN_TIMEOUT": "3s", "OTEL_SERVICE_NAME": "mine", "PATH": "/bin", "HOME": "/home/me",
	}
	maps.Copy(every, shared)
	service := func(name, addr string, own map[string]string) map[string]string {
		env := map[string]string{"HTTP_ADDR": addr, "MONGODB_DATABASE": name}
		maps.Copy(env, every)
		maps.Copy(env, own)
		return env
	}
	want := map[string]map[string]string{
		"verification-svc": service("verification", "127.0.0.1:0", map[string]string{"VERIFICATION_X": "2", "OUTBOX_RELAY_INTERVAL": "50ms"}),
		"collections-svc":  service("collections", "127.0.0.1:0", map[string]string{"COLLECTIONS_X": "3", "OUTBOX_RELAY_INTERVAL": "50ms"}),
		"payments-svc":     service("payments", "127.0.0.1:0", map[string]string{"PAYMENTS_X": "1", "OUTBOX_RELAY_INTERVAL": "50ms"}),
		"webhooks-svc": service("webhooks", "127.0.0.1:0", map[string]string{
			"WEBHOOKS_RETRY_SCHEDULE": "1s,1s", "OUTBOX_RELAY_INTERVAL": "50ms", "EVENTS_RETENTION": "1h",
			"WEBHOOKS_ALLOW_PRIVATE": "true",
		}),
	}
	for _, svc := range services {
		own := map[string]string{"HTTP_ADDR": "127.0.0.1:0", "MONGODB_DATABASE": svc.Database}
		if got := programEnv(opts, svc.Name, svc.Settings, shared, own); !maps.Equal(got, want[svc.Name]) {
			t.Errorf("%s is given\n  %v\nwant\n  %v", svc.Name, got, want[svc.Name])
		}
	}

	gatewayOwn := map[string]string{"GATEWAY_ADDR": "127.0.0.1:8080", "ADMIN_ADDR": "127.0.0.1:8081", "ADMIN_TOKEN": "stack-token",
		"MONGODB_DATABASE": "gateway", "WEBHOOKS_URL": "http://127.0.0.1:8094", "PAYMENTS_URL": "http://127.0.0.1:8093"}
	wantGateway := map[string]string{"GATEWAY_RATE_LIMIT_TEST": "0", "UPSTREAM_TIMEOUT": "5s", "BODY_LIMIT": "2MiB", "ADMIN_X": "4"}
	maps.Copy(wantGateway, every)
	maps.Copy(wantGateway, gatewayOwn)
	if got := programEnv(opts, "gateway", gatewaySettings, shared, gatewayOwn); !maps.Equal(got, wantGateway) {
		t.Errorf("gateway is given\n  %v\nwant\n  %v", got, wantGateway)
	}
}

// Env (the tests' and the benchmark's settings) reaches every program and wins over Environ;
// ProgramEnv wins over everything.
func TestProgramEnvPrecedence(t *testing.T) {
	opts := Options{
		Environ:    []string{"LOG_LEVEL=debug", "WEBHOOKS_TIMEOUT=1s"},
		Env:        map[string]string{"LOG_LEVEL": "warn", "HTTP_ADDR": "127.0.0.1:0"},
		ProgramEnv: map[string]map[string]string{"webhooks-svc": {"WEBHOOKS_TIMEOUT": "2s", "HTTP_ADDR": "127.0.0.1:9"}},
	}
	got := programEnv(opts, "webhooks-svc", []string{"WEBHOOKS_"}, nil, map[string]string{"HTTP_ADDR": "127.0.0.1:8094"})
	want := map[string]string{"LOG_LEVEL": "warn", "WEBHOOKS_TIMEOUT": "2s", "HTTP_ADDR": "127.0.0.1:9"}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
