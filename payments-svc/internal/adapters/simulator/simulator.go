// Package simulator is the test-mode payment processor: a charge's outcome is decided by the
// payment method's test token, and every charge is kept in a ledger (the "simulated_charges"
// collection) keyed by its idempotency key, so a charge made again with the same key is
// answered with the first outcome and never charged twice, also after a restart, as a real
// processor would.
package simulator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"rentalplatform/libs/docstore"

	"rentalplatform/payments-svc/internal/app"
	"rentalplatform/payments-svc/internal/domain"
)

// The test tokens and what they do.
const (
	TokenSuccess             = "tok_test_success"
	TokenInsufficientFunds   = "tok_test_insufficient_funds"
	TokenDeclined            = "tok_test_declined"
	TokenSucceedFromAttempt2 = "tok_test_succeed_from_attempt_2"
	TokenSucceedFromAttempt3 = "tok_test_succeed_from_attempt_3"
)

// Tokens lists the test tokens.
var Tokens = []string{TokenSuccess, TokenInsufficientFunds, TokenDeclined, TokenSucceedFromAttempt2, TokenSucceedFromAttempt3}

// Decline codes.
const (
	CodeInsufficientFunds = "insufficient_funds" // soft: the method is charged again at the next attempt
	CodeDeclined          = "declined"           // hard: the method fails for good
)

// Collection is the ledger's collection.
const Collection = "simulated_charges"

// Simulator implements app.Processor.
type Simulator struct {
	ledger *docstore.Collection[charge]
	now    func() time.Time
}

var _ app.Processor = (*Simulator)(nil)

// New returns a simulator keeping its ledger in db.
func New(db *docstore.DB, now func() time.Time) *Simulator {
	if now == nil {
		now = time.Now
	}
	return &Simulator{ledger: docstore.NewCollection[charge](db, Collection, docstore.Options{
		// The charges of one request (Charged): tests and drills count them.
		Indexes: []mongo.IndexModel{docstore.Index("request", "request")},
	}), now: now}
}

// EnsureIndexes creates the ledger's index.
func (s *Simulator) EnsureIndexes(ctx context.Context) error { return s.ledger.EnsureIndexes(ctx) }

// charge is one ledger entry; its _id is the idempotency key.
type charge struct {
	docstore.Meta `bson:",inline"`
	Request       string    `bson:"request"`
	Attempt       int       `bson:"attempt"`
	Method        string    `bson:"method"`
	Token         string    `bson:"token"`
	Amount        int64     `bson:"amount"`
	Currency      string    `bson:"currency"`
	Succeeded     bool      `bson:"succeeded"`
	FailureCode   string    `bson:"failure_code,omitempty"`
	Hard          bool      `bson:"hard,omitempty"`
	Created       time.Time `bson:"created"`
}

// CheckToken implements app.Processor: only the test tokens are accepted, for every method type.
func (s *Simulator) CheckToken(_ domain.MethodType, token string) string {
	if slices.Contains(Tokens, token) {
		return ""
	}
	return fmt.Sprintf("test mode accepts only the test tokens (%s), got '%s'.", strings.Join(Tokens, ", "), token)
}

// outcome is what a token does at an attempt.
func outcome(token string, attempt int) app.ChargeResult {
	switch {
	case token == TokenSuccess,
		token == TokenSucceedFromAttempt2 && attempt >= 2,
		token == TokenSucceedFromAttempt3 && attempt >= 3:
		return app.ChargeResult{Succeeded: true}
	case token == TokenDeclined:
		return app.ChargeResult{FailureCode: CodeDeclined, Hard: true}
	default:
		return app.ChargeResult{FailureCode: CodeInsufficientFunds}
	}
}

// Charge implements app.Processor. The outcome is decided by the token and the attempt number
// the charge carries (as a real processor would carry it in the charge's metadata).
func (s *Simulator) Charge(ctx context.Context, c app.Charge) (app.ChargeResult, error) {
	res := outcome(c.Token, c.Attempt)
	entry := charge{
		Request: c.Request, Attempt: c.Attempt, Method: c.Method, Token: c.Token, Amount: c.Amount, Currency: c.Currency,
		Succeeded: res.Succeeded, FailureCode: res.FailureCode, Hard: res.Hard, Created: s.now().UTC(),
	}
	entry.ID = c.IdempotencyKey
	created, err := s.ledger.Insert(ctx, entry)
	if err != nil {
		return app.ChargeResult{}, fmt.Errorf("simulated charge %s: %w", c.IdempotencyKey, err)
	}
	if created {
		return res, nil
	}
	// Charged before under this key: the first outcome is the answer.
	first, err := s.ledger.Get(ctx, c.IdempotencyKey)
	if err != nil {
		return app.ChargeResult{}, fmt.Errorf("simulated charge %s: %w", c.IdempotencyKey, err)
	}
	return app.ChargeResult{Succeeded: first.Succeeded, FailureCode: first.FailureCode, Hard: first.Hard}, nil
}

// Charged returns how many charges the ledger holds for a request (tests).
func (s *Simulator) Charged(ctx context.Context, request string) (int, error) {
	docs, err := s.ledger.Find(ctx, bson.D{{Key: "request", Value: request}})
	return len(docs), err
}
