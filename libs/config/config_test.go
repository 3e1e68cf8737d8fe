package config

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) Getenv { return func(k string) string { return m[k] } }

func TestLoadBaseDefaults(t *testing.T) {
	b, err := LoadBase(env(map[string]string{"INTERNAL_AUTH_SECRET": strings.Repeat("x", 32)}),
		Defaults{HTTPAddr: "127.0.0.1:8094", MongoDatabase: "webhooks"})
	if err != nil {
		t.Fatal(err)
	}
	if b.HTTPAddr != "127.0.0.1:8094" || b.MongoDatabase != "webhooks" || b.MongoURI != "mongodb://127.0.0.1:27017" ||
		b.LogLevel != slog.LevelInfo || b.ShutdownTimeout != 10*time.Second || b.OTelExport {
		t.Fatalf("defaults: %+v", b)
	}
}

func TestLoadBaseReportsEveryProblem(t *testing.T) {
	_, err := LoadBase(env(map[string]string{"LOG_LEVEL": "loud", "SHUTDOWN_TIMEOUT": "soon"}), Defaults{})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"INTERNAL_AUTH_SECRET is required", "LOG_LEVEL", "SHUTDOWN_TIMEOUT"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestReader(t *testing.T) {
	r := NewReader(env(map[string]string{"A": "32MiB", "B": "512KiB", "C": "100", "D": "x", "E": "7", "F": "true", "S": "short"}))
	if got := r.Bytes("A", 0); got != 32<<20 {
		t.Errorf("A = %d", got)
	}
	if got := r.Bytes("B", 0); got != 512<<10 {
		t.Errorf("B = %d", got)
	}
	if got := r.Bytes("C", 0); got != 100 {
		t.Errorf("C = %d", got)
	}
	if got := r.Int("E", 0, 0, 10); got != 7 {
		t.Errorf("E = %d", got)
	}
	if !r.Bool("F", false) {
		t.Error("F")
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	r.Bytes("D", 1)
	r.Int("E", 0, 8, 10)
	r.Secret("S")
	if err := r.Err(); err == nil || strings.Count(err.Error(), "\n") != 2 {
		t.Fatalf("want three errors, got %v", err)
	}
}
