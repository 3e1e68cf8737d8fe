package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"rentalplatform/libs/config"
	"rentalplatform/libs/service"

	"rentalplatform/webhooks-svc/internal/domain"
)

// spec names webhooks-svc and its defaults of the settings every service shares.
func spec() service.Spec {
	return service.Spec{Name: "webhooks-svc", HTTPAddr: "127.0.0.1:8094", MongoDatabase: "webhooks"}
}

// Config is everything webhooks-svc reads from the environment (docs/operations.md,
// "Environment variables"; TestConfigDocumented keeps the two in step).
type Config struct {
	config.Base
	service.QueueConfig
	RetrySchedule     domain.Schedule
	Timeout           time.Duration
	AutoDisableAfter  time.Duration
	AllowPrivate      bool
	TLSInsecure       bool
	EventsRetention   time.Duration
	Concurrency       int
	EndpointCacheTTL  time.Duration
	InlineWait        time.Duration
	InlineConcurrency int
	StreamHeartbeat   time.Duration
	StreamMaxDuration time.Duration
	StreamRetention   time.Duration
	StreamMaxEvents   int
	// PortalBaseURL is where webhook portal links point ("" derives it from the address the
	// client used, as the gateway forwards it).
	PortalBaseURL string
}

func loadConfig(getenv config.Getenv) (Config, error) {
	base, baseErr := config.LoadBase(getenv, spec().Defaults())
	r := config.NewReader(getenv)
	cfg := Config{
		Base:              base,
		QueueConfig:       service.ReadQueueConfig(r),
		Timeout:           r.PositiveDuration("WEBHOOKS_TIMEOUT", 15*time.Second),
		AutoDisableAfter:  r.PositiveDuration("WEBHOOKS_AUTO_DISABLE_AFTER", 120*time.Hour),
		AllowPrivate:      r.Bool("WEBHOOKS_ALLOW_PRIVATE", false),
		TLSInsecure:       r.Bool("WEBHOOKS_TLS_INSECURE", false),
		EventsRetention:   r.PositiveDuration("EVENTS_RETENTION", 720*time.Hour),
		Concurrency:       r.Int("WEBHOOKS_CONCURRENCY", 50, 1, 10000),
		EndpointCacheTTL:  r.PositiveDuration("WEBHOOKS_ENDPOINT_CACHE_TTL", time.Second),
		InlineWait:        r.Duration("WEBHOOKS_INLINE_WAIT", 200*time.Millisecond),
		InlineConcurrency: r.Int("WEBHOOKS_INLINE_CONCURRENCY", 200, 1, 10000),
		StreamHeartbeat:   r.PositiveDuration("WEBHOOKS_STREAM_HEARTBEAT", 10*time.Second),
		StreamMaxDuration: r.PositiveDuration("WEBHOOKS_STREAM_MAX_DURATION", 50*time.Second),
		StreamRetention:   r.PositiveDuration("WEBHOOKS_STREAM_RETENTION", time.Hour),
		StreamMaxEvents:   r.Int("WEBHOOKS_STREAM_MAX_EVENTS", 10000, 100, 1000000),
		PortalBaseURL:     strings.TrimRight(r.String("WEBHOOKS_PORTAL_BASE_URL", ""), "/"),
	}
	errs := []error{baseErr, r.Err()}
	var err error
	if cfg.RetrySchedule, err = domain.ParseSchedule(r.String("WEBHOOKS_RETRY_SCHEDULE", domain.DefaultSchedule)); err != nil {
		errs = append(errs, fmt.Errorf("WEBHOOKS_RETRY_SCHEDULE: %w", err))
	}
	if cfg.InlineWait < 0 || cfg.InlineWait >= cfg.Timeout {
		errs = append(errs, fmt.Errorf("WEBHOOKS_INLINE_WAIT must be between 0 (off) and WEBHOOKS_TIMEOUT"))
	}
	// Every listener on the path (this service's, the gateway's) bounds writing one response
	// to 60 s: a stream ends before that.
	if cfg.StreamMaxDuration >= 55*time.Second {
		errs = append(errs, fmt.Errorf("WEBHOOKS_STREAM_MAX_DURATION must be under 55s (the listeners' 60 s write timeout)"))
	}
	if cfg.StreamHeartbeat >= cfg.StreamMaxDuration {
		errs = append(errs, fmt.Errorf("WEBHOOKS_STREAM_HEARTBEAT must be shorter than WEBHOOKS_STREAM_MAX_DURATION"))
	}
	if err := checkBaseURL(cfg.PortalBaseURL); err != nil {
		errs = append(errs, fmt.Errorf("WEBHOOKS_PORTAL_BASE_URL: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}

// checkBaseURL accepts "" or an absolute http(s) URL with a host and nothing after its path:
// the public origin (and path prefix, if any) the portal's links start with.
func checkBaseURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "#") {
		return fmt.Errorf("must be an http or https URL with a host and no query (e.g. https://api.example.com), got %q", s)
	}
	return nil
}
