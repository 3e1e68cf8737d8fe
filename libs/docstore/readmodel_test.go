package docstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/docstore"
)

// A read model answers from memory: what this process's collection stores is seen at once
// (deleted documents as deleted entries), what another process stores once the scope is
// older than the ttl, and concurrent readers of a stale scope share one load.
func TestReadModel(t *testing.T) {
	eachStrategy(t, func(t *testing.T, s strategy) {
		raw := testkit.MongoDatabase(t)
		e, other := newEnv(t, s, raw, 0), newEnv(t, s, raw, 0) // two processes
		ctx := t.Context()
		const ttl = 300 * time.Millisecond
		loads := 0
		model := docstore.NewReadModel(e.coll, ttl, 10, func(a *account) string { return a.Owner },
			func(ctx context.Context, owner string) ([]account, error) {
				loads++
				return e.coll.Find(ctx, bson.D{{Key: "owner", Value: owner}})
			})
		view := func() map[string]account {
			t.Helper()
			docs, err := model.Get(ctx, "ann")
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]account{}
			for _, d := range docs {
				if len(d.Outbox) > 0 {
					t.Errorf("%s kept with its outbox", d.ID)
				}
				out[d.ID] = d
			}
			return out
		}
		if _, err := e.coll.Insert(ctx, account{Meta: docstore.Meta{ID: "acc_1"}, Owner: "ann"}); err != nil {
			t.Fatal(err)
		}
		if v := view(); len(v) != 1 || loads != 1 {
			t.Fatalf("first read: %v after %d loads", v, loads)
		}
		// This process's writes, at once and without a load.
		if _, err := e.coll.Insert(ctx, account{Meta: docstore.Meta{ID: "acc_2"}, Owner: "ann"}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.coll.Update(ctx, "acc_1", func(a *account) error { a.Balance = 5; a.Raise(e.event(t, "acc_1")); return nil }); err != nil {
			t.Fatal(err)
		}
		if _, err := e.coll.Update(ctx, "acc_2", func(a *account) error { a.Deleted = true; return nil }); err != nil {
			t.Fatal(err)
		}
		if v := view(); v["acc_1"].Balance != 5 || !v["acc_2"].Deleted || loads != 1 {
			t.Fatalf("after local writes: %+v after %d loads", v, loads)
		}
		// One document, as Get has it, from the same scope.
		for _, want := range []struct {
			id      string
			ok      bool
			balance int
			deleted bool
		}{{"acc_1", true, 5, false}, {"acc_2", true, 0, true}, {"acc_9", false, 0, false}} {
			d, ok, err := model.Find(ctx, "ann", want.id)
			if err != nil || ok != want.ok || d.Balance != want.balance || d.Deleted != want.deleted || (ok && len(d.Outbox) > 0) {
				t.Errorf("Find %s: %+v, %v, %v; want found %v, balance %d, deleted %v, no outbox", want.id, d, ok, err, want.ok, want.balance, want.deleted)
			}
		}
		if loads != 1 {
			t.Fatalf("Find loaded the scope again: %d loads", loads)
		}
		if !e.db.MultiProcess() {
			// The embedded store: one process owns the data, and its collections answer queries
			// from the fields they hold of what it wrote (queryindex.go), so there is no other
			// process's write to see.
			return
		}
		// Another process's write: seen once the scope is stale.
		if _, err := other.coll.Insert(ctx, account{Meta: docstore.Meta{ID: "acc_3"}, Owner: "ann"}); err != nil {
			t.Fatal(err)
		}
		if _, ok := view()["acc_3"]; ok {
			t.Fatal("another process's write seen before the ttl")
		}
		time.Sleep(ttl)
		v := view()
		ids := make([]string, 0, len(v))
		for id := range v {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		if !slices.Equal(ids, []string{"acc_1", "acc_3"}) || v["acc_1"].Balance != 5 || loads != 2 {
			t.Fatalf("after the ttl: %v (%d loads); want acc_1 (balance 5) and acc_3, the removed acc_2 gone", ids, loads)
		}
	})
}
