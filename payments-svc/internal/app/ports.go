package app

import (
	"context"
	"time"

	"rentalplatform/payments-svc/internal/domain"
)

// Charge is one charge of one method for one attempt of a request.
type Charge struct {
	// IdempotencyKey is "<request>:<attempt>:<method>": charging it again returns the first
	// charge's outcome and never charges twice.
	IdempotencyKey string
	Request        string
	Attempt        int
	Method         string
	Type           domain.MethodType
	Token          string
	Amount         int64
	Currency       string
}

// ChargeResult is the processor's answer to a charge.
type ChargeResult struct {
	Succeeded bool
	// FailureCode is the processor's decline code ("insufficient_funds", "declined").
	FailureCode string
	// Hard: the method itself is refused (a hard decline); later attempts skip it.
	Hard bool
}

// Processor charges payment methods: the simulator in test mode, a real processor's adapter
// in live mode.
type Processor interface {
	// CheckToken returns an error message when the processor cannot charge token as a method
	// of type t ("" when it can).
	CheckToken(t domain.MethodType, token string) string
	// Charge charges once per idempotency key. An error means the outcome is unknown (the
	// processor did not answer); the same charge is made again later with the same key.
	Charge(ctx context.Context, c Charge) (ChargeResult, error)
}

// Scheduler runs collection attempts at their time: the task of attempt n of a request is
// scheduled at most once at a time.
type Scheduler interface {
	// Schedule queues attempt n of the request to run at at (at once when at has passed) and
	// reports whether it did: scheduling an attempt that is queued (or running) already changes
	// nothing and reports false.
	Schedule(ctx context.Context, request string, n int, at time.Time) (bool, error)
	// RunNow makes the queued attempt run now, queueing it when it is missing.
	RunNow(ctx context.Context, request string, n int) error
	// Unschedule removes the queued attempt, if any.
	Unschedule(ctx context.Context, request string, n int) error
	// Lost reports whether the queue lost its data (a flush or a restart without persistence)
	// since the last call, and on the first call whether it holds nothing of this service:
	// then every open request's attempt is scheduled again.
	Lost(ctx context.Context) (bool, error)
}

// Outcomes counts what collection attempts came to, for the platform's metrics.
type Outcomes interface {
	// AttemptRecorded is told the outcome of each attempt whose result was recorded (not of a
	// run that found its attempt done or taken over elsewhere).
	AttemptRecorded(ctx context.Context, o domain.Outcome)
}

// noOutcomes counts nothing: the use cases without metrics (tests).
type noOutcomes struct{}

func (noOutcomes) AttemptRecorded(context.Context, domain.Outcome) {}
