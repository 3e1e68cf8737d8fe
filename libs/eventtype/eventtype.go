// Package eventtype is the catalogue of event types. It holds every type the platform emits and
// every type of the event families the API description names (spec §6.3, §6.4) that it does not
// emit yet. Webhook endpoints may subscribe to any of them (or "*"), and the events list filters
// on any of them, so an integrator who configures an endpoint from the API description is not
// refused, while a typo in enabled_events still is.
package eventtype

import (
	"slices"
	"strings"
)

// Wildcard subscribes an endpoint to every type.
const Wildcard = "*"

// Event types the platform emits, by the resource that emits them.
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
	ChargeSucceeded           = "charge.succeeded"
	ChargeFailed              = "charge.failed"
)

// Entry is one type of the catalogue.
type Entry struct {
	Type string
	// Emitted is false for a type of the API description's families that nothing on this
	// platform raises yet: it can be subscribed to and filtered on, and no event has it.
	Emitted bool
	// Schema names the schema of the event's data.object in the API contract
	// (api/openapi.yaml, components.schemas); empty when the type is not emitted.
	Schema      string
	Description string
}

// The contract's schema names of the objects events carry.
const (
	schemaEndpoint     = "WebhookEndpoint"
	schemaSession      = "VerificationSession"
	schemaReport       = "VerificationReport"
	schemaCase         = "CollectionCase"
	schemaCaseFile     = "CaseFile"
	schemaDebtPayment  = "DebtPayment"
	schemaRequest      = "PaymentRequest"
	schemaAgreement    = "PaymentAgreement"
	schemaCharge       = "Charge"
	reservedForProduct = "Reserved for a product this platform does not offer yet: accepted in enabled_events and list filters, never emitted."
)

func emitted(t, schema, description string) Entry {
	return Entry{Type: t, Emitted: true, Schema: schema, Description: description}
}

// reserved lists the types of a family the platform does not emit.
func reserved(family string, names ...string) []Entry {
	out := make([]Entry, len(names))
	for i, n := range names {
		out[i] = Entry{Type: family + "." + n, Description: reservedForProduct}
	}
	return out
}

// instead lists reserved types whose meaning an emitted type already carries: their description
// names it ("" for none).
func instead(family string, use map[string]string) []Entry {
	out := make([]Entry, 0, len(use))
	for name, t := range use {
		d := reservedForProduct
		if t != "" {
			d = "Reserved, never emitted: this platform's object for a collection is the payment_request; subscribe to " + t + "."
		}
		out = append(out, Entry{Type: family + "." + name, Description: d})
	}
	return out
}

// catalogue is every entry, sorted by type (Lookup searches it); never changed after it is made.
var catalogue = newCatalogue()

