package domain_test

import (
	"slices"
	"testing"
	"time"

	"rentalplatform/libs/events"

	"rentalplatform/webhooks-svc/internal/domain"
)

// raised returns the events e raised since it was created or rehydrated, as "type" or
// "type+update" for one that carries previous_attributes.
func raised(e *domain.Endpoint) []string {
	var out []string
	for _, r := range e.Raised() {
		s := r.Type
		if r.Update {
			s += "+update"
		}
		out = append(out, s)
	}
	return out
}

func loaded(t *testing.T) *domain.Endpoint {
	t.Helper()
	e, err := domain.New(validParams())
	if err != nil {
		t.Fatal(err)
	}
	return domain.Rehydrate(e.State())
}

// Each transition raises its event: created by New, updated by an Update that changes what the
// endpoint shows, disabled by the platform's health checks, deleted by Delete.
func TestEndpointRaisesItsEvents(t *testing.T) {
	e, err := domain.New(validParams())
	if err != nil {
		t.Fatal(err)
	}
	if got := raised(e); !slices.Equal(got, []string{"webhook_endpoint.created"}) {
		t.Fatalf("New raised %v", got)
	}
	if got := raised(domain.Rehydrate(e.State())); got != nil {
		t.Fatalf("a rehydrated endpoint raised %v", got)
	}

	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		change func(*domain.Endpoint) error
		want   []string
	}{
		{"update", func(e *domain.Endpoint) error {
			return e.Update(domain.Changes{Description: ptr("new"), Metadata: map[string]string{"a": "1"}})
		}, []string{"webhook_endpoint.updated+update"}},
		{"disable by update", func(e *domain.Endpoint) error {
			return e.Update(domain.Changes{Status: ptr("disabled")})
		}, []string{"webhook_endpoint.updated+update"}},
		{"update to the same values", func(e *domain.Endpoint) error {
			return e.Update(domain.Changes{
				URL: ptr(e.URL()), EnabledEvents: e.EnabledEvents(), Status: ptr("enabled"), Description: ptr(""),
				Metadata: map[string]string{"absent": ""},
			})
		}, nil},
		{"refused update", func(e *domain.Endpoint) error {
			_ = e.Update(domain.Changes{URL: ptr("http://insecure.example")})
			return nil
		}, nil},
		{"rotate secret", func(e *domain.Endpoint) error {
			e.RotateSecret("whsec_bmV3", now, time.Hour)
			return nil
		}, nil},
		{"first failure", func(e *domain.Endpoint) error {
			e.DeliveryFailed(now, time.Hour)
			return nil
		}, nil},
		{"failing for the period", func(e *domain.Endpoint) error {
			e.DeliveryFailed(now, time.Hour)
			e.DeliveryFailed(now.Add(time.Hour), time.Hour)
			e.DeliveryFailed(now.Add(2*time.Hour), time.Hour) // disabled already: nothing more
			return nil
		}, []string{"webhook_endpoint.disabled+update"}},
		{"gone", func(e *domain.Endpoint) error {
			if !e.DeliveryGone() || e.Status() != domain.StatusDisabled || e.DeliveryGone() {
				t.Fatal("DeliveryGone disables an enabled endpoint, once")
			}
			return nil
		}, []string{"webhook_endpoint.disabled+update"}},
		{"delete", func(e *domain.Endpoint) error {
			e.Delete()
			return nil
		}, []string{"webhook_endpoint.deleted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := loaded(t)
			if err := tc.change(e); err != nil {
				t.Fatal(err)
			}
			if got := raised(e); !slices.Equal(got, tc.want) {
				t.Fatalf("raised %v, want %v", got, tc.want)
			}
		})
	}
}

var _ events.Aggregate = (*domain.Endpoint)(nil)
