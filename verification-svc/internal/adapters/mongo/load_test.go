package mongo

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"rentalplatform/libs/ids"

	"rentalplatform/verification-svc/internal/domain"
)

// Load reads a session whatever its account and mode (the hosted page's read, which the
// session's client secret authorises), and finds no session that is not stored.
func TestLoad(t *testing.T) {
	f := newFixture(t)
	live := f.create(true, "live@example.com", time.Now(), time.Hour)
	got, err := f.repo.Load(t.Context(), live.ID())
	if err != nil || got.Account() != f.account || !got.Livemode() || !reflect.DeepEqual(got.State(), live.State()) {
		t.Fatalf("Load = %+v, %v", got, err)
	}
	if _, err := f.repo.Load(t.Context(), f.gen.New(ids.VerificationSession)); !errors.Is(err, domain.ErrSessionNotFound) {
		t.Fatalf("Load of a session never stored: %v", err)
	}
}
