package domain

import (
	"testing"
	"time"

	"rentalplatform/libs/ids"
)

// A derived charge id is a well-formed ch_ id, the same for the same charge every time,
// different for every other charge, and dated by its request.
func TestChargeID(t *testing.T) {
	gen := ids.NewGenerator(func() time.Time { return created })
	req := gen.New(ids.PaymentRequest)
	id := ChargeID(req, 1, "pm_a")
	if !ids.Valid(ids.Charge, id) {
		t.Fatalf("ChargeID = %q: not a well-formed charge id", id)
	}
	if again := ChargeID(req, 1, "pm_a"); again != id {
		t.Fatalf("ChargeID is not stable: %q, then %q", id, again)
	}
	if at, ok := ids.Time(ids.Charge, id); !ok || !at.Equal(created) {
		t.Fatalf("ChargeID's time = %v, %v; want the request's creation %v", at, ok, created)
	}
	seen := map[string]string{id: "preq 1 pm_a"}
	for _, tc := range []struct {
		name    string
		request string
		attempt int
		method  string
	}{
		{"another attempt", req, 2, "pm_a"},
		{"another method", req, 1, "pm_b"},
		{"another request", gen.New(ids.PaymentRequest), 1, "pm_a"},
		{"a request id without a time", "preq_1", 1, "pm_a"},
	} {
		got := ChargeID(tc.request, tc.attempt, tc.method)
		if !ids.Valid(ids.Charge, got) {
			t.Errorf("%s: %q is not a well-formed charge id", tc.name, got)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("%s: %q is also the id of %s", tc.name, got, other)
		}
		seen[got] = tc.name
	}
}

// A charge stored with an id keeps it; one stored without (before charges had ids) gets its
// derived id, the same on every rehydration, and State carries it to the next write.
func TestRehydrateRequestNamesEveryCharge(t *testing.T) {
	r := newRequest(t)
	if _, err := r.ClaimAttempt(1, "tok", created, ttl); err != nil {
		t.Fatal(err)
	}
	tries := []Try{try(1, "pm_a", false, "insufficient_funds", created), try(1, "pm_b", true, "", created)}
	tries[0].ID = "ch_stored"
	if _, err := r.Record(1, "tok", tries, true); err != nil {
		t.Fatal(err)
	}
	s := r.State()
	if s.Tries[1].ID != "" {
		t.Fatalf("Record changed a charge's id: %+v", s.Tries)
	}
	first := RehydrateRequest(s).State()
	second := RehydrateRequest(s).State()
	if first.Tries[0].ID != "ch_stored" {
		t.Errorf("a stored id was replaced: %q", first.Tries[0].ID)
	}
	if want := ChargeID(s.ID, 1, "pm_b"); first.Tries[1].ID != want || second.Tries[1].ID != want {
		t.Errorf("derived ids %q, %q; want %q", first.Tries[1].ID, second.Tries[1].ID, want)
	}
	if s.Tries[1].ID != "" {
		t.Error("rehydration changed the state it was given")
	}
}
