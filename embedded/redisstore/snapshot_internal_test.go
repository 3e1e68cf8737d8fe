package redisstore

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// clocked is a miniredis whose TTLs follow a clock the test moves (SetTime), as the Store's
// follow the wall clock.
func clocked(now time.Time) *miniredis.Miniredis {
	m := miniredis.NewMiniRedis()
	m.SetTime(now)
	m.ClockTTL(true)
	return m
}

// A snapshot keeps the chosen keys with their expiries as times: what expires while the store
// is stopped is not restored, and what is restored expires when it would have.
func TestSnapshotKeepsExpiries(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	binary := "D{\"f\":\"x\"}\n\xff\x00body" // values are bytes, not text
	m := clocked(t0)
	db := m.DB(0)
	db.HSet("gw:idem:43200:1", "acct:test:abc", binary, "acct:test:def", "second")
	db.SetTTL("gw:idem:43200:1", 2*time.Hour)
	_ = db.Set("gw:idem:short", "gone before the restart")
	db.SetTTL("gw:idem:short", 40*time.Minute)
	_ = db.Set("gw:idem:early", "gone before the save")
	db.SetTTL("gw:idem:early", 10*time.Minute)
	_ = db.Set("asynq:{events}:paused", "no TTL")
	_, _ = db.Push("asynq:{events}:pending", "t3", "t1", "t2")
	_, _ = db.SetAdd("asynq:queues", "events", "webhooks")
	_, _ = db.ZAdd("asynq:{webhooks}:scheduled", 1793534400, "wd_1:2")
	_, _ = db.ZAdd("asynq:{webhooks}:scheduled", 1793534401.5, "wd_2:1")
	_ = db.Set("rate:gw:acct:acct_dev:test", "not kept")
	db.SetTTL("rate:gw:acct:acct_dev:test", time.Hour)

	// Saved 30 minutes later: "early" has expired, the others have run 30 minutes of their TTL.
	saved := t0.Add(30 * time.Minute)
	m.SetTime(saved)
	snap, err := collect(m.DB(0), []string{"gw:idem:", "asynq:"}, saved)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(snap) // as written to the file
	if err != nil {
		t.Fatal(err)
	}
	var read snapshot
	if err := json.Unmarshal(b, &read); err != nil {
		t.Fatal(err)
	}

	// Restored an hour after t0: "short" (due at t0+40m) has expired while stopped.
	restored := t0.Add(time.Hour)
	m2 := clocked(restored)
	if n := apply(m2.DB(0), read, restored); n != 5 {
		t.Errorf("restored %d keys, want 5", n)
	}
	db2 := m2.DB(0)
	if got := db2.Keys(); !slices.Equal(got, []string{
		"asynq:queues", "asynq:{events}:paused", "asynq:{events}:pending", "asynq:{webhooks}:scheduled", "gw:idem:43200:1",
	}) {
		t.Fatalf("keys after restore: %q", got)
	}
	if got := db2.HGet("gw:idem:43200:1", "acct:test:abc"); got != binary {
		t.Errorf("hash field = %q, want %q", got, binary)
	}
	if got := db2.HGet("gw:idem:43200:1", "acct:test:def"); got != "second" {
		t.Errorf("second hash field = %q", got)
	}
	if ttl := db2.TTL("gw:idem:43200:1"); ttl != time.Hour {
		t.Errorf("record TTL after restore = %v, want 1h (it was due at t0+2h)", ttl)
	}
	if ttl := db2.TTL("asynq:{events}:paused"); ttl != 0 {
		t.Errorf("a key without TTL got one: %v", ttl)
	}
	if got, _ := db2.List("asynq:{events}:pending"); !slices.Equal(got, []string{"t3", "t1", "t2"}) {
		t.Errorf("list = %q, want its order kept", got)
	}
	if got, _ := db2.Members("asynq:queues"); !slices.Equal(got, []string{"events", "webhooks"}) {
		t.Errorf("set = %q", got)
	}
	if got, _ := db2.SortedSet("asynq:{webhooks}:scheduled"); got["wd_1:2"] != 1793534400 || got["wd_2:1"] != 1793534401.5 {
		t.Errorf("sorted set = %v", got)
	}

	// The restored TTL runs on the store's clock as any other.
	m2.SetTime(t0.Add(2*time.Hour + time.Second))
	if m2.Exists("gw:idem:43200:1") {
		t.Error("the restored record outlived its expiry")
	}
	if !m2.Exists("asynq:{events}:pending") {
		t.Error("a key without TTL expired")
	}
}

// Keys of a type a snapshot cannot hold are named, and the rest is kept all the same.
func TestSnapshotNamesWhatItCannotKeep(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	m := clocked(now)
	db := m.DB(0)
	_, _ = db.XAdd("k:stream", "*", []string{"f", "v"})
	_ = db.Set("k:string", "v")
	snap, err := collect(m.DB(0), []string{"k:"}, now)
	if err == nil || !strings.Contains(err.Error(), `"k:stream"`) {
		t.Errorf("error = %v, want it to name k:stream", err)
	}
	if len(snap.Keys) != 1 || snap.Keys[0].Key != "k:string" {
		t.Errorf("kept %+v, want k:string only", snap.Keys)
	}
}
