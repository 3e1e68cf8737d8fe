package redis

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"rentalplatform/gateway/internal/app"
	"rentalplatform/gateway/internal/domain"
)

// Idempotency is the app.IdempotencyStore on Redis.
//
// A lock is a key of its own with a short TTL. Finished records are not one key each: they
// are fields of one hash per time slot (half the TTL, 12 hours by default), and the hash
// expires as a whole once its newest record is TTL old. Lookups read every slot that can
// still hold a record (3 HGETs in the same round trip). So the number of keys stays small
// however many requests carry a key; that matters to the embedded Redis (miniredis), which
// visits every key with a TTL on every command, and costs a real Redis nothing. A record is
// therefore kept at least the TTL and at most one slot longer (24 to 36 hours by default).
//
// A finished record takes precedence over any lock: Begin looks for records first. That is
// what lets Complete be one unconditional transaction (store the record unless one exists,
// drop the lock): even when the request outlived its lock and a retry holds the lock now, the
// record decides every later request. Release, which leaves no record, deletes the lock only
// while it still owns it (WATCH), so it cannot free a retry's lock. Each call is one round
// trip, except Release (rare: only answers that are not kept).
type Idempotency struct {
	rdb  *goredis.Client
	ttl  time.Duration
	slot time.Duration
	now  func() time.Time
}

var _ app.IdempotencyStore = (*Idempotency)(nil)

// NewIdempotency returns the store on rdb, keeping records for ttl.
func NewIdempotency(rdb *goredis.Client, ttl time.Duration, now func() time.Time) *Idempotency {
	if now == nil {
		now = time.Now
	}
	return &Idempotency{rdb: rdb, ttl: ttl, slot: max(ttl/slotsPerTTL, time.Second), now: now}
}

const (
	recordPrefix = "gw:idem:"
	lockPrefix   = "gw:idemlock:"
	doneMark     = 'D'
	tokenBytes   = 16
	slotsPerTTL  = 2
)

// errLockLost: the lock expired before the request finished (and may be another request's
// now), so its response was not stored.
var errLockLost = errors.New("idempotency lock expired before the request finished")

func (s *Idempotency) slotOf(t time.Time) int64 { return t.UnixNano() / int64(s.slot) }

// slotKey names the hash of slot b; the slot length is part of the name, so a changed TTL
// never mixes slots of different lengths.
func (s *Idempotency) slotKey(b int64) string {
	return recordPrefix + strconv.FormatInt(int64(s.slot/time.Second), 10) + ":" + strconv.FormatInt(b, 10)
}

// Begin implements app.IdempotencyStore.
func (s *Idempotency) Begin(ctx context.Context, id, fp string, lockTTL time.Duration) (domain.IdempotencyRecord, string, bool, error) {
	now := s.now()
	first, last := s.slotOf(now.Add(-s.ttl)), s.slotOf(now)
	token := newToken()
	lock := lockPrefix + id
	var gets []*goredis.StringCmd
	var setnx *goredis.BoolCmd
	var held *goredis.StringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		for b := last; b >= first; b-- {
			gets = append(gets, p.HGet(ctx, s.slotKey(b), id))
		}
		setnx = p.SetNX(ctx, lock, token+fp, lockTTL)
		held = p.Get(ctx, lock)
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return domain.IdempotencyRecord{}, "", false, fmt.Errorf("idempotency begin: %w", err)
	}
	for _, g := range gets {
		v, err := g.Bytes()
		if errors.Is(err, goredis.Nil) {
			continue
		}
		if err != nil {
			return domain.IdempotencyRecord{}, "", false, fmt.Errorf("idempotency begin: %w", err)
		}
		if setnx.Val() {
			// Finished already: the lock just taken in the same transaction is not needed.
			if err := s.rdb.Del(ctx, lock).Err(); err != nil {
				return domain.IdempotencyRecord{}, "", false, fmt.Errorf("idempotency begin: %w", err)
			}
		}
		rec, err := decodeDone(v)
		return rec, "", false, err
	}
	if setnx.Val() {
		return domain.IdempotencyRecord{}, token, true, nil
	}
	v, err := held.Result()
	if err != nil || len(v) < 2*tokenBytes {
		return domain.IdempotencyRecord{}, "", false, fmt.Errorf("idempotency begin: unreadable lock: %v", err)
	}
	return domain.IdempotencyRecord{Fingerprint: v[2*tokenBytes:]}, "", false, nil
}

