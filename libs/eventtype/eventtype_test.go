package eventtype

import (
	"slices"
	"testing"
)

func TestCatalogue(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range Catalogue() {
		typ := e.Type
		if seen[typ] {
			t.Errorf("%s listed twice", typ)
		}
		seen[typ] = true
		if Family(typ) == typ || Family(typ) == "" {
			t.Errorf("%s is not <family>.<name>", typ)
		}
		if !Known(typ) || !KnownFamily(Family(typ)) {
			t.Errorf("Known(%s) or KnownFamily(%s) = false", typ, Family(typ))
		}
		if e.Emitted != (e.Schema != "") || e.Description == "" {
			t.Errorf("%s: emitted %v with schema %q and description %q", typ, e.Emitted, e.Schema, e.Description)
		}
	}
	if !slices.IsSorted(All()) || len(All()) != len(seen) {
		t.Errorf("All() is not every type, sorted: %v", All())
	}
	for _, bad := range []string{"", "*", "payment_request", "payment_request.*", "invoice.unknown", "charge.exploded"} {
		if Known(bad) {
			t.Errorf("Known(%q) = true", bad)
		}
	}
	for _, bad := range []string{"", "*", "rocket", "payment_req", "charge.", "invoice.paid"} {
		if KnownFamily(bad) {
			t.Errorf("KnownFamily(%q) = true", bad)
		}
	}
}

// Every family of the API description (spec §6.3) and every type it names (§6.4) is in the
// catalogue, so an endpoint configured from the description is not refused.
func TestSpecFamiliesAndTypes(t *testing.T) {
	for _, f := range []string{
		"verification_session", "verification_report", "document_upload", "identity_check",
		"score_request", "score_report",
		"invoice", "credit_note",
		"payment_intent", "charge", "payment_method", "mandate", "bank_authorisation", "dispute",
		"payout", "balance",
		"guarantee", "claim",
		"collection_case", "debt_payment", "case_chat", "case_file",
	} {
		if !KnownFamily(f) {
			t.Errorf("family %s (spec §6.3) is not in the catalogue", f)
		}
	}
	for _, typ := range []string{
		"payment_intent.succeeded", "payment_intent.payment_failed", "invoice.paid",
		"verification_session.completed", "collection_case.updated", "payment_request.retrying",
	} {
		if !Known(typ) {
			t.Errorf("type %s (spec §6.4) is not in the catalogue", typ)
		}
	}
	for _, typ := range []string{"verification_session.completed", "collection_case.updated", "payment_request.retrying", ChargeSucceeded} {
		if e, _ := Lookup(typ); !e.Emitted {
			t.Errorf("%s is emitted, the catalogue says not", typ)
		}
	}
	for _, typ := range []string{"payment_intent.succeeded", "invoice.paid"} {
		if e, _ := Lookup(typ); e.Emitted {
			t.Errorf("%s is reserved, the catalogue says emitted", typ)
		}
	}
}

func TestMatches(t *testing.T) {
	if !Matches([]string{"*"}, PaymentRequestFailed) || !Matches([]string{CaseFileCreated, PaymentRequestFailed}, PaymentRequestFailed) {
		t.Fatal("expected match")
	}
	if Matches([]string{PaymentRequestSucceeded}, PaymentRequestFailed) || Matches(nil, PaymentRequestFailed) {
		t.Fatal("unexpected match")
	}
}
