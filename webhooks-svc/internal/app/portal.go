package app

import (
	"context"
	"errors"

	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"

	"rentalplatform/webhooks-svc/internal/domain"
)

// The webhook portal's visitor: every use case takes the session the request's token opened
// (OpenPortal, on every request, so a session's expiry is checked each time) and sees only its
// account and mode's objects, and of those only its endpoint's when it has one. The actions run
// the API's own use cases as the session's account, naming the portal's request, so they raise
// the same events as the API would.

// ErrPortalNotFound is the one answer to anything the portal does not show: a token that does
// not open the session (wrong, another session's, expired, none), a session that does not
// exist, an object of another account or mode, or outside the session's endpoint. One error
// for all, so the pages cannot tell them apart.
var ErrPortalNotFound = errors.New("not found in the webhook portal")

// ErrPortalReadOnly refuses an action to a read_only session.
var ErrPortalReadOnly = errors.New("the webhook portal session is read-only")

// PortalPageSize is how many deliveries or events a portal page lists.
const PortalPageSize = 20

// maxPortalEndpoints bounds the endpoints the overview lists.
const maxPortalEndpoints = 100

// OpenPortal returns the session token opens now (domain.PortalSession.Opens), or
// ErrPortalNotFound. Opening changes nothing.
func (s *Service) OpenPortal(ctx context.Context, id, token string) (*domain.PortalSession, error) {
	if !ids.Valid(domain.PortalSessionIDPrefix, id) || token == "" || s.Portals == nil {
		return nil, ErrPortalNotFound
	}
	ps, err := s.Portals.Load(ctx, id)
	if errors.Is(err, domain.ErrPortalSessionNotFound) {
		return nil, ErrPortalNotFound
	}
	if err != nil {
		return nil, err
	}
	if !ps.Opens(token, s.Now()) {
		return nil, ErrPortalNotFound
	}
	return ps, nil
}

// portalCaller is the session's account and mode, acting in the portal's request.
func portalCaller(ps *domain.PortalSession, requestID string) Caller {
	return Caller{Account: ps.Account(), Livemode: ps.Livemode(), RequestID: requestID}
}

// notFoundAsPortal turns a not-found error of the API's use cases into ErrPortalNotFound.
func notFoundAsPortal(err error) error {
	if errors.Is(err, domain.ErrNotFound) || errors.Is(err, domain.ErrDeliveryNotFound) || errors.Is(err, domain.ErrEventNotFound) {
		return ErrPortalNotFound
	}
	return err
}

