package eventtype

import "testing"

func TestCatalogue(t *testing.T) {
	seen := map[string]bool{}
	for _, typ := range All() {
		if seen[typ] {
			t.Errorf("%s listed twice", typ)
		}
		seen[typ] = true
		if Family(typ) == typ || Family(typ) == "" {
			t.Errorf("%s is not <family>.<name>", typ)
		}
		if !Known(typ) {
			t.Errorf("Known(%s) = false", typ)
		}
	}
	for _, bad := range []string{"", "*", "payment_request", "payment_request.*", "invoice.unknown"} {
		if Known(bad) {
			t.Errorf("Known(%q) = true", bad)
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
