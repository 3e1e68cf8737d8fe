package main

import (
	"errors"
	"fmt"
	"time"

	"rentalplatform/libs/config"
	"rentalplatform/libs/service"

	"rentalplatform/verification-svc/internal/domain"
)

// spec names verification-svc and its defaults of the settings every service shares.
func spec() service.Spec {
	return service.Spec{Name: "verification-svc", HTTPAddr: "127.0.0.1:8091", MongoDatabase: "verification"}
}

// Config is everything verification-svc reads from the environment (docs/operations.md,
// "Environment variables"; TestConfigDocumented keeps the two in step).
type Config struct {
	config.Base
	service.QueueConfig
	// SessionTTL is a new session's lifetime.
	SessionTTL time.Duration
	// ExpirySweep is how often sessions whose expiry task was lost are looked for.
	ExpirySweep time.Duration
	// ExpiryConcurrency is how many expiry tasks run at once.
	ExpiryConcurrency int
	// WebhookAllowPrivate lifts the private-address guard on webhook_url (local receivers).
	WebhookAllowPrivate bool
}

func loadConfig(getenv config.Getenv) (Config, error) {
	base, baseErr := config.LoadBase(getenv, spec().Defaults())
	r := config.NewReader(getenv)
	cfg := Config{
		Base:                base,
		QueueConfig:         service.ReadQueueConfig(r),
		SessionTTL:          r.Duration("VERIFICATION_SESSION_TTL", domain.DefaultTTL),
		ExpirySweep:         r.PositiveDuration("VERIFICATION_EXPIRY_SWEEP_INTERVAL", 30*time.Second),
		ExpiryConcurrency:   r.Int("VERIFICATION_EXPIRY_CONCURRENCY", 20, 1, 1000),
		WebhookAllowPrivate: r.Bool("VERIFICATION_WEBHOOK_ALLOW_PRIVATE", false),
	}
	errs := []error{baseErr, r.Err()}
	// expires_at is shown in whole seconds, so a lifetime is too.
	if cfg.SessionTTL < time.Second {
		errs = append(errs, fmt.Errorf("VERIFICATION_SESSION_TTL must be at least 1s"))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}
