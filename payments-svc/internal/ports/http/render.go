package http

import (
	"time"

	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtype"
	"rentalplatform/libs/ids"

	"rentalplatform/payments-svc/internal/domain"
)

// agreementJSON is the payment_agreement object.
type agreementJSON struct {
	ID             string            `json:"id"`
	Object         string            `json:"object"`
	Status         string            `json:"status"`
	Tenant         tenantJSON        `json:"tenant"`
	PaymentMethods []methodJSON      `json:"payment_methods"`
	Acceptance     *acceptanceJSON   `json:"acceptance"`
	Metadata       map[string]string `json:"metadata"`
	Created        int64             `json:"created"`
	CancelledAt    *int64            `json:"cancelled_at"`
	Livemode       bool              `json:"livemode"`
}

type tenantJSON struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

// methodJSON is a payment method as the API shows it: the token's last four characters only.
type methodJSON struct {
	ID          string  `json:"id"`
	Object      string  `json:"object"`
	Type        string  `json:"type"`
	Last4       string  `json:"last4"`
	Preferred   bool    `json:"preferred"`
	Status      string  `json:"status"`
	FailureCode *string `json:"failure_code"`
}

type acceptanceJSON struct {
	AcceptedAt int64   `json:"accepted_at"`
	IPAddress  *string `json:"ip_address"`
	UserAgent  *string `json:"user_agent"`
}

// requestJSON is the payment_request object: the fields of spec §2.3, then the engine's
// record (attempt_log, retry_stop_reason).
type requestJSON struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	PaymentAgreement  string            `json:"payment_agreement"`
	Amount            int64             `json:"amount"`
	Currency          string            `json:"currency"`
	Description       *string           `json:"description"`
	Status            string            `json:"status"`
	PaymentMethodUsed *string           `json:"payment_method_used"`
	FailureReason     *string           `json:"failure_reason"`
	Attempts          int               `json:"attempts"`
	NextRetryAt       *int64            `json:"next_retry_at"`
	RetryStopReason   *string           `json:"retry_stop_reason"`
	AttemptLog        []chargeJSON      `json:"attempt_log"`
	Metadata          map[string]string `json:"metadata"`
	Created           int64             `json:"created"`
	CancelledAt       *int64            `json:"cancelled_at"`
	Livemode          bool              `json:"livemode"`
}

// chargeJSON is the charge object: one method charged in one attempt of a request.
type chargeJSON struct {
	ID               string  `json:"id"`
	Object           string  `json:"object"`
	PaymentRequest   string  `json:"payment_request"`
	PaymentAgreement string  `json:"payment_agreement"`
	Attempt          int     `json:"attempt"`
	PaymentMethod    string  `json:"payment_method"`
	Amount           int64   `json:"amount"`
	Currency         string  `json:"currency"`
	Outcome          string  `json:"outcome"`
	FailureCode      *string `json:"failure_code"`
	Created          int64   `json:"created"`
	Livemode         bool    `json:"livemode"`
}

// AgreementObject renders an agreement as the API shows it (the object of its events).
func AgreementObject(a *domain.Agreement) any { return renderAgreement(a) }

// RequestObject renders a request as the API shows it (the object of its events).
func RequestObject(r *domain.Request) any { return renderRequest(r) }

// ChargeObject renders a charge of a request as the API shows it (the object of its events).
func ChargeObject(r *domain.Request, t domain.Try) any { return renderCharge(r, t) }

// AgreementEvents renders the events agreements raise, their objects as this port answers them.
func AgreementEvents(gen *ids.Generator, now func() time.Time) *events.Emitter[*domain.Agreement] {
	return &events.Emitter[*domain.Agreement]{IDs: gen, Now: now, Object: AgreementObject}
}

// RequestEvents renders the events requests raise: a charge's event is about the charge, the
// domain.Try the request raised it with.
func RequestEvents(gen *ids.Generator, now func() time.Time) *events.Emitter[*domain.Request] {
	charge := func(r *domain.Request, part any) any { return renderCharge(r, part.(domain.Try)) }
	return &events.Emitter[*domain.Request]{IDs: gen, Now: now, Object: RequestObject,
		Parts: map[string]func(*domain.Request, any) any{eventtype.ChargeSucceeded: charge, eventtype.ChargeFailed: charge}}
}

func renderAgreement(a *domain.Agreement) agreementJSON {
	t := a.Tenant()
	out := agreementJSON{
		ID: a.ID(), Object: domain.ObjectAgreement, Status: string(a.Status()),
		Tenant: tenantJSON{Name: t.Name, Email: t.Email}, Metadata: a.Metadata(),
		Created: a.Created().Unix(), CancelledAt: unixOrNil(a.CancelledAt()), Livemode: a.Livemode(),
	}
	for _, m := range a.Methods() {
		out.PaymentMethods = append(out.PaymentMethods, methodJSON{
			ID: m.ID, Object: domain.ObjectMethod, Type: string(m.Type), Last4: m.Last4(), Preferred: m.Preferred,
			Status: string(m.Status), FailureCode: stringOrNil(m.FailureCode),
		})
	}
	if acc := a.AcceptanceEvidence(); acc != nil {
		out.Acceptance = &acceptanceJSON{AcceptedAt: acc.AcceptedAt.Unix(), IPAddress: stringOrNil(acc.IPAddress), UserAgent: stringOrNil(acc.UserAgent)}
	}
	return out
}

func renderRequest(r *domain.Request) requestJSON {
	out := requestJSON{
		ID: r.ID(), Object: domain.ObjectRequest, PaymentAgreement: r.Agreement(), Amount: r.Amount(),
		Currency: r.Currency(), Description: stringOrNil(r.Description()), Status: string(r.Status()),
		PaymentMethodUsed: stringOrNil(r.MethodUsed()), FailureReason: stringOrNil(r.FailureReason()),
		Attempts: r.Attempts(), NextRetryAt: unixOrNil(r.NextRetryAt()),
		RetryStopReason: stringOrNil(string(r.StopReason())), AttemptLog: []chargeJSON{},
		Metadata: r.Metadata(), Created: r.Created().Unix(), CancelledAt: unixOrNil(r.CancelledAt()),
		Livemode: r.Livemode(),
	}
	for _, t := range r.Tries() {
		out.AttemptLog = append(out.AttemptLog, renderCharge(r, t))
	}
	return out
}

// renderCharge renders a charge: what the try records, and what it charged from its request
// (a request's amount and currency never change, so they are the charge's).
func renderCharge(r *domain.Request, t domain.Try) chargeJSON {
	outcome := "failed"
	if t.Succeeded {
		outcome = "succeeded"
	}
	return chargeJSON{
		ID: t.ID, Object: domain.ObjectCharge, PaymentRequest: r.ID(), PaymentAgreement: r.Agreement(),
		Attempt: t.Attempt, PaymentMethod: t.Method, Amount: r.Amount(), Currency: r.Currency(),
		Outcome: outcome, FailureCode: stringOrNil(t.FailureCode), Created: t.At.Unix(), Livemode: r.Livemode(),
	}
}

func stringOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func unixOrNil(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	u := t.Unix()
	return &u
}
