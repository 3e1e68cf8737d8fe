package app

import (
	"bytes"
	"encoding/json"
	"fmt"

	"rentalplatform/libs/events"

	"rentalplatform/webhooks-svc/internal/domain"
)

// emit raises an event of type typ about e, as it is now, caused by caller (nil: a background
// transition). previous holds the changed top-level fields with their old values (updates).
func (s *Service) emit(e *domain.Endpoint, typ string, caller *Caller, previous map[string]any) error {
	c := events.Change{Type: typ, Account: e.Account(), Livemode: e.Livemode(), Object: s.cfg.RenderEndpoint(e), Previous: previous}
	if caller != nil {
		c.Caller = caller.identity()
	}
	ev, err := events.New(s.IDs, s.Clock.Now(), c)
	if err != nil {
		return err
	}
	e.Emit(ev)
	return nil
}

// snapshot is an endpoint rendered as the API shows it, by top-level field.
type snapshot map[string]json.RawMessage

func (s *Service) snapshot(e *domain.Endpoint) (snapshot, error) {
	b, err := json.Marshal(s.cfg.RenderEndpoint(e))
	if err != nil {
		return nil, fmt.Errorf("render webhook endpoint: %w", err)
	}
	var out snapshot
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("render webhook endpoint: %w", err)
	}
	return out, nil
}

// previous returns the fields of before that after changed, with their old values; nil when
// nothing visible changed.
func previous(before, after snapshot) map[string]any {
	var out map[string]any
	for k, old := range before {
		if !bytes.Equal(old, after[k]) {
			if out == nil {
				out = map[string]any{}
			}
			out[k] = old
		}
	}
	return out
}
