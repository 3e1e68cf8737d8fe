package docstore_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/docstore"
	"rentalplatform/libs/events"
	"rentalplatform/libs/identity"
)

// OwnedBy implements docstore.Owned: the suite's accounts live in test mode only.
func (a account) OwnedBy(owner string, livemode bool) bool { return a.Owner == owner && !livemode }

// wallet is the aggregate an account document holds.
type wallet struct {
	id, owner string
	balance   int
	tags      []string
	events.Recorder
}

func (w *wallet) Account() string { return w.owner }
func (w *wallet) Livemode() bool  { return false }

func (w *wallet) deposit(n int) {
	w.balance += n
	w.RaiseUpdate("wallet.updated")
}

func walletOf(d account) *wallet {
	return &wallet{id: d.ID, owner: d.Owner, balance: d.Balance, tags: slices.Clone(d.Tags)}
}

func setWallet(d *account, w *wallet) {
	d.ID, d.Owner, d.Balance, d.Tags = w.id, w.owner, w.balance, slices.Clone(w.tags)
}

type walletJSON struct {
	ID      string `json:"id"`
	Balance int    `json:"balance"`
	Tags    int    `json:"tags"`
}

func wallets(e *env) *docstore.Aggregates[account, *wallet] {
	return &docstore.Aggregates[account, *wallet]{
		Docs: e.coll, NotFound: notFound, Of: walletOf, Set: setWallet,
		Events: &events.Emitter[*wallet]{IDs: e.gen, Now: time.Now, Object: func(w *wallet) any {
			return walletJSON{ID: w.id, Balance: w.balance, Tags: len(w.tags)}
		}},
	}
}

// Aggregates stores each change with the events it raised, rendered once, in the same write;
// owner-checked reads and writes refuse another owner's aggregate and a caller with none.
func TestAggregates(t *testing.T) {
	eachStrategy(t, func(t *testing.T, s strategy) {
		e := newEnv(t, s, testkit.MongoDatabase(t), 0)
		ws := wallets(e)
		ctx := events.CausedBy(context.Background(), identity.Identity{Account: "acct_1", RequestID: "req_1"})

		w := &wallet{id: "w_1", owner: "acct_1", balance: 5, tags: []string{"a"}}
		w.Raise("wallet.created")
		if created, err := ws.Insert(ctx, w); err != nil || !created {
			t.Fatalf("insert: %v %v", created, err)
		}
		if created, err := ws.Insert(ctx, &wallet{id: "w_1", owner: "acct_1"}); err != nil || created {
			t.Fatalf("a second w_1: %v %v", created, err)
		}

		answerCtx, answer := events.WithAnswer(ctx)
		got, err := ws.Update(answerCtx, "w_1", "acct_1", false, func(w *wallet) error {
			w.tags = append(w.tags, "b")
			w.deposit(10)
			return nil
		})
		if err != nil || got.balance != 15 {
			t.Fatalf("update: %+v %v", got, err)
		}
		if b, ok := answer.For(got); !ok || string(b) != `{"id":"w_1","balance":15,"tags":2}` {
			t.Errorf("answer kept: %s %v", b, ok)
		}

		// Another owner, the other mode, and no owner at all: not found, nothing written.
		for _, o := range []struct {
			owner string
			live  bool
		}{{"acct_2", false}, {"acct_1", true}, {"", false}} {
			if _, err := ws.Get(ctx, "w_1", o.owner, o.live); !errors.Is(err, errNoAccount) {
				t.Errorf("get as %v: %v", o, err)
			}
			if _, err := ws.Update(ctx, "w_1", o.owner, o.live, func(w *wallet) error { w.deposit(1); return nil }); !errors.Is(err, errNoAccount) {
				t.Errorf("update as %v: %v", o, err)
			}
		}
		// The service's own work: no owner check, and its events name no request.
		if _, err := ws.UpdateAny(context.Background(), "w_1", func(w *wallet) error { w.Raise("wallet.audited"); return nil }); err != nil {
			t.Fatal(err)
		}
		if w, err := ws.Load(ctx, "w_1"); err != nil || w.balance != 15 || len(w.tags) != 2 || len(w.Raised()) != 0 {
			t.Fatalf("load: %+v %v", w, err)
		}
		waitFor(t, func() bool { return len(e.queue.Events()) == 3 })
		evs := e.queue.Events()
		byType := map[string]events.Event{}
		for _, ev := range evs {
			byType[ev.Type] = ev
		}
		up := byType["wallet.updated"]
		if string(up.Data.Object) != `{"id":"w_1","balance":15,"tags":2}` || string(up.Data.PreviousAttributes) != `{"balance":5,"tags":1}` {
			t.Errorf("wallet.updated: %s previous %s", up.Data.Object, up.Data.PreviousAttributes)
		}
		if r := byType["wallet.created"].Request.ID; r == nil || *r != "req_1" {
			t.Errorf("wallet.created request %v", r)
		}
		if r := byType["wallet.audited"].Request.ID; r != nil {
			t.Errorf("background wallet.audited names request %s", *r)
		}
	})
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
