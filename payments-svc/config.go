package main

import (
	"errors"
	"fmt"
	"time"

	"rentalplatform/libs/config"
	"rentalplatform/libs/service"
)

// spec names payments-svc and its defaults of the settings every service shares.
func spec() service.Spec {
	return service.Spec{Name: "payments-svc", HTTPAddr: "127.0.0.1:8093", MongoDatabase: "payments"}
}

// Config is everything payments-svc reads from the environment (docs/operations.md,
// "Environment variables"; TestConfigDocumented keeps the two in step).
type Config struct {
	config.Base
	service.QueueConfig
	// Concurrency is how many queued attempts run at once.
	Concurrency int
	// InlineConcurrency is how many first attempts the process runs at once itself, handed by
	// the creates, and InlineBacklog how many wait for them; beyond it, or with 0 runners,
	// first attempts are queued (app.Config.InlineConcurrency).
	InlineConcurrency, InlineBacklog int
	// AttemptTimeout bounds one run of an attempt (every method charged); its claim on the
	// request is taken for abandoned 30 s after that.
	AttemptTimeout time.Duration
	// CancelWait is how long a cancel waits for an attempt that is charging the request.
	CancelWait time.Duration
	// AdvanceWait is how long the test helper waits for the attempt it runs.
	AdvanceWait time.Duration
	// ReconcileInterval is how often the reconciler looks for attempts whose task was lost;
	// an attempt that late is queued again.
	ReconcileInterval time.Duration
	// SimulatorDatabase holds the test-mode processor's ledger: the simulator stands where an
	// external processor would, so its records are not in the service's own database (and on
	// the embedded store its writes do not queue behind the service's).
	SimulatorDatabase string
}

// claimTTL is how long after an attempt claimed a request its claim is taken for abandoned.
func (c Config) claimTTL() time.Duration { return c.AttemptTimeout + 30*time.Second }

func loadConfig(getenv config.Getenv) (Config, error) {
	base, baseErr := config.LoadBase(getenv, spec().Defaults())
	r := config.NewReader(getenv)
	cfg := Config{
		Base:              base,
		QueueConfig:       service.ReadQueueConfig(r),
		Concurrency:       r.Int("PAYMENTS_CONCURRENCY", 50, 1, 10000),
		InlineConcurrency: r.Int("PAYMENTS_INLINE_CONCURRENCY", 50, 0, 10000),
		InlineBacklog:     r.Int("PAYMENTS_INLINE_BACKLOG", 1000, 0, 100000),
		AttemptTimeout:    r.PositiveDuration("PAYMENTS_ATTEMPT_TIMEOUT", time.Minute),
		CancelWait:        r.Duration("PAYMENTS_CANCEL_WAIT", 10*time.Second),
		AdvanceWait:       r.Duration("PAYMENTS_ADVANCE_WAIT", 10*time.Second),
		ReconcileInterval: r.PositiveDuration("PAYMENTS_RECONCILE_INTERVAL", 30*time.Second),
		SimulatorDatabase: r.String("PAYMENTS_SIMULATOR_DATABASE", base.MongoDatabase+"_simulator"),
	}
	errs := []error{baseErr, r.Err()}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}
