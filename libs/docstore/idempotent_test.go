package docstore_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"rentalplatform/libs/docstore"
	"rentalplatform/libs/events"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/outbox/outboxtest"
	"rentalplatform/libs/servicetest"
)

// leaseDoc is a document of an API object: owned by an account in one mode, created by callers.
type leaseDoc struct {
	docstore.Meta `bson:",inline"`
	Account       string `bson:"account"`
	Livemode      bool   `bson:"livemode"`
	Rent          int    `bson:"rent"`
}

func (d leaseDoc) OwnedBy(account string, livemode bool) bool {
	return d.Account == account && d.Livemode == livemode
}

type lease struct {
	id, account string
	livemode    bool
	rent        int
	events.Recorder
}

func (l *lease) Account() string { return l.account }
func (l *lease) Livemode() bool  { return l.livemode }

func newLease(id, account string, livemode bool, rent int) *lease {
	l := &lease{id: id, account: account, livemode: livemode, rent: rent}
	l.Raise("lease.created")
	return l
}

// leases opens the collection of leases of a new database, on the server's own strategy (the
// index is the server's: partial on MongoDB, plain on the embedded store).
func leases(t *testing.T) (*docstore.Aggregates[leaseDoc, *lease], *outboxtest.Queue, *docstore.DB) {
	t.Helper()
	db := servicetest.Store(t)
	q := &outboxtest.Queue{}
	coll := docstore.NewCollection[leaseDoc](db, "leases", docstore.Options{
		NotFound: notFound, Outbox: outboxtest.NewRelay(q), IdempotentCreates: true,
	})
	for range 2 { // a second start finds the index there
		if err := coll.EnsureIndexes(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if names := servicetest.IndexNames(t, db, "leases"); !slices.Contains(names, docstore.IdempotencyIndexName) {
		t.Fatalf("indexes %v", names)
	}
	return &docstore.Aggregates[leaseDoc, *lease]{
		Docs: coll, NotFound: notFound,
		Of: func(d leaseDoc) *lease {
			return &lease{id: d.ID, account: d.Account, livemode: d.Livemode, rent: d.Rent}
		},
		Set: func(d *leaseDoc, l *lease) { d.ID, d.Account, d.Livemode, d.Rent = l.id, l.account, l.livemode, l.rent },
		Events: &events.Emitter[*lease]{IDs: ids.NewGenerator(nil), Now: time.Now, Object: func(l *lease) any {
			return map[string]any{"id": l.id, "rent": l.rent}
		}},
	}, q, db
}

func by(account string, livemode bool, key string) context.Context {
	return events.CausedBy(context.Background(), identity.Identity{Account: account, Livemode: livemode, RequestID: "req_" + key, IdempotencyKey: key})
}

// A create retried with the same Idempotency-Key stores nothing, raises nothing, and answers
// with what the first stored; the key is the owner's own (account and mode), each element of a
// bulk create has its own, and creates without a key never collide.
func TestIdempotentCreates(t *testing.T) {
	t.Parallel()
	ls, q, db := leases(t)
	once := func(ctx context.Context, as ...*lease) []docstore.Insertion[*lease] {
		t.Helper()
		out, err := ls.InsertOnce(ctx, as)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	count := func(filter bson.D) int64 {
		t.Helper()
		n, err := db.Collection("leases").CountDocuments(t.Context(), filter)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	first := once(by("acct_1", false, "k1"), newLease("ls_1", "acct_1", false, 100))[0]
	if !first.New || first.Replay || first.Stored.id != "ls_1" {
		t.Fatalf("first create: %+v", first)
	}
	again := once(by("acct_1", false, "k1"), newLease("ls_2", "acct_1", false, 999))[0]
	if again.New || !again.Replay || again.Stored.id != "ls_1" || again.Stored.rent != 100 {
		t.Fatalf("retry: %+v", again)
	}
	if n := count(bson.D{{Key: "create_key", Value: "k1"}}); n != 1 {
		t.Fatalf("%d documents of key k1", n)
	}

	// The same key for the other mode and another account: their own creates.
	for _, o := range []struct {
		account string
		live    bool
		id      string
	}{{"acct_1", true, "ls_3"}, {"acct_2", false, "ls_4"}} {
		if got := once(by(o.account, o.live, "k1"), newLease(o.id, o.account, o.live, 1))[0]; !got.New {
			t.Fatalf("%s %v with key k1: %+v", o.account, o.live, got)
		}
	}
	// No key: no field stored, and no collision between such creates.
	for _, id := range []string{"ls_5", "ls_6"} {
		if got := once(by("acct_1", false, ""), newLease(id, "acct_1", false, 1))[0]; !got.New {
			t.Fatalf("%s without a key: %+v", id, got)
		}
	}
	if n := count(bson.D{{Key: "_id", Value: "ls_5"}, {Key: "create_key", Value: bson.D{{Key: "$exists", Value: true}}}}); n != 0 {
		t.Fatal("a create without a key stored one")
	}
	// A background insert (no request): no key either.
	if got := once(context.Background(), newLease("ls_7", "acct_1", false, 1))[0]; !got.New {
		t.Fatalf("background insert: %+v", got)
	}

	// Bulk: each element has a key of its own; a retry replays each, in order.
	bulk := once(by("acct_1", false, "kb"), newLease("ls_b0", "acct_1", false, 10), newLease("ls_b1", "acct_1", false, 11))
	if !bulk[0].New || !bulk[1].New {
		t.Fatalf("bulk: %+v", bulk)
	}
	retry := once(by("acct_1", false, "kb"), newLease("ls_x0", "acct_1", false, 10), newLease("ls_x1", "acct_1", false, 11))
	if !retry[0].Replay || retry[0].Stored.id != "ls_b0" || !retry[1].Replay || retry[1].Stored.id != "ls_b1" {
		t.Fatalf("bulk retry: %+v", retry)
	}
	if n := count(bson.D{}); n != 8 {
		t.Fatalf("%d documents stored, want 8", n)
	}

	// An id taken (not the key): refused, neither new nor a replay.
	if got := once(by("acct_1", false, "k9"), newLease("ls_1", "acct_1", false, 1))[0]; got.New || got.Replay {
		t.Fatalf("taken id: %+v", got)
	}

	// One created event per document stored: the retries raised none.
	waitFor(t, func() bool { return len(q.Events()) >= 8 })
	time.Sleep(50 * time.Millisecond)
	about := map[string]int{}
	for _, ev := range q.Events() {
		var o struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(ev.Data.Object, &o); err != nil {
			t.Fatal(err)
		}
		about[o.ID]++
	}
	want := map[string]int{"ls_1": 1, "ls_3": 1, "ls_4": 1, "ls_5": 1, "ls_6": 1, "ls_7": 1, "ls_b0": 1, "ls_b1": 1}
	if len(about) != len(want) {
		t.Fatalf("events about %v, want %v", about, want)
	}
	for id, n := range want {
		if about[id] != n {
			t.Fatalf("events about %v, want %v", about, want)
		}
	}
}
