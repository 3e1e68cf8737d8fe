package redis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/events"

	redisfeed "rentalplatform/webhooks-svc/internal/adapters/redis"
)

// The feed on a real Redis (REDIS_URL, else the embedded one).

func client(t *testing.T) *redis.Client {
	opt, err := redis.ParseURL(testkit.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	rc := redis.NewClient(opt)
	t.Cleanup(func() { rc.Close() })
	return rc
}

func event(n int, account string) events.Event {
	return events.Event{ID: fmt.Sprintf("evt_%024d", n), Type: "payment_request.created", Account: account,
		Object: "event", APIVersion: events.APIVersion, Created: time.Now().Unix(), Data: events.Data{Object: json.RawMessage(`{"id":"x"}`)}}
}

func read(t *testing.T, f *redisfeed.Feed, account, after string) []string {
	t.Helper()
	entries, lost, err := f.Read(context.Background(), account, false, after, 10*time.Millisecond, 100)
	if err != nil || lost {
		t.Fatalf("Read: lost %v, %v", lost, err)
	}
	var ids []string
	for _, e := range entries {
		var v struct{ ID, Object string }
		if err := json.Unmarshal(e.Data, &v); err != nil || v.ID != e.Event || v.Object != "event" {
			t.Fatalf("entry %+v: data %s is not the event (%v)", e, e.Data, err)
		}
		ids = append(ids, e.Event)
	}
	return ids
}

func TestFeedKeepsEventsOnlyForListenersOnceEachInOrder(t *testing.T) {
	ctx := context.Background()
	rc := client(t)
	f := redisfeed.NewFeed(rc, redisfeed.Config{Retention: time.Hour, MaxLen: 100})

	if err := f.Append(ctx, event(1, "acct_a")); err != nil {
		t.Fatal(err)
	}
	if n := rc.Exists(ctx, "feed:{acct_a:test}").Val(); n != 0 {
		t.Fatal("an event was kept for an account nobody listens to")
	}
	pos, gap, err := f.Open(ctx, "acct_a", false, "")
	if err != nil || gap || pos != "0-0" {
		t.Fatalf("Open of an empty feed: %q %v %v", pos, gap, err)
	}
	for _, n := range []int{2, 3, 2, 4, 3} { // 2 and 3 appended again: kept once
		if err := f.Append(ctx, event(n, "acct_a")); err != nil {
			t.Fatal(err)
		}
	}
	other := event(9, "acct_b")
	if err := f.Append(ctx, other); err != nil {
		t.Fatal(err)
	}
	got := read(t, f, "acct_a", pos)
	want := []string{event(2, "").ID, event(3, "").ID, event(4, "").ID}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read %v, want %v", got, want)
	}
	// A new listener starts after the newest entry.
	pos, _, _ = f.Open(ctx, "acct_a", false, "")
	if got := read(t, f, "acct_a", pos); len(got) != 0 {
		t.Fatalf("a new listener got old events %v", got)
	}
	// Live mode is another feed.
	if _, _, err := f.Open(ctx, "acct_a", true, ""); err != nil {
		t.Fatal(err)
	}
	if n := rc.XLen(ctx, "feed:{acct_a:live}").Val(); n != 0 {
		t.Fatalf("live feed holds %d test events", n)
	}
}

func TestFeedReadWaitsForTheNextEvent(t *testing.T) {
	ctx := context.Background()
	f := redisfeed.NewFeed(client(t), redisfeed.Config{Retention: time.Hour, MaxLen: 100})
	pos, _, _ := f.Open(ctx, "acct_a", false, "")
	go func() {
		time.Sleep(100 * time.Millisecond)
		f.Append(ctx, event(1, "acct_a"))
	}()
	start := time.Now()
	entries, _, err := f.Read(ctx, "acct_a", false, pos, 5*time.Second, 10)
	if err != nil || len(entries) != 1 {
		t.Fatalf("Read: %v %v", entries, err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Read returned after %v, not when the event came", took)
	}
	// Nothing more: an empty answer after the wait.
	entries, _, err = f.Read(ctx, "acct_a", false, entries[0].Position, 50*time.Millisecond, 10)
	if err != nil || len(entries) != 0 {
		t.Fatalf("Read past the end: %v %v", entries, err)
	}
}

func TestFeedTellsWhatMayBeMissing(t *testing.T) {
	ctx := context.Background()
	rc := client(t)
	now := time.Now()
	f := redisfeed.NewFeed(rc, redisfeed.Config{Retention: time.Hour, MaxLen: 3, Now: func() time.Time { return now }})
	start, _, _ := f.Open(ctx, "acct_a", false, "")
	var positions []string
	for n := 1; n <= 5; n++ {
		f.Append(ctx, event(n, "acct_a"))
	}
	entries, _, _ := f.Read(ctx, "acct_a", false, start, time.Millisecond, 10)
	for _, e := range entries {
		positions = append(positions, e.Position)
	}
	if len(positions) != 3 {
		t.Fatalf("kept %d entries, want the bound 3", len(positions))
	}
	for _, c := range []struct {
		name  string
		after string
		gap   bool
	}{
		{"resumed from before the trimmed entries", start, true},
		{"resumed from the oldest kept", positions[0], false},
		{"resumed from the newest", positions[2], false},
		{"resumed from before the retention", fmt.Sprintf("%d-0", now.Add(-2*time.Hour).UnixMilli()), true},
	} {
		if _, gap, err := f.Open(ctx, "acct_a", false, c.after); err != nil || gap != c.gap {
			t.Errorf("%s: gap %v (%v), want %v", c.name, gap, err, c.gap)
		}
	}

	// Redis losing its data: the listener's next read says so, and so does a resume.
	if err := rc.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, lost, err := f.Read(ctx, "acct_a", false, positions[2], time.Millisecond, 10); err != nil || !lost {
		t.Fatalf("Read after a flush: lost %v (%v), want true", lost, err)
	}
	if _, lost, _ := f.Read(ctx, "acct_a", false, positions[2], time.Millisecond, 10); lost {
		t.Fatal("the loss was told twice")
	}
	rc.FlushDB(ctx)
	if _, gap, _ := f.Open(ctx, "acct_a", false, positions[2]); !gap {
		t.Fatal("a resume after a flush was not told of the gap")
	}
}
