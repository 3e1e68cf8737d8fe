// Package config parses the settings every process shares from a getenv function, so that
// run() reads the environment once and tests pass their own.
package config

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"rentalplatform/libs/identity"
	"rentalplatform/libs/telemetry"
)

// Getenv looks up a variable; os.Getenv in production, a map in tests.
type Getenv func(string) string

// Base holds the settings every process shares: the four services and the gateway.
type Base struct {
	// HTTPAddr is the process's main listener: a service's (HTTP_ADDR), the gateway's public
	// one (GATEWAY_ADDR).
	HTTPAddr           string
	MongoURI           string
	MongoDatabase      string
	InternalAuthSecret []byte
	LogLevel           slog.Level
	ShutdownTimeout    time.Duration
	// MetricsAddr is the internal listener serving GET /metrics (METRICS_ADDR).
	MetricsAddr string
	// Profiles also serves the Go runtime's profiles on the metrics listener, under
	// /debug/pprof/ (PROFILES_ENABLED, false): for an engineer looking at where a process's
	// CPU or memory goes, on an internal address only.
	Profiles  bool
	Telemetry telemetry.Config
}

// Defaults are the per-process defaults of Base.
type Defaults struct {
	HTTPAddr      string
	MongoDatabase string
	// AddrVariable names the variable of HTTPAddr: HTTP_ADDR when empty (every service).
	AddrVariable string
	// MetricsBeside is the listener METRICS_ADDR defaults beside: HTTPAddr when empty. The
	// gateway's is its admin listener, so that its metrics are never on the public one.
	MetricsBeside string
}

// Reader parses variables and collects every problem, so a misconfigured process reports all
// of them at once instead of one per restart.
type Reader struct {
	getenv Getenv
	errs   []error
}

// NewReader reads through getenv.
func NewReader(getenv Getenv) *Reader { return &Reader{getenv: getenv} }

// Fail records a problem found by a check of the reader's user (a value that parsed but does
// not fit), so that Err reports it with the others.
func (r *Reader) Fail(err error) { r.errs = append(r.errs, err) }

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

// PositiveDuration is Duration for a setting that must be longer than 0 (a timeout, an
// interval, a lifetime): 0 is refused with the others' problems.
func (r *Reader) PositiveDuration(name string, def time.Duration) time.Duration {
	d := r.Duration(name, def)
	if d <= 0 {
		r.errs = append(r.errs, fmt.Errorf("%s must be longer than 0", name))
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

// Telemetry reads the standard OpenTelemetry variables that say what the process is and where
// its spans go (package telemetry lists the ones the SDK reads itself), and
// DEPLOYMENT_ENVIRONMENT. The service name is left empty unless OTEL_SERVICE_NAME sets it: the
// program fills in its own.
func (r *Reader) Telemetry() telemetry.Config {
	c := telemetry.Config{
		ServiceName: r.String("OTEL_SERVICE_NAME", ""),
		Environment: r.String("DEPLOYMENT_ENVIRONMENT", "local"),
		Sampler:     r.String("OTEL_TRACES_SAMPLER", ""),
		SamplerArg:  r.String("OTEL_TRACES_SAMPLER_ARG", ""),
	}
	var err error
	if c.ResourceAttributes, err = telemetry.ParseResourceAttributes(r.String("OTEL_RESOURCE_ATTRIBUTES", "")); err != nil {
		r.errs = append(r.errs, err)
	}
	if _, err := telemetry.NewSampler(c.Sampler, c.SamplerArg); err != nil {
		r.errs = append(r.errs, err)
	}
	switch exp := r.String("OTEL_TRACES_EXPORTER", "otlp"); exp {
	case "none":
		return c
	case "otlp":
	default:
		r.errs = append(r.errs, fmt.Errorf("OTEL_TRACES_EXPORTER: %q is not otlp or none", exp))
		return c
	}
	// Only OTLP over HTTP with protobuf is built in; a collector's gRPC port would not
	// understand it, so a request for anything else is refused rather than sent there anyway.
	for _, name := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		if p := r.String(name, "http/protobuf"); p != "http/protobuf" {
			r.errs = append(r.errs, fmt.Errorf("%s: %q is not supported; only http/protobuf (port 4318 of a collector)", name, p))
		}
	}
	// The signal's own variable is the URL as is; the shared one is a base the signal's path
	// is appended to, as the specification says.
	name, endpoint := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", r.String("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	if endpoint == "" {
		name, endpoint = "OTEL_EXPORTER_OTLP_ENDPOINT", r.String("OTEL_EXPORTER_OTLP_ENDPOINT", "")
		if endpoint != "" {
			endpoint = strings.TrimSuffix(endpoint, "/") + "/v1/traces"
		}
	}
	if endpoint == "" {
		return c
	}
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		r.errs = append(r.errs, fmt.Errorf("%s: %q is not an http:// or https:// URL", name, r.String(name, "")))
		return c
	}
	c.TracesEndpoint = endpoint
	return c
}

// MetricsAddr reads METRICS_ADDR, the internal listener of the Prometheus scrape endpoint. Its
// default is the address of listener (the service's own, or the gateway's admin listener:
// never a public one) with the port 1000 higher, so every program has one without
// configuration (127.0.0.1:9094 for webhooks-svc), and a listener on port 0 (tests, the local
// stack) gets a free port for metrics too.
func (r *Reader) MetricsAddr(listener string) string {
	if v := r.String("METRICS_ADDR", ""); v != "" {
		return v
	}
	host, port, err := net.SplitHostPort(listener)
	if err != nil {
		return "" // the listener's own variable reports the problem
	}
	n, err := strconv.Atoi(port)
	switch {
	case err != nil:
		r.errs = append(r.errs, fmt.Errorf("METRICS_ADDR: set it (no default from the port %q)", port))
		return ""
	case n == 0:
		return net.JoinHostPort(host, "0")
	case n+1000 > 65535:
		r.errs = append(r.errs, fmt.Errorf("METRICS_ADDR: set it (the default, port %d + 1000, is out of range)", n))
		return ""
	}
	return net.JoinHostPort(host, strconv.Itoa(n+1000))
}

// LoadBase reads the settings every process shares.
func LoadBase(getenv Getenv, d Defaults) (Base, error) {
	r := NewReader(getenv)
	b := Base{
		HTTPAddr:           r.String(cmp.Or(d.AddrVariable, "HTTP_ADDR"), d.HTTPAddr),
		MongoURI:           r.String("MONGODB_URI", "mongodb://127.0.0.1:27017"),
		MongoDatabase:      r.String("MONGODB_DATABASE", d.MongoDatabase),
		InternalAuthSecret: r.Secret("INTERNAL_AUTH_SECRET"),
		LogLevel:           r.LogLevel("LOG_LEVEL"),
		ShutdownTimeout:    r.Duration("SHUTDOWN_TIMEOUT", 10*time.Second),
		Profiles:           r.Bool("PROFILES_ENABLED", false),
		Telemetry:          r.Telemetry(),
	}
	b.MetricsAddr = r.MetricsAddr(cmp.Or(d.MetricsBeside, b.HTTPAddr))
	return b, r.Err()
}
