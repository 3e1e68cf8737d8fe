package domain

import (
	"testing"
	"time"
)

func TestRotateSecret(t *testing.T) {
	e := validEndpointForRotation(t)
	old := e.Secret()
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	e.RotateSecret("whsec_new", now, time.Hour)
	if e.Secret() != "whsec_new" {
		t.Fatal("secret not replaced")
	}
	if got := e.SigningSecrets(now.Add(59 * time.Minute)); len(got) != 2 || got[0] != "whsec_new" || got[1] != old {
		t.Fatalf("during the overlap: %v", got)
	}
	if got := e.SigningSecrets(now.Add(time.Hour)); len(got) != 1 || got[0] != "whsec_new" {
		t.Fatalf("after the overlap: %v", got)
	}
	// A second rotation keeps only the secret it replaces.
	e.RotateSecret("whsec_third", now, time.Hour)
	if got := e.SigningSecrets(now); len(got) != 2 || got[1] != "whsec_new" {
		t.Fatalf("after a second rotation: %v", got)
	}
	e.RotateSecret("whsec_fourth", now, 0)
	if got := e.SigningSecrets(now); len(got) != 1 {
		t.Fatalf("expires_in 0 keeps %v", got)
	}
}

func TestAutoDisable(t *testing.T) {
	e := validEndpointForRotation(t)
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	after := 5 * 24 * time.Hour
	if changed, disabled := e.DeliveryFailed(now, after); !changed || disabled || !e.FailingSince().Equal(now) {
		t.Fatal("first failure starts the streak")
	}
	if changed, _ := e.DeliveryFailed(now.Add(time.Hour), after); changed {
		t.Fatal("a later failure within the period changes nothing")
	}
	if !e.DeliverySucceeded() || !e.FailingSince().IsZero() || e.DeliverySucceeded() {
		t.Fatal("a success clears the streak once")
	}
	e.DeliveryFailed(now, after)
	if _, disabled := e.DeliveryFailed(now.Add(after-time.Second), after); disabled {
		t.Fatal("disabled too early")
	}
	if changed, disabled := e.DeliveryFailed(now.Add(after), after); !changed || !disabled || e.Status() != StatusDisabled {
		t.Fatal("not disabled after the period")
	}
	if _, disabled := e.DeliveryFailed(now.Add(2*after), after); disabled {
		t.Fatal("disabled twice")
	}
	// Enabling again restarts the clock.
	e.Enable()
	if !e.FailingSince().IsZero() {
		t.Fatal("re-enabling keeps the old streak")
	}
}

func validEndpointForRotation(t *testing.T) *Endpoint {
	t.Helper()
	e, err := New(NewParams{ID: "we_1", Account: "acct_1", Secret: "whsec_old", Created: time.Now(),
		URL: "https://example.com/h", EnabledEvents: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}
