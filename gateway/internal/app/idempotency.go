package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"rentalplatform/gateway/internal/domain"
)

// IdempotencyStore keeps idempotency records where every gateway replica sees them (Redis).
type IdempotencyStore interface {
	// Begin returns the record stored under id; when there is none it stores a lock (a record
	// that is not Done) with fingerprint fp, kept for lockTTL, and returns acquired true and
	// the token that owns the lock. One call, atomic: of concurrent callers one acquires.
	Begin(ctx context.Context, id, fp string, lockTTL time.Duration) (rec domain.IdempotencyRecord, token string, acquired bool, err error)
	// Complete replaces the lock owned by token with rec, kept for the store's TTL. When the
	// lock is no longer token's (it expired), nothing is stored.
	Complete(ctx context.Context, id, token string, rec domain.IdempotencyRecord) error
	// Release deletes the lock owned by token, so the key can be used again.
	Release(ctx context.Context, id, token string) error
}

// ErrIdempotencyUnavailable means the idempotency store could not be asked. A request with an
// Idempotency-Key is then refused (503) rather than run unprotected: running it could apply a
// retried request twice, which is exactly what the key is for.
var ErrIdempotencyUnavailable = errors.New("idempotency store unavailable")

// IdempotencyScope is where an idempotency key lives: one account, one mode.
type IdempotencyScope struct {
	Account  string
	Livemode bool
	Key      string
}

// id is the store's name for the scope. The client's key is hashed: it may be up to 255
// characters of anything printable.
func (sc IdempotencyScope) id() string {
	h := sha256.Sum256([]byte(sc.Key))
	return sc.Account + ":" + modeName(sc.Livemode) + ":" + hex.EncodeToString(h[:])
}

// Claim is a request's hold on an idempotency key, from BeginIdempotent until Complete or
// Release. The zero Claim holds nothing.
type Claim struct {
	id    string
	token string
}

// Held reports whether the claim holds a key.
func (c Claim) Held() bool { return c.token != "" }

// storeTimeout bounds one call to the idempotency store.
const storeTimeout = 2 * time.Second

// BeginIdempotent starts a request that carries an idempotency key, with fingerprint fp (""
// for an upload, whose fingerprint is known only after its body was read). Exactly one of
// these holds:
//
//   - the key is new: the returned Claim holds it; run the request, then Complete or Release;
//   - the key's request finished: replay is its record; with fp given it matched (else the
//     error is domain.ErrIdempotencyKeyReused), with fp "" the caller must check Matches;
//   - the key's request is still running: domain.ErrIdempotencyKeyInUse (or
//     domain.ErrIdempotencyKeyReused when its fingerprint differs from fp);
//   - the store failed: ErrIdempotencyUnavailable.
func (s *Service) BeginIdempotent(ctx context.Context, sc IdempotencyScope, fp string) (Claim, *domain.IdempotencyRecord, error) {
	if s.idem == nil {
		return Claim{}, nil, ErrIdempotencyUnavailable
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	id := sc.id()
	rec, token, acquired, err := s.idem.Begin(ctx, id, fp, s.idemLockTTL)
	if err != nil {
		s.redisLog.warn(ctx, "idempotency store unavailable: requests with an Idempotency-Key are refused", err)
		return Claim{}, nil, errors.Join(ErrIdempotencyUnavailable, err)
	}
	if acquired {
		return Claim{id: id, token: token}, nil, nil
	}
	mismatch := fp != "" && rec.Fingerprint != "" && !rec.Matches(fp)
	switch {
	case mismatch:
		return Claim{}, nil, domain.ErrIdempotencyKeyReused
	case !rec.Done:
		return Claim{}, nil, domain.ErrIdempotencyKeyInUse
	}
	return Claim{}, &rec, nil
}

// CompleteIdempotent ends a claimed request with the service's response: a storable one is
// kept for replays under fingerprint fp, any other releases the key. A store failure is
// logged, not returned: the client has its answer, and the lock expires by itself within the
// lock TTL.
func (s *Service) CompleteIdempotent(ctx context.Context, c Claim, fp string, resp domain.StoredResponse) {
	if !c.Held() {
		return
	}
	if !domain.ResponseStorable(resp.Status) {
		s.ReleaseIdempotent(ctx, c)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	rec := domain.IdempotencyRecord{Fingerprint: fp, Done: true, Response: resp}
	if err := s.idem.Complete(ctx, c.id, c.token, rec); err != nil {
		s.log.ErrorContext(ctx, "storing an idempotent response failed; the key unlocks when its lock expires",
			"error", err.Error(), "lock_ttl", s.idemLockTTL.String())
	}
}

// ReleaseIdempotent gives up a claim without storing anything (the request never reached a
// service, or its answer is not kept), so a retry with the key runs again.
func (s *Service) ReleaseIdempotent(ctx context.Context, c Claim) {
	if !c.Held() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := s.idem.Release(ctx, c.id, c.token); err != nil {
		s.log.ErrorContext(ctx, "releasing an idempotency key failed; it unlocks when its lock expires",
			"error", err.Error(), "lock_ttl", s.idemLockTTL.String())
	}
}
