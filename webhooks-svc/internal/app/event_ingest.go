package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"rentalplatform/libs/events"

	"rentalplatform/webhooks-svc/internal/domain"
)

// Ingest stores a published event and fans it out: one delivery per subscribed endpoint, each
// with its first attempt queued. It is idempotent, so an event published twice, or redelivered
// after a crash half-way, ends up stored once with each delivery made once: the endpoints are
// chosen when the event is first stored and kept with it, and the deliveries are created and
// queued again (without effect where they already are).
//
// It stores first and reads only when the event is stored already: nearly every event is new,
// and a read before the insert was one store round trip per event for the rare redelivery.
func (s *Service) Ingest(ctx context.Context, ev events.Event) error {
	rec, fresh, err := s.store(ctx, ev)
	if err != nil {
		return err
	}
	// Every run appends, fresh or not: the run that stored the event may have failed before
	// its append, and Append adds an event once however often it is called.
	if s.Feed != nil {
		if err := s.Feed.Append(ctx, rec.Event); err != nil {
			return fmt.Errorf("event feed: %w", err)
		}
	}
	ds := s.deliveriesOf(rec)
	if fresh && s.inline != nil {
		return s.fanOutInline(ctx, rec.Event, ds)
	}
	return s.fanOutQueued(ctx, rec, ds)
}

// deliveriesOf returns the deliveries of rec's targets as made now, not stored yet.
func (s *Service) deliveriesOf(rec *domain.EventRecord) []*domain.Delivery {
	now := s.Now()
	ds := make([]*domain.Delivery, len(rec.Targets))
	for i, t := range rec.Targets {
		ds[i] = domain.NewDelivery(domain.NewDeliveryParams{
			ID: t.Delivery, Event: rec.Event.ID, Endpoint: t.Endpoint,
			Account: rec.Event.Account, Livemode: rec.Event.Livemode,
			EventCreated: time.Unix(rec.Event.Created, 0), Created: now,
		})
	}
	return ds
}

// fanOutQueued stores rec's deliveries ds where they are not yet, queues each one's attempt
// unless it is queued, and then records the event fanned out.
func (s *Service) fanOutQueued(ctx context.Context, rec *domain.EventRecord, ds []*domain.Delivery) error {
	created, err := s.Deliveries.CreateAll(ctx, ds)
	if err != nil {
		return err
	}
	moved := map[string]domain.DeliveryStatus{} // deliveries stored earlier that moved on
	for i, d := range ds {
		if !created[i] {
			// Made by an earlier run of this task: it may have moved on since (an inline first
			// attempt answered before the run died), and the event may not know.
			if d, err = s.Deliveries.Load(ctx, d.ID()); err != nil {
				return err
			}
			if st, _ := rec.Status(d.ID()); st != d.Status() {
				moved[d.ID()] = d.Status()
			}
		}
		if err := s.ensureScheduled(ctx, d); err != nil {
			return err
		}
	}
	switch {
	case !rec.FannedOut:
		err = s.Events.SetFannedOut(ctx, rec.Event.ID, moved)
	case len(moved) > 0:
		err = s.Events.SetDeliveryStatuses(ctx, rec.Event.ID, moved)
	}
	if err != nil && !errors.Is(err, domain.ErrEventNotFound) {
		return err
	}
	return nil
}

// unfannedBatch bounds one CompleteFanOuts pass.
const unfannedBatch = 500

// CompleteFanOuts fans out the events stored more than grace ago whose fan-out did not finish:
// the process died half-way and the task that would have run it again was lost with what Redis
// held (a flush, or the embedded Redis dying with the local platform), and the event is not
// among those its publisher publishes again (libs/outbox, retention.go). Their deliveries are
// made as the fan-out would have made them, and queued. It returns how many events it completed.
func (s *Service) CompleteFanOuts(ctx context.Context, grace time.Duration) (int, error) {
	recs, err := s.Events.Unfanned(ctx, s.Now().Add(-grace), unfannedBatch)
	if err != nil {
		return 0, err
	}
	for i, rec := range recs {
		if err := s.fanOutQueued(ctx, rec, s.deliveriesOf(rec)); err != nil {
			return i, fmt.Errorf("completing the fan-out of %s: %w", rec.Event.ID, err)
		}
	}
	if len(recs) > 0 {
		s.Log.WarnContext(ctx, "completed fan-outs that were interrupted and whose task was lost", "events", len(recs))
	}
	return len(recs), nil
}

// store records a new event with the endpoints subscribed to it now (or, for an event with its
// own destination, that destination alone, as a target without an endpoint), and reports
// whether this call stored it. If another consumer stored it first, that record wins.
func (s *Service) store(ctx context.Context, ev events.Event) (*domain.EventRecord, bool, error) {
	var targets []domain.Target
	if ev.Destination != nil {
		targets = []domain.Target{{Delivery: s.IDs.New(domain.DeliveryIDPrefix), Status: domain.DeliveryPending}}
	} else {
		eps, err := s.Endpoints.Subscribed(ctx, ev.Account, ev.Livemode, ev.Type)
		if err != nil {
			return nil, false, err
		}
		for _, e := range eps {
			targets = append(targets, domain.Target{Delivery: s.IDs.New(domain.DeliveryIDPrefix), Endpoint: e.ID(), Status: domain.DeliveryPending})
		}
	}
	rec := domain.NewEventRecord(ev, targets)
	inserted, err := s.Events.Insert(ctx, rec)
	if err != nil {
		return nil, false, err
	}
	if !inserted {
		rec, err := s.Events.Load(ctx, ev.ID)
		return rec, false, err
	}
	return rec, true, nil
}
