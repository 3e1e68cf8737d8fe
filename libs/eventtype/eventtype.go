// Package eventtype is the catalogue of event types the platform emits. Webhook endpoints may
// subscribe only to these (or "*"), so a typo in enabled_events is refused instead of silently
// never matching.
package eventtype

import (
	"slices"
	"strings"
)

// Wildcard subscribes an endpoint to every type.
const Wildcard = "*"

// Event types by the resource that emits them.
const (
	WebhookEndpointCreated  = "webhook_endpoint.created"
	WebhookEndpointUpdated  = "webhook_endpoint.updated"
	WebhookEndpointDeleted  = "webhook_endpoint.deleted"
	WebhookEndpointDisabled = "webhook_endpoint.disabled"

	VerificationSessionCreated    = "verification_session.created"
	VerificationSessionPending    = "verification_session.pending"
	VerificationSessionProcessing = "verification_session.processing"
	VerificationSessionCompleted  = "verification_session.completed"
	VerificationSessionFailed     = "verification_session.failed"
	VerificationSessionExpired    = "verification_session.expired"
	VerificationSessionCanceled   = "verification_session.canceled"
	VerificationSessionRedacted   = "verification_session.redacted"
	VerificationReportCreated     = "verification_report.created"

	CollectionCaseCreated = "collection_case.created"
	CollectionCaseUpdated = "collection_case.updated"
	CollectionCaseClosed  = "collection_case.closed"
	CaseFileCreated       = "case_file.created"
	DebtPaymentCreated    = "debt_payment.created"

	PaymentRequestCreated     = "payment_request.created"
	PaymentRequestProcessing  = "payment_request.processing"
	PaymentRequestRetrying    = "payment_request.retrying"
	PaymentRequestSucceeded   = "payment_request.succeeded"
	PaymentRequestFailed      = "payment_request.failed"
	PaymentRequestCancelled   = "payment_request.cancelled"
	PaymentAgreementCreated   = "payment_agreement.created"
	PaymentAgreementUpdated   = "payment_agreement.updated"
	PaymentAgreementCancelled = "payment_agreement.cancelled"
)

var all = []string{
	WebhookEndpointCreated, WebhookEndpointUpdated, WebhookEndpointDeleted, WebhookEndpointDisabled,
	VerificationSessionCreated, VerificationSessionPending, VerificationSessionProcessing,
	VerificationSessionCompleted, VerificationSessionFailed, VerificationSessionExpired,
	VerificationSessionCanceled, VerificationSessionRedacted, VerificationReportCreated,
	CollectionCaseCreated, CollectionCaseUpdated, CollectionCaseClosed, CaseFileCreated, DebtPaymentCreated,
	PaymentRequestCreated, PaymentRequestProcessing, PaymentRequestRetrying, PaymentRequestSucceeded,
	PaymentRequestFailed, PaymentRequestCancelled, PaymentAgreementCreated, PaymentAgreementUpdated,
	PaymentAgreementCancelled,
}

// All returns every known type, sorted.
func All() []string {
	out := slices.Clone(all)
	slices.Sort(out)
	return out
}

// Known reports whether t is a type the platform emits.
func Known(t string) bool { return slices.Contains(all, t) }

// Family returns the part of t before the dot ("payment_request" of "payment_request.failed").
func Family(t string) string {
	f, _, _ := strings.Cut(t, ".")
	return f
}

// Matches reports whether an endpoint subscribed to enabled receives an event of type t.
func Matches(enabled []string, t string) bool {
	for _, e := range enabled {
		if e == Wildcard || e == t {
			return true
		}
	}
	return false
}
