// Package config parses the settings every process shares from a getenv function, so that
// run() reads the environment once and tests pass their own.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"rentalplatform/libs/identity"
)

// Getenv looks up a variable; os.Getenv in production, a map in tests.
type Getenv func(string) string

// Base holds the settings of every service.
type Base struct {
	HTTPAddr           string
	MongoURI           string
	MongoDatabase      string
	InternalAuthSecret []byte
	LogLevel           slog.Level
	ShutdownTimeout    time.Duration
	OTelExport         bool
}

// Defaults are the per-service defaults of Base.
type Defaults struct {
	HTTPAddr      string
	MongoDatabase string
}

// Reader parses variables and collects every problem, so a misconfigured process reports all
// of them at once instead of one per restart.
type Reader struct {
	getenv Getenv
	errs   []error
}

// NewReader reads through getenv.
func NewReader(getenv Getenv) *Reader { return &Reader{getenv: getenv} }

// Err returns every problem found so far, or nil.
func (r *Reader) Err() error { return errors.Join(r.errs...) }

// String returns the variable, or def when unset or empty.
func (r *Reader) String(name, def string) string {
	if v := strings.TrimSpace(r.getenv(name)); v != "" {
		return v
	}
	return def
}

// Required returns the variable, recording an error when it is unset.
func (r *Reader) Required(name string) string {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		r.errs = append(r.errs, fmt.Errorf("%s is required", name))
	}
	return v
}

// Duration parses a Go duration such as "30s".
func (r *Reader) Duration(name string, def time.Duration) time.Duration {
	v := r.String(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		r.errs = append(r.errs, fmt.Errorf("%s: %q is not a duration like 30s or 1m", name, v))
		return def
	}
	return d
}

// Bool parses true/false (and 1/0).
func (r *Reader) Bool(name string, def bool) bool {
	v := r.String(name, "")
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: %q is not true or false", name, v))
		return def
	}
	return b
}

// Int parses a whole number within [min, max].
func (r *Reader) Int(name string, def, min, max int) int {
	v := r.String(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		r.errs = append(r.errs, fmt.Errorf("%s: %q is not a whole number from %d to %d", name, v, min, max))
		return def
	}
	return n
}

// Bytes parses a size such as 1048576, 512KiB or 32MiB.
func (r *Reader) Bytes(name string, def int) int {
	v := r.String(name, "")
	if v == "" {
		return def
	}
	mult := 1
	num := v
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if strings.HasSuffix(v, u.suffix) {
			num, mult = strings.TrimSuffix(v, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || n <= 0 {
		r.errs = append(r.errs, fmt.Errorf("%s: %q is not a size like 1048576 or 32MiB", name, v))
		return def
	}
	return n * mult
}

// LogLevel parses debug, info, warn or error.
func (r *Reader) LogLevel(name string) slog.Level {
	var l slog.Level
	v := r.String(name, "info")
	if err := l.UnmarshalText([]byte(v)); err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: %q is not debug, info, warn or error", name, v))
		return slog.LevelInfo
	}
	return l
}

// Secret reads the gateway-to-service identity secret.
func (r *Reader) Secret(name string) []byte {
	v := r.Required(name)
	if v != "" && len(v) < identity.MinSecretLen {
		r.errs = append(r.errs, fmt.Errorf("%s must be at least %d characters", name, identity.MinSecretLen))
	}
	return []byte(v)
}

// OTelExport reports whether an OTLP endpoint is configured (the SDK reads the rest).
func (r *Reader) OTelExport() bool {
	return r.String("OTEL_EXPORTER_OTLP_ENDPOINT", "") != "" || r.String("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "") != ""
}

// LoadBase reads the settings every service shares.
func LoadBase(getenv Getenv, d Defaults) (Base, error) {
	r := NewReader(getenv)
	b := Base{
		HTTPAddr:           r.String("HTTP_ADDR", d.HTTPAddr),
		MongoURI:           r.String("MONGODB_URI", "mongodb://127.0.0.1:27017"),
		MongoDatabase:      r.String("MONGODB_DATABASE", d.MongoDatabase),
		InternalAuthSecret: r.Secret("INTERNAL_AUTH_SECRET"),
		LogLevel:           r.LogLevel("LOG_LEVEL"),
		ShutdownTimeout:    r.Duration("SHUTDOWN_TIMEOUT", 10*time.Second),
		OTelExport:         r.OTelExport(),
	}
	return b, r.Err()
}

// Logger returns the JSON logger every process writes to stdout.
func Logger(w interface{ Write([]byte) (int, error) }, service string, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})).With("service", service)
}
