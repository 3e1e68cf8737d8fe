package domainerr_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"rentalplatform/libs/domainerr"
)

func TestIsMatchesBySentinelFields(t *testing.T) {
	endpoints := domainerr.NotFoundSentinel("webhook_endpoint")
	events := domainerr.NotFoundSentinel("event")
	err := fmt.Errorf("get: %w", domainerr.NotFoundObject("webhook_endpoint", "we_1"))
	for _, tc := range []struct {
		target error
		want   bool
	}{
		{endpoints, true},
		{events, false},
		{&domainerr.Error{Kind: domainerr.NotFound}, true}, // any not-found
		{domainerr.InvalidState("x"), false},
		{errors.New("plain"), false},
	} {
		if got := errors.Is(err, tc.target); got != tc.want {
			t.Errorf("errors.Is(%v, %v) = %t, want %t", err, tc.target, got, tc.want)
		}
	}
}

func TestConstructors(t *testing.T) {
	for _, tc := range []struct {
		err                  *domainerr.Error
		kind                 domainerr.Kind
		code, param, message string
	}{
		{domainerr.Missing("applicant.email"), domainerr.Invalid, domainerr.CodeParameterMissing, "applicant.email", "Missing required param: applicant.email."},
		{domainerr.Unknown("debtor.contact_person"), domainerr.Invalid, domainerr.CodeParameterUnknown, "debtor.contact_person", "Received unknown parameter: debtor.contact_person."},
		{domainerr.InvalidParam("amount", "Invalid amount: must be > 0, got %d.", -1), domainerr.Invalid, domainerr.CodeParameterInvalid, "amount", "Invalid amount: must be > 0, got -1."},
		{domainerr.NotFoundObject("event", "evt_1"), domainerr.NotFound, domainerr.CodeResourceMissing, "id", "No such event: 'evt_1'"},
		{domainerr.InvalidState("Completed sessions cannot be canceled."), domainerr.Invalid, domainerr.CodeInvalidState, "", "Completed sessions cannot be canceled."},
	} {
		e := tc.err
		if e.Kind != tc.kind || e.Code != tc.code || e.Param != tc.param || e.Message != tc.message {
			t.Errorf("%+v, want kind %d code %s param %q message %q", e, tc.kind, tc.code, tc.param, tc.message)
		}
	}
	wrapped := fmt.Errorf("ctx: %w", domainerr.Missing("x"))
	if domainerr.KindOf(wrapped) != domainerr.Invalid || domainerr.CodeOf(wrapped) != domainerr.CodeParameterMissing {
		t.Fatal("KindOf/CodeOf do not unwrap")
	}
	if domainerr.As(errors.New("plain")) != nil || domainerr.KindOf(nil) != 0 || domainerr.CodeOf(nil) != "" {
		t.Fatal("a plain error is not a domain error")
	}
}

func TestLockTimeout(t *testing.T) {
	e := domainerr.LockTimeout("webhook endpoint")
	if e.Kind != domainerr.Conflict || e.Code != "lock_timeout" || !strings.Contains(e.Message, "webhook endpoint") {
		t.Fatalf("LockTimeout: %+v", e)
	}
	if !errors.Is(fmt.Errorf("update: %w", e), domainerr.ErrLockTimeout) || errors.Is(domainerr.InvalidState("x"), domainerr.ErrLockTimeout) {
		t.Fatal("errors.Is with ErrLockTimeout")
	}
}