func newCatalogue() []Entry {
	c := []Entry{
		emitted(WebhookEndpointCreated, schemaEndpoint, "A webhook endpoint was created."),
		emitted(WebhookEndpointUpdated, schemaEndpoint, "A webhook endpoint's URL, enabled events, status, description or metadata changed. Rotating its secret raises no event."),
		emitted(WebhookEndpointDeleted, schemaEndpoint, "A webhook endpoint was deleted."),
		emitted(WebhookEndpointDisabled, schemaEndpoint, "A webhook endpoint was disabled by the platform after deliveries kept failing."),

		emitted(VerificationSessionCreated, schemaSession, "A verification session was created."),
		emitted(VerificationSessionPending, schemaSession, "The applicant started the session's checks."),
		emitted(VerificationSessionProcessing, schemaSession, "The session's checks are running."),
		emitted(VerificationSessionCompleted, schemaSession, "The session's checks completed; its report is ready."),
		emitted(VerificationSessionFailed, schemaSession, "The session failed (last_error says why)."),
		emitted(VerificationSessionExpired, schemaSession, "The session reached expires_at before the applicant finished."),
		emitted(VerificationSessionCanceled, schemaSession, "The session was canceled."),
		emitted(VerificationSessionRedacted, schemaSession, "The session's personal data was redacted."),
		emitted(VerificationReportCreated, schemaReport, "A completed session's report was created."),

		emitted(CollectionCaseCreated, schemaCase, "A collection case was created and submitted to the collection partner."),
		emitted(CollectionCaseUpdated, schemaCase, "A collection case was paused or resumed, or a debt payment lowered its remainder."),
		emitted(CollectionCaseClosed, schemaCase, "A collection case was closed (close_code says why)."),
		emitted(CaseFileCreated, schemaCaseFile, "A file was uploaded to a collection case."),
		emitted(DebtPaymentCreated, schemaDebtPayment, "A debt payment was recorded on a collection case."),

		emitted(PaymentRequestCreated, schemaRequest, "A payment request was created."),
		emitted(PaymentRequestProcessing, schemaRequest, "The first collection attempt of a payment request started."),
		emitted(PaymentRequestRetrying, schemaRequest, "Every method failed in an attempt; the next attempt is scheduled at next_retry_at."),
		emitted(PaymentRequestSucceeded, schemaRequest, "A payment request was collected."),
		emitted(PaymentRequestFailed, schemaRequest, "A payment request's attempts are exhausted, or no usable method is left."),
		emitted(PaymentRequestCancelled, schemaRequest, "A payment request was cancelled (by the API or with its agreement)."),
		emitted(PaymentAgreementCreated, schemaAgreement, "A payment agreement was created."),
		emitted(PaymentAgreementUpdated, schemaAgreement, "A payment method of an agreement was declined for good and is no longer charged."),
		emitted(PaymentAgreementCancelled, schemaAgreement, "A payment agreement was cancelled."),
		emitted(ChargeSucceeded, schemaCharge, "A charge of a payment method succeeded."),
		emitted(ChargeFailed, schemaCharge, "A charge of a payment method failed (failure_code says why)."),
	}
	// The API description's families (spec §6.3) and named types (§6.4) that no product here
	// raises yet. payment_intent.* is reserved rather than emitted beside payment_request.*:
	// see docs/events.md ("The event catalogue").
	for _, r := range [][]Entry{
		reserved("document_upload", "created", "verified", "rejected"),
		reserved("identity_check", "created", "succeeded", "failed"),
		reserved("score_request", "created", "completed", "failed"),
		reserved("score_report", "created", "updated"),
		reserved("invoice", "created", "finalized", "updated", "paid", "payment_failed", "overdue", "voided"),
		reserved("credit_note", "created", "updated", "voided"),
		instead("payment_intent", map[string]string{
			"created": PaymentRequestCreated, "processing": PaymentRequestProcessing, "succeeded": PaymentRequestSucceeded,
			"payment_failed": PaymentRequestFailed, "canceled": PaymentRequestCancelled, "requires_action": "",
		}),
		reserved("charge", "pending", "refunded"),
		reserved("payment_method", "attached", "detached", "updated"),
		reserved("mandate", "created", "updated", "revoked"),
		reserved("bank_authorisation", "created", "authorised", "revoked", "expired"),
		reserved("dispute", "created", "updated", "closed"),
		reserved("payout", "created", "paid", "failed", "canceled"),
		reserved("balance", "available"),
		reserved("guarantee", "created", "activated", "expired", "canceled"),
		reserved("claim", "created", "approved", "rejected", "paid"),
		reserved("case_chat", "message_received", "message_sent"),
	} {
		c = append(c, r...)
	}
	slices.SortFunc(c, func(a, b Entry) int { return strings.Compare(a.Type, b.Type) })
	return c
}

// Catalogue returns every type, sorted by type.
func Catalogue() []Entry { return slices.Clone(catalogue) }

// All returns every type of the catalogue, emitted or not, sorted.
func All() []string {
	out := make([]string, len(catalogue))
	for i, e := range catalogue {
		out[i] = e.Type
	}
	return out
}

// Lookup returns the catalogue's entry for t.
func Lookup(t string) (Entry, bool) {
	i, ok := slices.BinarySearchFunc(catalogue, t, func(e Entry, t string) int { return strings.Compare(e.Type, t) })
	if !ok {
		return Entry{}, false
	}
	return catalogue[i], true
}

// Known reports whether t is a type of the catalogue (emitted or not).
func Known(t string) bool {
	_, ok := Lookup(t)
	return ok
}

// KnownFamily reports whether family is the family of a type of the catalogue.
func KnownFamily(family string) bool {
	i, _ := slices.BinarySearchFunc(catalogue, family+".", func(e Entry, p string) int { return strings.Compare(e.Type, p) })
	return i < len(catalogue) && strings.HasPrefix(catalogue[i].Type, family+".")
}

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
