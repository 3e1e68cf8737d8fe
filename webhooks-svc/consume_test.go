package main

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/propagation"

	"rentalplatform/libs/asynqx"
	"rentalplatform/libs/events"
	"rentalplatform/libs/events/eventstest"
	"rentalplatform/libs/eventtask"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/outbox"
)

// publish puts each event on the instance's events queue the way another service's outbox
// does, one change at a time.
func (s *instance) publish(t *testing.T, evs ...events.Event) {
	t.Helper()
	for _, e := range evs {
		s.publishDocs(t, outbox.ToDoc(context.Background(), nil, e))
	}
}

// publishDocs publishes the events of one change together, as a store's fast path does.
func (s *instance) publishDocs(t *testing.T, docs ...outbox.Doc) {
	t.Helper()
	opt, err := asynqx.RedisOpt(s.env["REDIS_URL"])
	if err != nil {
		t.Fatal(err)
	}
	client := asynq.NewClient(opt)
	defer client.Close()
	pub := outbox.NewPublisher(asynqx.NewProducer(client, nil, propagation.TraceContext{}))
	if err := pub.Publish(context.Background(), docs...); err != nil {
		t.Fatal(err)
	}
}

func TestConsumesPublishedEvents(t *testing.T) {
	t.Parallel()
	s := start(t)
	c := s.client(t)
	wildcard := newReceiver(t, always(200))
	exact := newReceiver(t, always(200))
	other := newReceiver(t, always(200))
	otherMode := newReceiver(t, always(200))
	a := c.createEndpoint(wildcard.url(), "*").str("id")
	b := c.createEndpoint(exact.url(), "payment_request.succeeded").str("id")
	c.createEndpoint(other.url(), "payment_request.failed")
	c.otherMode().createEndpoint(otherMode.url(), "*")

	ev, err := eventstest.New(s.ids, time.Now(), eventstest.Change{
		Type: "payment_request.succeeded", Account: c.account,
		Object: map[string]any{"id": "preq_1", "object": "payment_request", "amount": 1000},
		Caller: &identity.Identity{Account: c.account, RequestID: "req_payments", IdempotencyKey: "pay-1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.publish(t, ev)
	got := wildcard.waitFor(t, "payment_request.succeeded", 1)[0]
	exact.waitFor(t, "payment_request.succeeded", 1)
	if got.header.Get("webhook-id") != ev.ID || got.event["request"].(map[string]any)["idempotency_key"] != "pay-1" ||
		got.event["data"].(map[string]any)["object"].(map[string]any)["amount"] != float64(1000) {
		t.Fatalf("delivered %s", got.body)
	}
	var stored response
	eventually(t, 20*time.Second, func() bool {
		stored = c.do("GET", "/v1/events/"+ev.ID, "").wantOK(t)
		return stored.body["pending_webhooks"] == float64(0)
	}, "both deliveries to succeed")

	// Published again (a relay racing the fast path, a redelivery): nothing is doubled.
	s.publish(t, ev)
	time.Sleep(500 * time.Millisecond)
	ds := c.deliveries("/v1/events/" + ev.ID + "/deliveries")
	var endpoints []string
	for _, d := range ds {
		endpoints = append(endpoints, d["webhook_endpoint"].(string))
	}
	slices.Sort(endpoints)
	want := []string{a, b}
	slices.Sort(want)
	if !slices.Equal(endpoints, want) {
		t.Fatalf("deliveries to %v, want %v", endpoints, want)
	}
	if n := len(wildcard.waitFor(t, "payment_request.succeeded", 1)); n != 1 {
		t.Fatalf("the wildcard endpoint got the event %d times", n)
	}
	for _, rc := range []*receiver{other, otherMode} {
		for _, r := range rc.all() {
			if r.eventType() == "payment_request.succeeded" {
				t.Fatalf("an unsubscribed endpoint got %s", r.body)
			}
		}
	}
	if ids := c.eventIDs("?type=payment_request.succeeded"); !slices.Equal(ids, []string{ev.ID}) {
		t.Fatalf("stored events %v", ids)
	}

	// An undecodable task is archived at once, not retried.
	s.wantArchived(t, asynq.NewTask(eventtask.TaskType, []byte(`{"id":"nope"}`)))
}

// wantArchived enqueues a task on the events queue, which holds nothing archived yet, and waits
// for it to be archived.
func (s *instance) wantArchived(t *testing.T, task *asynq.Task) {
	t.Helper()
	opt, err := asynqx.RedisOpt(s.env["REDIS_URL"])
	if err != nil {
		t.Fatal(err)
	}
	client := asynq.NewClient(opt)
	defer client.Close()
	if _, err := client.Enqueue(task, asynq.Queue(eventtask.Queue)); err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	eventually(t, 20*time.Second, func() bool {
		archived, err := insp.ListArchivedTasks(eventtask.Queue)
		return err == nil && len(archived) == 1
	}, "the bad %s task to be archived", task.Type())
}

// The events of one change come as one batch task (outbox.Publisher): each is stored and
// delivered as if it had come alone, and a batch published again doubles nothing.
func TestConsumesBatches(t *testing.T) {
	t.Parallel()
	s := start(t)
	c := s.client(t)
	rc := newReceiver(t, always(200))
	c.createEndpoint(rc.url(), "*")
	var docs []outbox.Doc
	var want []string
	for i, typ := range []string{"payment_request.processing", "payment_request.succeeded", "payment_request.created"} {
		ev, err := eventstest.New(s.ids, time.Now(), eventstest.Change{
			Type: typ, Account: c.account,
			Object: map[string]any{"id": "preq_" + strconv.Itoa(i), "object": "payment_request"},
		})
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, outbox.ToDoc(context.Background(), nil, ev))
		want = append(want, ev.ID)
	}
	for range 2 {
		s.publishDocs(t, docs...)
	}
	for _, typ := range []string{"payment_request.processing", "payment_request.succeeded", "payment_request.created"} {
		rc.waitFor(t, typ, 1)
	}
	eventually(t, 20*time.Second, func() bool {
		got := c.eventIDs("?type=payment_request.*")
		slices.Sort(got)
		return slices.Equal(got, want) // ids sort in the order they were made
	}, "the batch's 3 events to be stored")
	time.Sleep(500 * time.Millisecond)
	n := 0
	for _, r := range rc.all() {
		if strings.HasPrefix(r.eventType(), "payment_request.") {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("the endpoint got %d deliveries of the batch's events, want one per event", n)
	}

	// A batch with an element that is not an event is archived at once, none of it stored.
	s.wantArchived(t, asynq.NewTask(eventtask.BatchTaskType, []byte(`{"events":[{"id":"nope"}]}`)))
}
