package mongo_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	keystore "rentalplatform/gateway/internal/adapters/mongo"
	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/servicetest"
)

// TestKeysContract runs the KeyRepository contract against MongoDB (the embedded store
// unless MONGODB_URI is set).
func TestKeysContract(t *testing.T) {
	db := servicetest.Store(t)
	repo, err := keystore.NewKeys(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	// Creating the indexes again is a no-op, as at every gateway start.
	if _, err := keystore.NewKeys(t.Context(), db); err != nil {
		t.Fatalf("second NewKeys: %v", err)
	}
	runContract(t, repo)
}

// runContract is the contract every domain.KeyRepository meets. Subtests use their own
// accounts so they can share one store.
func runContract(t *testing.T, repo domain.KeyRepository) {
	gen := ids.NewGenerator(nil)
	// Stored times keep millisecond precision; start on a whole second for simple checks.
	base := time.Unix(1_700_000_000, 0)
	newKey := func(t *testing.T, account string, live bool, created time.Time) (domain.Key, string) {
		t.Helper()
		secret := domain.NewSecret(domain.KeySecret, live)
		k, err := domain.NewKey(gen.New(ids.APIKey), domain.KeySpec{Account: account, Livemode: live}, secret, created)
		if err != nil {
			t.Fatal(err)
		}
		if err := repo.Create(t.Context(), k); err != nil {
			t.Fatalf("Create: %v", err)
		}
		return k, secret
	}
	same := func(t *testing.T, got, want domain.Key) {
		t.Helper()
		if got.ID() != want.ID() || got.Account() != want.Account() || got.Livemode() != want.Livemode() ||
			got.Hash() != want.Hash() || !got.Created().Equal(want.Created()) ||
			!got.LastUsed().Equal(want.LastUsed()) || !got.RevokedAt().Equal(want.RevokedAt()) {
			t.Fatalf("got key %+v\nwant %+v", got, want)
		}
	}

	t.Run("create and read back", func(t *testing.T) {
		ctx := t.Context()
		for _, live := range []bool{false, true} {
			k, secret := newKey(t, "acct_read", live, base.Add(123*time.Millisecond))
			byHash, err := repo.ByHash(ctx, domain.HashSecret(secret))
			if err != nil {
				t.Fatal(err)
			}
			same(t, byHash, k) // a new key has no last_used, which ByHash never fills
			byID, err := repo.ByID(ctx, k.ID())
			if err != nil {
				t.Fatal(err)
			}
			same(t, byID, k)
			if byID.Revoked() || !byID.LastUsed().IsZero() {
				t.Fatalf("new key is revoked or used: %+v", byID)
			}
		}
	})

	t.Run("not found", func(t *testing.T) {
		ctx := t.Context()
		if _, err := repo.ByHash(ctx, domain.HashSecret(domain.NewSecret(domain.KeySecret, false))); domainerr.KindOf(err) != domainerr.NotFound {
			t.Fatalf("ByHash(unknown) = %v, want KindNotFound", err)
		}
		if _, err := repo.ByID(ctx, gen.New(ids.APIKey)); domainerr.KindOf(err) != domainerr.NotFound {
			t.Fatalf("ByID(unknown) = %v, want KindNotFound", err)
		}
		if _, err := repo.Revoke(ctx, gen.New(ids.APIKey), base); domainerr.KindOf(err) != domainerr.NotFound {
			t.Fatalf("Revoke(unknown) = %v, want KindNotFound", err)
		}
	})

	t.Run("duplicates are refused", func(t *testing.T) {
		ctx := t.Context()
		k, secret := newKey(t, "acct_dup", false, base)
		sameSecret, err := domain.NewKey(gen.New(ids.APIKey), domain.KeySpec{Account: "acct_dup2", Livemode: false}, secret, base)
		if err != nil {
			t.Fatal(err)
		}
		if err := repo.Create(ctx, sameSecret); !errors.Is(err, domain.ErrKeyExists) {
			t.Fatalf("Create(same secret) = %v, want ErrKeyExists", err)
		}
		sameID, err := domain.NewKey(k.ID(), domain.KeySpec{Account: "acct_dup", Livemode: false}, domain.NewSecret(domain.KeySecret, false), base)
		if err != nil {
			t.Fatal(err)
		}
		if err := repo.Create(ctx, sameID); !errors.Is(err, domain.ErrKeyExists) {
			t.Fatalf("Create(same id) = %v, want ErrKeyExists", err)
		}
	})

	t.Run("revoke is one-way and keeps the first time", func(t *testing.T) {
		ctx := t.Context()
		k, secret := newKey(t, "acct_rev", true, base)
		first := base.Add(time.Hour)
		got, err := repo.Revoke(ctx, k.ID(), first)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Revoked() || !got.RevokedAt().Equal(first) {
			t.Fatalf("Revoke = %+v, want revoked at %v", got, first)
		}
		again, err := repo.Revoke(ctx, k.ID(), first.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if !again.RevokedAt().Equal(first) {
			t.Fatalf("second Revoke moved revoked_at to %v", again.RevokedAt())
		}
		byHash, err := repo.ByHash(ctx, domain.HashSecret(secret))
		if err != nil || !byHash.Revoked() {
			t.Fatalf("ByHash after revoke = %+v, %v; want revoked", byHash, err)
		}
	})

	t.Run("last used only moves forward", func(t *testing.T) {
		ctx := t.Context()
		k, _ := newKey(t, "acct_touch", false, base)
		t1, t0, t2 := base.Add(2*time.Minute), base.Add(time.Minute), base.Add(3*time.Minute)
		for _, at := range []time.Time{t1, t0} {
			if err := repo.TouchLastUsed(ctx, k.ID(), at); err != nil {
				t.Fatal(err)
			}
		}
		if got, _ := repo.ByID(ctx, k.ID()); !got.LastUsed().Equal(t1) {
			t.Fatalf("last used = %v, want %v (an older write must not win)", got.LastUsed(), t1)
		}
		if err := repo.TouchLastUsed(ctx, k.ID(), t2); err != nil {
			t.Fatal(err)
		}
		if got, _ := repo.ByID(ctx, k.ID()); !got.LastUsed().Equal(t2) {
			t.Fatalf("last used = %v, want %v", got.LastUsed(), t2)
		}
		keys, _, err := repo.List(ctx, "acct_touch", listing.Params{Limit: 10})
		if err != nil || len(keys) != 1 || !keys[0].LastUsed().Equal(t2) {
			t.Fatalf("List shows last used %v, %v; want %v", keys, err, t2)
		}
		// Touching an unknown key is not an error: the key may just have been removed by hand.
		if err := repo.TouchLastUsed(ctx, gen.New(ids.APIKey), t2); err != nil {
			t.Fatalf("TouchLastUsed(unknown) = %v", err)
		}
	})

	t.Run("list pages both ways", func(t *testing.T) {
		ctx := t.Context()
		const n = 25
		var want []string // newest first
		for i := 0; i < n; i++ {
			k, _ := newKey(t, "acct_list", i%2 == 0, base.Add(time.Duration(i)*time.Second))
			want = append([]string{k.ID()}, want...)
			newKey(t, "acct_other", false, base) // interleaved noise
		}
		var got []string
		p := listing.Params{Limit: 10}
		for pages := 0; ; pages++ {
			keys, more, err := repo.List(ctx, "acct_list", p)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if k.Account() != "acct_list" {
					t.Fatalf("List(acct_list) returned a key of %s", k.Account())
				}
				got = append(got, k.ID())
			}
			if !more {
				if pages != 2 {
					t.Fatalf("forward paging took %d pages, want 3", pages+1)
				}
				break
			}
			p.StartingAfter = keys[len(keys)-1].ID()
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("forward pages:\n got %v\nwant %v", got, want)
		}

		// Backwards from the oldest: pages of newer keys, each in newest-first order.
		var back []string
		p = listing.Params{Limit: 10, EndingBefore: want[n-1]}
		for {
			keys, more, err := repo.List(ctx, "acct_list", p)
			if err != nil {
				t.Fatal(err)
			}
			page := make([]string, len(keys))
			for i, k := range keys {
				page[i] = k.ID()
			}
			back = append(page, back...)
			if !more {
				break
			}
			p.EndingBefore = keys[0].ID()
		}
		if fmt.Sprint(back) != fmt.Sprint(want[:n-1]) {
			t.Fatalf("backward pages:\n got %v\nwant %v", back, want[:n-1])
		}

		gte, lte := base.Add(5*time.Second).Unix(), base.Add(9*time.Second).Unix()
		keys, more, err := repo.List(ctx, "acct_list", listing.Params{Limit: 100, CreatedGTE: &gte, CreatedLTE: &lte})
		if err != nil || more || len(keys) != 5 {
			t.Fatalf("List(created 5..9 s) = %d keys, more %v, %v; want 5", len(keys), more, err)
		}
		all, _, err := repo.List(ctx, "", listing.Params{Limit: 100})
		if err != nil || len(all) < 2*n {
			t.Fatalf("List(all accounts) = %d keys, %v; want at least %d", len(all), err, 2*n)
		}
	})

	t.Run("restricted key, permissions and rate limit round trip", func(t *testing.T) {
		ctx := t.Context()
		perms, err := domain.ParsePermissions(map[string]string{"events": "read", "payment_requests": "write"})
		if err != nil {
			t.Fatal(err)
		}
		secret := domain.NewSecret(domain.KeyRestricted, true)
		k, err := domain.NewKey(gen.New(ids.APIKey), domain.KeySpec{Account: "acct_rk", Livemode: true, Type: domain.KeyRestricted,
			Permissions: &perms, RateLimit: &domain.RateLimit{PerSecond: 42}}, secret, base)
		if err != nil {
			t.Fatal(err)
		}
		if err := repo.Create(ctx, k); err != nil {
			t.Fatal(err)
		}
		got, err := repo.ByHash(ctx, domain.HashSecret(secret))
		if err != nil {
			t.Fatal(err)
		}
		rl, ok := got.RateLimit()
		if got.Type() != domain.KeyRestricted || !ok || rl.PerSecond != 42 ||
			got.Permissions().Of(domain.ResEvents) != domain.AccessRead || got.Permissions().Of(domain.ResPaymentRequests) != domain.AccessWrite ||
			got.Permissions().Of(domain.ResWebhookEndpoints) != domain.AccessNone {
			t.Fatalf("stored restricted key = %+v", got)
		}
		upd, err := repo.SetRateLimit(ctx, k.ID(), &domain.RateLimit{PerSecond: 0})
		if rl, ok := upd.RateLimit(); err != nil || !ok || rl.PerSecond != 0 {
			t.Fatalf("SetRateLimit(0) = %+v, %v", upd, err)
		}
		upd, err = repo.SetRateLimit(ctx, k.ID(), nil)
		if _, ok := upd.RateLimit(); err != nil || ok {
			t.Fatalf("SetRateLimit(nil) = %+v, %v; want no limit of its own", upd, err)
		}
		if got, err := repo.ByHash(ctx, domain.HashSecret(secret)); err != nil || got.Permissions().Of(domain.ResEvents) != domain.AccessRead {
			t.Fatalf("SetRateLimit lost the permissions: %+v %v", got, err)
		}
		if _, err := repo.SetRateLimit(ctx, gen.New(ids.APIKey), nil); domainerr.KindOf(err) != domainerr.NotFound {
			t.Fatalf("SetRateLimit(unknown) = %v, want KindNotFound", err)
		}
	})

	t.Run("roll", func(t *testing.T) {
		ctx := t.Context()
		old, oldSecret := newKey(t, "acct_roll", false, base)
		nextSecret := domain.NewSecret(domain.KeySecret, false)
		next, expiring, err := old.Roll(gen.New(ids.APIKey), nextSecret, base, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if err := repo.Roll(ctx, expiring, next); err != nil {
			t.Fatal(err)
		}
		gotOld, err := repo.ByHash(ctx, domain.HashSecret(oldSecret))
		if err != nil || !gotOld.ExpiresAt().Equal(base.Add(time.Hour)) {
			t.Fatalf("old key after roll = %+v, %v; want expiry %v", gotOld, err, base.Add(time.Hour))
		}
		if gotNext, err := repo.ByHash(ctx, domain.HashSecret(nextSecret)); err != nil || gotNext.ID() != next.ID() {
			t.Fatalf("successor = %+v, %v", gotNext, err)
		}
		// A second roll of the same (now expiring) key, from a stale read, is refused and
		// leaves no successor behind.
		again, _, err := old.Roll(gen.New(ids.APIKey), domain.NewSecret(domain.KeySecret, false), base, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, staleExpiring, _ := old.Roll(again.ID(), domain.NewSecret(domain.KeySecret, false), base, 0)
		if err := repo.Roll(ctx, staleExpiring, again); domainerr.CodeOf(err) != domainerr.CodeInvalidState {
			t.Fatalf("second roll = %v, want KindInvalidState", err)
		}
		if _, err := repo.ByHash(ctx, again.Hash()); domainerr.KindOf(err) != domainerr.NotFound {
			t.Fatalf("the refused roll's successor exists: %v", err)
		}
		if gotOld, _ := repo.ByHash(ctx, domain.HashSecret(oldSecret)); !gotOld.ExpiresAt().Equal(base.Add(time.Hour)) {
			t.Fatalf("the refused roll changed the expiry to %v", gotOld.ExpiresAt())
		}
	})

	t.Run("concurrent rolls and a revoke", func(t *testing.T) {
		ctx := t.Context()
		old, _ := newKey(t, "acct_rollrace", false, base)
		const workers = 8
		var wg sync.WaitGroup
		var won sync.Map
		errs := make(chan error, workers+1)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				next, expiring, err := old.Roll(gen.New(ids.APIKey), domain.NewSecret(domain.KeySecret, false), base, time.Hour)
				if err != nil {
					errs <- err
					return
				}
				switch err := repo.Roll(ctx, expiring, next); {
				case err == nil:
					won.Store(next.Hash(), next.ID())
				case domainerr.CodeOf(err) != domainerr.CodeInvalidState:
					errs <- err
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := repo.Revoke(ctx, old.ID(), base.Add(time.Minute)); err != nil {
				errs <- err
			}
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		n := 0
		won.Range(func(any, any) bool { n++; return true })
		if n > 1 {
			t.Fatalf("%d concurrent rolls of one key succeeded, want at most 1", n)
		}
		keys, _, err := repo.List(ctx, "acct_rollrace", listing.Params{Limit: 100})
		if err != nil || len(keys) != 1+n {
			t.Fatalf("keys of the account = %d, %v; want the old key and %d successor(s), no leftovers", len(keys), err, n)
		}
		final, err := repo.ByID(ctx, old.ID())
		if err != nil || !final.Revoked() {
			t.Fatalf("the revoke was lost: %+v %v", final, err)
		}
	})

	t.Run("parallel", func(t *testing.T) {
		ctx := t.Context()
		const workers = 8
		target, secret := newKey(t, "acct_par", false, base)
		contested := domain.NewSecret(domain.KeySecret, false)
		var wg sync.WaitGroup
		errs := make(chan error, 10*workers)
		var created sync.Map
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 5; i++ {
					k, err := domain.NewKey(gen.New(ids.APIKey), domain.KeySpec{Account: "acct_par", Livemode: false}, domain.NewSecret(domain.KeySecret, false), base)
					if err == nil {
						err = repo.Create(ctx, k)
					}
					if err != nil {
						errs <- err
						return
					}
				}
				// Everyone imports the same secret: exactly one may win.
				k, err := domain.NewKey(gen.New(ids.APIKey), domain.KeySpec{Account: "acct_contest", Livemode: false}, contested, base)
				if err != nil {
					errs <- err
					return
				}
				switch err := repo.Create(ctx, k); {
				case err == nil:
					created.Store(k.ID(), true)
				case !errors.Is(err, domain.ErrKeyExists):
					errs <- err
				}
				// last_used writes race the revokes; the revoke must survive them.
				if err := repo.TouchLastUsed(ctx, target.ID(), base.Add(time.Duration(w+1)*time.Minute)); err != nil {
					errs <- err
				}
				got, err := repo.Revoke(ctx, target.ID(), base.Add(time.Duration(w+1)*time.Hour))
				if err != nil {
					errs <- err
					return
				}
				if !got.Revoked() {
					errs <- fmt.Errorf("Revoke returned an active key")
				}
				if err := repo.TouchLastUsed(ctx, target.ID(), base.Add(time.Duration(w+1)*time.Minute+time.Second)); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		winners := 0
		created.Range(func(any, any) bool { winners++; return true })
		if winners != 1 {
			t.Fatalf("%d concurrent creates of one secret succeeded, want exactly 1", winners)
		}
		final, err := repo.ByHash(ctx, domain.HashSecret(secret))
		if err != nil {
			t.Fatal(err)
		}
		// On MongoDB the first revoke's time wins; the embedded store lets the last writer
		// win. Either way the key is revoked.
		if !final.Revoked() {
			t.Fatal("a revoke was lost in the race with last_used writes")
		}
		byID, err := repo.ByID(ctx, target.ID())
		if err != nil || byID.LastUsed().IsZero() {
			t.Fatalf("ByID after the race = %+v, %v; want a last_used", byID, err)
		}
		keys, _, err := repo.List(ctx, "acct_par", listing.Params{Limit: 100})
		if err != nil || len(keys) != 1+5*workers {
			t.Fatalf("List(acct_par) = %d keys, %v; want %d", len(keys), err, 1+5*workers)
		}
	})
}

// The authentication lookup must stay a filter on _id alone (see the package comment); this
// pins the stored _id to the hash so a refactor cannot quietly move it.
func TestKeyDocumentIsKeyedBySecretHash(t *testing.T) {
	db := servicetest.Store(t)
	repo, err := keystore.NewKeys(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	secret := domain.NewSecret(domain.KeySecret, false)
	k, err := domain.NewKey(ids.NewGenerator(nil).New(ids.APIKey), domain.KeySpec{Account: "acct_1", Livemode: false}, secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Create(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := db.Collection(keystore.Collection).FindOne(ctx, map[string]any{"id": k.ID()}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc["_id"] != domain.HashSecret(secret).String() {
		t.Fatalf("_id = %v, want the secret's hash", doc["_id"])
	}
	for field, v := range doc {
		if s, ok := v.(string); ok && s == secret {
			t.Fatalf("the secret is stored in plain text in %q", field)
		}
	}
}
