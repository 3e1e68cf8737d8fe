package mongo

import (
	"context"

	"rentalplatform/libs/events"
	"rentalplatform/libs/outbox"
)

// FastPath implements app.Publisher: it hands the events an endpoint write just stored to the
// relay's fast path, which publishes them and clears them from the endpoint's outbox.
type FastPath struct {
	Relay *outbox.Relay
	Repo  *Repository
}

// Dispatch publishes evs, raised under ctx on endpoint id. The outbox entries are rebuilt from
// the same events and context the write stored them with, so they match the stored ones
// exactly and the clear removes them; were they not to, the relay would publish them again
// later, and the event store would drop the duplicates.
func (f FastPath) Dispatch(ctx context.Context, id string, evs []events.Event) {
	f.Relay.Dispatch(ctx, f.Repo.OutboxStore(), id, f.Repo.OutboxDocs(ctx, evs))
}
