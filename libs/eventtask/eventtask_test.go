package eventtask

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"rentalplatform/libs/events"
	"rentalplatform/libs/events/eventstest"
	"rentalplatform/libs/ids"
)

type obj struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

func TestPayloadRoundTrip(t *testing.T) {
	e, _ := eventstest.New(ids.NewGenerator(nil), time.Now(), eventstest.Change{Type: "x.y", Account: "acct_a", Livemode: true, Object: obj{ID: "a"}})
	b, err := Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Unmarshal(b)
	if err != nil || got.ID != e.ID || got.Account != "acct_a" || !got.Livemode || string(got.Data.Object) != `{"id":"a","status":""}` {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for _, bad := range []string{`{`, `{}`, `{"id":"evt_x","type":"a.b","account":"acct_a","data":{"object":{}}}`} {
		if _, err := Unmarshal([]byte(bad)); err == nil {
			t.Errorf("Unmarshal(%s) accepted", bad)
		}
	}
}

func TestBatchRoundTrip(t *testing.T) {
	g := ids.NewGenerator(nil)
	var evs []events.Event
	for i := range 3 {
		e, _ := eventstest.New(g, time.Now(), eventstest.Change{Type: "x.y", Account: "acct_a", Object: obj{ID: strconv.Itoa(i)}})
		evs = append(evs, e)
	}
	b, err := MarshalBatch(evs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnmarshalBatch(b)
	if err != nil || len(got) != 3 {
		t.Fatalf("round trip: %d events, %v", len(got), err)
	}
	for i := range got {
		if got[i].ID != evs[i].ID || string(got[i].Data.Object) != string(evs[i].Data.Object) {
			t.Errorf("event %d: %+v, want %+v", i, got[i], evs[i])
		}
	}
	if _, err := MarshalBatch(nil); err == nil {
		t.Error("MarshalBatch accepted no events")
	}
	if _, err := MarshalBatch(make([]events.Event, MaxBatch+1)); err == nil {
		t.Error("MarshalBatch accepted more than MaxBatch events")
	}
	if got, err := FromTask(BatchTaskType, b); err != nil || len(got) != 3 {
		t.Errorf("FromTask(batch): %d events, %v", len(got), err)
	}
	one, _ := Marshal(evs[0])
	if got, err := FromTask(TaskType, one); err != nil || len(got) != 1 || got[0].ID != evs[0].ID {
		t.Errorf("FromTask(event): %v, %v", got, err)
	}
	if _, err := FromTask("webhook:deliver", one); err == nil {
		t.Error("FromTask accepted another task type")
	}
	for _, bad := range []string{`{`, `{}`, `{"events":[]}`, `{"events":[` + string(one) + `,{"id":"evt_x"}]}`, string(one)} {
		if _, err := UnmarshalBatch([]byte(bad)); err == nil {
			t.Errorf("UnmarshalBatch(%.60s…) accepted", bad)
		}
	}
}

// A payload with half a destination is refused rather than delivered unsigned or nowhere.
func TestHalfADestinationIsRefused(t *testing.T) {
	e, err := eventstest.New(ids.NewGenerator(nil), time.Now(), eventstest.Change{Type: "x.y", Account: "acct_a", Object: obj{ID: "vs_1"},
		Destination: &events.Destination{URL: "https://hooks.example.com/x", Secret: "whsec_c2VjcmV0"}})
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := Marshal(e)
	for _, half := range []string{`"secret":"whsec_c2VjcmV0"`, `"url":"https://hooks.example.com/x"`} {
		bad := strings.Replace(string(payload), half, strings.Split(half, ":")[0]+`:""`, 1)
		if _, err := Unmarshal([]byte(bad)); err == nil {
			t.Errorf("Unmarshal accepted a destination without %s: %s", half, bad)
		}
	}
}
