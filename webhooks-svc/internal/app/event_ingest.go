package app

import (
	"context"
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
	now := s.Now()
	ds := make([]*domain.Delivery, len(rec.Targets))
	for i, t := range rec.Targets {
		ds[i] = domain.NewDelivery(domain.NewDeliveryParams{
			ID: t.Delivery, Event: rec.Event.ID, Endpoint: t.Endpoint,
			Account: rec.Event.Account, Livemode: rec.Event.Livemode,
			EventCreated: time.Unix(rec.Event.Created, 0), Created: now,
		})
	}
	if fresh && s.inline != nil {
		return s.fanOutInline(ctx, rec.Event, ds)
	}
	created, err := s.Deliveries.CreateAll(ctx, ds)
	if err != nil {
		return err
	}
	for i, d := range ds {
		if !created[i] {
			// Made by an earlier run of this task: it may have moved on since.
			if d, err = s.Deliveries.Load(ctx, d.ID()); err != nil {
				return err
			}
		}
		if err := s.ensureScheduled(ctx, d); err != nil {
			return err
		}
	}
	return nil
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