// PortalEndpoints returns the endpoints the session shows, newest first: its one endpoint (none
// once deleted), or the first maxPortalEndpoints of its account and mode.
func (s *Service) PortalEndpoints(ctx context.Context, ps *domain.PortalSession) ([]*domain.Endpoint, error) {
	caller := portalCaller(ps, "")
	if ep := ps.Endpoint(); ep != "" {
		e, err := s.Get(ctx, caller, ep)
		if errors.Is(err, domain.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return []*domain.Endpoint{e}, nil
	}
	page, _, err := s.List(ctx, caller, listing.Params{Limit: maxPortalEndpoints})
	return page, err
}

// PortalEndpoint returns an endpoint the session shows, or ErrPortalNotFound.
func (s *Service) PortalEndpoint(ctx context.Context, ps *domain.PortalSession, id string) (*domain.Endpoint, error) {
	if !ps.Covers(id) {
		return nil, ErrPortalNotFound
	}
	e, err := s.Get(ctx, portalCaller(ps, ""), id)
	return e, notFoundAsPortal(err)
}

// PortalDelivery is one line of an endpoint's deliveries: the delivery and its event's type
// ("" once the event is purged).
type PortalDelivery struct {
	Delivery  *domain.Delivery
	EventType string
}

// PortalDeliveries returns one page of the deliveries to an endpoint the session shows, newest
// first, older than the delivery after ("" for the newest), and the cursor of the next (older)
// page, "" when there is none.
func (s *Service) PortalDeliveries(ctx context.Context, ps *domain.PortalSession, endpoint, after string) ([]PortalDelivery, string, error) {
	ds, more, err := s.portalDeliveries(ctx, ps, endpoint, after)
	if err != nil {
		return nil, "", err
	}
	out := make([]PortalDelivery, len(ds))
	for i, d := range ds {
		out[i].Delivery = d
		ev, err := s.Events.Event(ctx, d.Event())
		switch {
		case err == nil:
			out[i].EventType = ev.Type
		case !errors.Is(err, domain.ErrEventNotFound):
			return nil, "", err
		}
	}
	return out, nextCursor(more, len(ds), func(i int) string { return ds[i].ID() }), nil
}

func (s *Service) portalDeliveries(ctx context.Context, ps *domain.PortalSession, endpoint, after string) ([]*domain.Delivery, bool, error) {
	if _, err := s.PortalEndpoint(ctx, ps, endpoint); err != nil {
		return nil, false, err
	}
	if after != "" && !ids.Valid(domain.DeliveryIDPrefix, after) {
		return nil, false, ErrPortalNotFound
	}
	return s.Deliveries.List(ctx, ps.Account(), ps.Livemode(), domain.DeliveryFilter{Endpoint: endpoint},
		listing.Params{Limit: PortalPageSize, StartingAfter: after})
}

// PortalDelivery returns a delivery the session shows (to one of its endpoints; deliveries to
// an event's own destination are not an endpoint's, so none) with its event, which is nil once
// purged; or ErrPortalNotFound.
func (s *Service) PortalDelivery(ctx context.Context, ps *domain.PortalSession, id string) (*domain.Delivery, *domain.EventRecord, error) {
	if !ids.Valid(domain.DeliveryIDPrefix, id) {
		return nil, nil, ErrPortalNotFound
	}
	d, err := s.Deliveries.Get(ctx, id, ps.Account(), ps.Livemode())
	if err != nil {
		return nil, nil, notFoundAsPortal(err)
	}
	if d.ToDestination() || !ps.Covers(d.Endpoint()) {
		return nil, nil, ErrPortalNotFound
	}
	ev, err := s.Events.Get(ctx, d.Event(), ps.Account(), ps.Livemode())
	if errors.Is(err, domain.ErrEventNotFound) {
		return d, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return d, ev, nil
}

// PortalEvent is one line of the portal's recent events: the event, and with an endpoint
// scope its delivery to that endpoint.
type PortalEvent struct {
	Event    *domain.EventRecord
	Delivery *domain.Delivery // nil without an endpoint scope
}

// PortalEvents returns one page of the recent events the session shows, newest first, and the
// cursor of the next (older) page, "" when there is none. Without an endpoint scope: the events
// of the account and mode, the cursor an event id. With one: the events that have a delivery to
// that endpoint, read through its deliveries (one per event), the cursor a delivery id.
func (s *Service) PortalEvents(ctx context.Context, ps *domain.PortalSession, after string) ([]PortalEvent, string, error) {
	if ep := ps.Endpoint(); ep != "" {
		ds, more, err := s.portalDeliveries(ctx, ps, ep, after)
		if err != nil {
			return nil, "", err
		}
		out := make([]PortalEvent, 0, len(ds))
		for _, d := range ds {
			ev, err := s.Events.Get(ctx, d.Event(), ps.Account(), ps.Livemode())
			if errors.Is(err, domain.ErrEventNotFound) {
				continue // purged: its delivery goes with it shortly
			}
			if err != nil {
				return nil, "", err
			}
			out = append(out, PortalEvent{Event: ev, Delivery: d})
		}
		return out, nextCursor(more, len(ds), func(i int) string { return ds[i].ID() }), nil
	}
	if after != "" && !ids.Valid(ids.Event, after) {
		return nil, "", ErrPortalNotFound
	}
	evs, more, err := s.Events.List(ctx, ps.Account(), ps.Livemode(), domain.EventFilter{},
		listing.Params{Limit: PortalPageSize, StartingAfter: after})
	if err != nil {
		return nil, "", err
	}
	out := make([]PortalEvent, len(evs))
	for i, ev := range evs {
		out[i] = PortalEvent{Event: ev}
	}
	return out, nextCursor(more, len(evs), func(i int) string { return evs[i].Event.ID }), nil
}

func nextCursor(more bool, n int, id func(int) string) string {
	if !more || n == 0 {
		return ""
	}
	return id(n - 1)
}

// portalAction checks that the session may act.
func portalAction(ps *domain.PortalSession) error {
	if !ps.Writable() {
		return ErrPortalReadOnly
	}
	return nil
}

// PortalRetryDelivery is RetryDelivery of a delivery the session shows, as its account, in
// request requestID.
func (s *Service) PortalRetryDelivery(ctx context.Context, ps *domain.PortalSession, requestID, id string) (*domain.Delivery, error) {
	if _, _, err := s.PortalDelivery(ctx, ps, id); err != nil {
		return nil, err
	}
	if err := portalAction(ps); err != nil {
		return nil, err
	}
	d, err := s.RetryDelivery(ctx, portalCaller(ps, requestID), id)
	return d, notFoundAsPortal(err)
}

// PortalRotateSecret is RotateSecret of an endpoint the session shows, the replaced secret
// signing next to the new one for DefaultSecretOverlap, as the API's default.
func (s *Service) PortalRotateSecret(ctx context.Context, ps *domain.PortalSession, requestID, endpoint string) (*domain.Endpoint, error) {
	if _, err := s.PortalEndpoint(ctx, ps, endpoint); err != nil {
		return nil, err
	}
	if err := portalAction(ps); err != nil {
		return nil, err
	}
	e, err := s.RotateSecret(ctx, portalCaller(ps, requestID), endpoint, nil)
	return e, notFoundAsPortal(err)
}

// PortalSetEnabled enables or disables an endpoint the session shows: the API's Update of
// status, raising webhook_endpoint.updated naming the portal's request when it changes.
func (s *Service) PortalSetEnabled(ctx context.Context, ps *domain.PortalSession, requestID, endpoint string, enabled bool) (*domain.Endpoint, error) {
	if _, err := s.PortalEndpoint(ctx, ps, endpoint); err != nil {
		return nil, err
	}
	if err := portalAction(ps); err != nil {
		return nil, err
	}
	status := string(domain.StatusDisabled)
	if enabled {
		status = string(domain.StatusEnabled)
	}
	e, err := s.Update(ctx, portalCaller(ps, requestID), endpoint, domain.Changes{Status: &status})
	return e, notFoundAsPortal(err)
}

// PurgePortalSessions removes the sessions that expired before now, and returns how many.
func (s *Service) PurgePortalSessions(ctx context.Context) (int64, error) {
	if s.Portals == nil {
		return 0, nil
	}
	return s.Portals.Purge(ctx, s.Now())
}