// Complete implements app.IdempotencyStore. The first record stored for a scope wins; the
// lock goes either way (see the type's comment). It reports errLockLost when the lock was no
// longer token's, for the log: the response was then kept only if no other was first.
func (s *Idempotency) Complete(ctx context.Context, id, token string, rec domain.IdempotencyRecord) error {
	v, err := encodeDone(rec)
	if err != nil {
		return err
	}
	now := s.now()
	b := s.slotOf(now)
	key, lock := s.slotKey(b), lockPrefix+id
	// The slot's hash lives until its newest possible record is ttl old (plus a second).
	expires := time.Unix(0, (b+1)*int64(s.slot)).Add(s.ttl + time.Second)
	var held *goredis.StringCmd
	_, err = s.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		held = p.Get(ctx, lock)
		p.HSetNX(ctx, key, id, v)
		p.ExpireAt(ctx, key, expires)
		p.Del(ctx, lock)
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return fmt.Errorf("idempotency complete: %w", err)
	}
	if !strings.HasPrefix(held.Val(), token) {
		return errLockLost
	}
	return nil
}

// Release implements app.IdempotencyStore: the lock is deleted only while token holds it.
func (s *Idempotency) Release(ctx context.Context, id, token string) error {
	lock := lockPrefix + id
	err := s.rdb.Watch(ctx, func(tx *goredis.Tx) error {
		v, err := tx.Get(ctx, lock).Result()
		if errors.Is(err, goredis.Nil) || err == nil && !strings.HasPrefix(v, token) {
			return nil // not ours (any more): nothing to release
		}
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			p.Del(ctx, lock)
			return nil
		})
		return err
	}, lock)
	if err != nil && !errors.Is(err, goredis.TxFailedErr) { // TxFailed: it changed hands meanwhile
		return fmt.Errorf("idempotency release: %w", err)
	}
	return nil
}

func newToken() string {
	b := make([]byte, tokenBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	return hex.EncodeToString(b)
}

// doneHeader is the first line of a finished record; the body follows it byte for byte.
type doneHeader struct {
	Fingerprint string      `json:"f"`
	Status      int         `json:"s"`
	Header      [][2]string `json:"h,omitempty"`
	RequestID   string      `json:"r,omitempty"`
}

func encodeDone(rec domain.IdempotencyRecord) ([]byte, error) {
	h, err := json.Marshal(doneHeader{Fingerprint: rec.Fingerprint, Status: rec.Response.Status,
		Header: rec.Response.Header, RequestID: rec.Response.RequestID})
	if err != nil {
		return nil, fmt.Errorf("idempotency encode: %w", err)
	}
	out := make([]byte, 0, 1+len(h)+1+len(rec.Response.Body))
	out = append(out, doneMark)
	out = append(out, h...)
	out = append(out, '\n') // JSON output never holds a raw newline
	return append(out, rec.Response.Body...), nil
}

func decodeDone(v []byte) (domain.IdempotencyRecord, error) {
	if len(v) >= 1 && v[0] == doneMark {
		head, body, ok := bytes.Cut(v[1:], []byte{'\n'})
		var h doneHeader
		if ok && json.Unmarshal(head, &h) == nil {
			return domain.IdempotencyRecord{Fingerprint: h.Fingerprint, Done: true, Response: domain.StoredResponse{
				Status: h.Status, Header: h.Header, Body: body, RequestID: h.RequestID}}, nil
		}
	}
	return domain.IdempotencyRecord{}, errors.New("idempotency record: unreadable value in Redis")
}
