package redis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
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

// commands counts the commands a client sends, by name.
type commands struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *commands) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.add(cmd)
		return next(ctx, cmd)
	}
}

func (c *commands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.add(cmd)
		}
		return next(ctx, cmds)
	}
}

func (c *commands) add(cmd redis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[strings.ToLower(cmd.Name())]++
}

func (c *commands) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

func TestFeedAppendToAFeedNobodyListensToAsksRedisOncePerRefresh(t *testing.T) {
	ctx := context.Background()
	rc := client(t)
	var seen commands
	rc.AddHook(&seen)
	f := redisfeed.NewFeed(rc, redisfeed.Config{Retention: time.Hour, MaxLen: 100, Refresh: time.Hour})
	for n := range 200 {
		if err := f.Append(ctx, event(n, "acct_quiet")); err != nil {
			t.Fatal(err)
		}
	}
	if got := seen.count("evalsha") + seen.count("eval"); got != 0 {
		t.Errorf("%d append scripts for a feed nobody listens to, want 0", got)
	}
	if got := seen.count("zrangebyscore"); got != 1 {
		t.Errorf("%d reads of the listened feeds for 200 events within one Refresh, want 1", got)
	}
	// Someone else's listener is no reason to run the script for this feed.
	other := redisfeed.NewFeed(rc, redisfeed.Config{Retention: time.Hour, MaxLen: 100, Refresh: time.Millisecond})
	if _, _, err := other.Open(ctx, "acct_loud", false, ""); err != nil {
		t.Fatal(err)
	}
	g := redisfeed.NewFeed(rc, redisfeed.Config{Retention: time.Hour, MaxLen: 100, Refresh: time.Hour})
	for n := range 10 {
		g.Append(ctx, event(n, "acct_quiet"))
		g.Append(ctx, event(100+n, "acct_loud"))
	}
	if got := seen.count("evalsha"); got != 10 { // (the first also sent as EVAL: not loaded yet)
		t.Errorf("%d append scripts, want the 10 of the feed listened to", got)
	}
}

// A process that read the list of listened feeds just before a listener opened (from another
// process) appends every event stored after the Open returned.
func TestFeedOpenWaitsForEveryProcessToSeeTheListener(t *testing.T) {
	ctx := context.Background()
	const refresh = 300 * time.Millisecond
	rc := client(t) // one Redis, two processes' feeds
	listener := redisfeed.NewFeed(rc, redisfeed.Config{Retention: time.Hour, MaxLen: 1000, Refresh: refresh})
	appender := redisfeed.NewFeed(rc, redisfeed.Config{Retention: time.Hour, MaxLen: 1000, Refresh: refresh})

	// The appender reads the list (nobody listens yet), and goes on appending an event every
	// few milliseconds, noting when each call started.
	if err := appender.Append(ctx, event(0, "acct_a")); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	started := map[string]time.Time{}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := 1; ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			ev := event(n, "acct_a")
			mu.Lock()
			started[ev.ID] = time.Now()
			mu.Unlock()
			if err := appender.Append(ctx, ev); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	begin := time.Now()
	pos, _, err := listener.Open(ctx, "acct_a", false, "")
	opened := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if took := opened.Sub(begin); took < refresh {
		t.Errorf("Open returned after %s, before every process could have seen the listener (%s)", took, refresh)
	}
	time.Sleep(refresh)
	close(stop)
	<-done

	got := map[string]bool{}
	for after := pos; ; {
		entries, _, err := listener.Read(ctx, "acct_a", false, after, time.Millisecond, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) == 0 {
			break
		}
		for _, e := range entries {
			got[e.Event] = true
		}
		after = entries[len(entries)-1].Position
	}
	mu.Lock()
	defer mu.Unlock()
	var after int
	for id, at := range started {
		if at.After(opened) {
			after++
			if !got[id] {
				t.Errorf("event %s, appended %s after the Open returned, is not in the feed", id, at.Sub(opened))
			}
		}
	}
	if after < 10 {
		t.Fatalf("only %d events appended after the Open: the test proves nothing", after)
	}
}
