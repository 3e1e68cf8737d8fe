package servicetest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"rentalplatform/libs/asynqx"
	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtask"
)

// PublishedAbout returns the events a service under test put on the events queue at redisURL
// (nothing consumes it in a component test) whose data.object is id, or names id in one of the
// fields refs (a charge's "payment_request"), oldest first.
func PublishedAbout(t testing.TB, redisURL, id string, refs ...string) []events.Event {
	t.Helper()
	opt, err := asynqx.RedisOpt(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	infos, err := insp.ListPendingTasks(eventtask.Queue, asynq.PageSize(1000))
	if err != nil && !strings.Contains(err.Error(), "not found") {
		t.Fatal(err)
	}
	var out []events.Event
	for _, ti := range infos {
		evs, err := eventtask.FromTask(ti.Type, ti.Payload)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			var o map[string]any
			_ = json.Unmarshal(ev.Data.Object, &o)
			about := o["id"] == id
			for _, r := range refs {
				about = about || o[r] == id
			}
			if about {
				out = append(out, ev)
			}
		}
	}
	slices.SortFunc(out, func(a, b events.Event) int { return strings.Compare(a.ID, b.ID) })
	return out
}
