package domain

import (
	"context"
	"time"

	"rentalplatform/libs/events"
	"rentalplatform/libs/listing"
)

// Repository stores endpoints. Every method taking an account and mode is scoped to them: an
// endpoint of another account or mode, or a deleted one, is reported as ErrNotFound, never
// returned. The events an endpoint raised (its events.Recorder) are stored with it, rendered,
// in the same write, in its outbox; they name the request in the write's context
// (events.CausedBy), none for the service's own work.
type Repository interface {
	// Create stores a new endpoint and returns the endpoint stored: e, or, for a create retried under an Idempotency-Key that
	// already created one, the one stored then (nothing is stored again).
	Create(ctx context.Context, e *Endpoint) (*Endpoint, error)
	// Get returns the endpoint, or ErrNotFound.
	Get(ctx context.Context, id, account string, livemode bool) (*Endpoint, error)
	// Update reads the endpoint, passes it to fn, and stores the result unless fn fails, in
	// which case nothing is stored and fn's error is returned. fn may be called more than once
	// (when a concurrent write wins, the repository reads again and retries), so it must
	// only change the endpoint it is given. It returns the endpoint as stored (with the events
	// fn raised), ErrNotFound, or domainerr.LockTimeout when retries run out. fn may Delete the
	// endpoint.
	Update(ctx context.Context, id, account string, livemode bool, fn func(*Endpoint) error) (*Endpoint, error)
	// UpdateAny is Update for the service's own work (the endpoint's health), whatever the
	// owner.
	UpdateAny(ctx context.Context, id string, fn func(*Endpoint) error) (*Endpoint, error)
	// List returns one page, newest first, and whether more endpoints lie beyond it in the
	// direction read (see listing.Params).
	List(ctx context.Context, account string, livemode bool, p listing.Params) ([]*Endpoint, bool, error)
	// Subscribed returns the account's enabled endpoints in the mode that receive events of
	// type eventType. Like Cached, it may answer from a cache: a change made by another
	// process may take up to the cache period to show.
	Subscribed(ctx context.Context, account string, livemode bool, eventType string) ([]*Endpoint, error)
	// Cached is Get for the delivery path: it may answer from a cache, current for the
	// changes this process made and at most the cache period old for the others'.
	Cached(ctx context.Context, id, account string, livemode bool) (*Endpoint, error)
}

// EventFilter narrows an event list; zero fields do not filter.
type EventFilter struct {
	Type   string   // exactly this type
	Family string   // any type of this family ("payment_request" for payment_request.*)
	Types  []string // any of these types
	// DeliverySuccess: true lists events every delivery of which succeeded (or that had none);
	// false those with a delivery pending or failed.
	DeliverySuccess *bool
}

// EventRepository stores events, keyed by their id, with their fan-out.
type EventRepository interface {
	// Insert stores the record; false when an event with its id is already stored (and then
	// nothing is changed).
	Insert(ctx context.Context, r *EventRecord) (bool, error)
	// Get returns the caller's record, or ErrEventNotFound (for one of another owner too).
	Get(ctx context.Context, id, account string, livemode bool) (*EventRecord, error)
	// Load is Get for the service's own work, whatever the owner.
	Load(ctx context.Context, id string) (*EventRecord, error)
	// Event returns the event itself (not where its deliveries stand), which never changes once
	// stored, so it may come from memory; or ErrEventNotFound.
	Event(ctx context.Context, id string) (events.Event, error)
	// List returns one page of the account's events in the mode, newest first.
	List(ctx context.Context, account string, livemode bool, f EventFilter, p listing.Params) ([]*EventRecord, bool, error)
	// SetDeliveryStatus records where one of the event's deliveries stands (and so its
	// pending_webhooks). Setting the status it already has changes nothing.
	SetDeliveryStatus(ctx context.Context, event, delivery string, s DeliveryStatus) error
	// SetDeliveryStatuses is SetDeliveryStatus for several deliveries of the event at once
	// (keyed by delivery id), in one write.
	SetDeliveryStatuses(ctx context.Context, event string, statuses map[string]DeliveryStatus) error
	// SetFannedOut records that the event's deliveries are stored (EventRecord.FannedOut), with
	// where the given ones stand (as SetDeliveryStatuses), in one write.
	SetFannedOut(ctx context.Context, event string, statuses map[string]DeliveryStatus) error
	// Unfanned returns up to limit records created before t whose deliveries may not all be
	// stored (FannedOut false), oldest first.
	Unfanned(ctx context.Context, before time.Time, limit int) ([]*EventRecord, error)
	// Purge removes the events created before t and returns how many.
	Purge(ctx context.Context, before time.Time) (int64, error)
}

// DeliveryFilter narrows a delivery list; zero fields do not filter, set ones all apply.
type DeliveryFilter struct {
	Endpoint string         // to this endpoint (a destination delivery has none, so never matches)
	Event    string         // of this event
	Status   DeliveryStatus // in this status
}

// DeliveryRepository stores deliveries, one per event and endpoint.
type DeliveryRepository interface {
	// Create stores a new delivery; false when the delivery, or another for the same event and
	// endpoint, is already stored (and then nothing is changed).
	Create(ctx context.Context, d *Delivery) (bool, error)
	// CreateAll is Create for several deliveries at once; it reports for each whether it
	// was new.
	CreateAll(ctx context.Context, ds []*Delivery) ([]bool, error)
	// Get returns the caller's delivery, or ErrDeliveryNotFound (for one of another owner too).
	Get(ctx context.Context, id, account string, livemode bool) (*Delivery, error)
	// Load is Get for the service's own work, whatever the owner.
	Load(ctx context.Context, id string) (*Delivery, error)
	// Cached is Get for the delivery path: it may answer with the delivery as this process
	// last read or wrote it, which another process may have changed since.
	Cached(ctx context.Context, id string) (*Delivery, error)
	// Update reads the caller's delivery, applies fn and stores the result unless fn fails; as
	// Repository.Update.
	Update(ctx context.Context, id, account string, livemode bool, fn func(*Delivery) error) (*Delivery, error)
	// UpdateAny is Update for the service's own work (attempts, resumes), whatever the owner.
	UpdateAny(ctx context.Context, id string, fn func(*Delivery) error) (*Delivery, error)
	// List returns one page of the account's deliveries in the mode that f selects, newest
	// first, and whether more lie beyond it in the direction read (see listing.Params; the
	// created bounds are on the delivery's creation).
	List(ctx context.Context, account string, livemode bool, f DeliveryFilter, p listing.Params) ([]*Delivery, bool, error)
	// Pending returns the pending deliveries to an endpoint.
	Pending(ctx context.Context, endpoint string) ([]*Delivery, error)
	// Overdue returns up to limit pending deliveries whose next attempt was due before t.
	Overdue(ctx context.Context, before time.Time, limit int) ([]*Delivery, error)
	// Purge removes the deliveries of events created before t and returns how many.
	Purge(ctx context.Context, eventsBefore time.Time) (int64, error)
}
