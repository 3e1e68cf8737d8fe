package redisstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alicebob/miniredis/v2"
)

// A snapshot keeps chosen keys of the in-memory store across a stop and a start (`make run`
// keeps the gateway's idempotency records and the asynq queues this way; deploy/local/stack
// decides which). It is JSON, so a developer can read what was kept; values are base64 because
// they are bytes (asynq's task messages are protobuf). Only database 0 is kept: it is the one
// every program of the local stack uses.
//
// Each key keeps its expiry as a wall-clock time, not as the TTL left: time passes while the
// store is stopped, and a key whose time has come by the next start is not restored. Field
// TTLs of hashes (HEXPIRE) are not kept; nothing of ours sets them.

// snapshotFormat names the file's layout, so a later layout can tell an old file apart.
const snapshotFormat = "rentalplatform/redisstore snapshot v1"

type snapshot struct {
	Format  string    `json:"format"`
	SavedAt time.Time `json:"saved_at"`
	Keys    []kept    `json:"keys"`
}

// kept is one key: its type, its expiry (none: kept until deleted) and the value of its type.
type kept struct {
	Key       string      `json:"key"`
	Type      string      `json:"type"`
	ExpiresAt *time.Time  `json:"expires_at,omitempty"`
	String    []byte      `json:"string,omitempty"`
	Hash      [][2][]byte `json:"hash,omitempty"` // field, value
	List      [][]byte    `json:"list,omitempty"` // in order
	Set       [][]byte    `json:"set,omitempty"`
	ZSet      []zmember   `json:"zset,omitempty"`
}

type zmember struct {
	Member []byte  `json:"member"`
	Score  float64 `json:"score"`
}

// Save writes the keys of database 0 whose names start with one of prefixes, each with its
// expiry, to path, and returns how many it wrote. The file is replaced atomically (a temporary
// file renamed over it), so a crash while saving leaves the previous snapshot whole. Call it
// when nothing writes to the store any more: keys are read one at a time. Keys of a type a
// snapshot cannot hold (streams, HyperLogLogs) or with a name that is not UTF-8 are left out
// and named in the error; the others are saved all the same.
func (s *Store) Save(path string, prefixes ...string) (int, error) {
	now := s.settle()
	snap, skipped := collect(s.m.DB(0), prefixes, now)
	if err := writeAtomic(path, snap); err != nil {
		return 0, fmt.Errorf("redisstore: save %s: %w", path, err)
	}
	if skipped != nil {
		return len(snap.Keys), fmt.Errorf("redisstore: saved %d keys to %s, left out: %w", len(snap.Keys), path, skipped)
	}
	return len(snap.Keys), nil
}

// Restore loads the snapshot at path into database 0 and returns how many keys it restored;
// keys whose expiry has passed are skipped. A missing file restores nothing and is no error (a
// first start). Call it before any client writes: a restored key replaces one of the same name.
func (s *Store) Restore(path string) (int, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("redisstore: restore: %w", err)
	}
	var snap snapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		return 0, fmt.Errorf("redisstore: restore %s: %w", path, err)
	}
	if snap.Format != snapshotFormat {
		return 0, fmt.Errorf("redisstore: restore %s: format %q, want %q", path, snap.Format, snapshotFormat)
	}
	now := s.settle()
	return apply(s.m.DB(0), snap, now), nil
}

// settle moves the store's clock to now and expires what is due, so that the TTLs read or set
// next are relative to the time returned.
func (s *Store) settle() time.Time {
	now := time.Now()
	s.m.SetTime(now)
	s.m.Keys() // any access applies the clock (ClockTTL)
	return now
}

// collect reads the keys of db with one of prefixes, now being db's clock. A *RedisDB held
// directly does not move the clock, so every TTL read is relative to now.
func collect(db *miniredis.RedisDB, prefixes []string, now time.Time) (snapshot, error) {
	snap := snapshot{Format: snapshotFormat, SavedAt: now.UTC(), Keys: []kept{}}
	var skipped []error
	for _, k := range db.Keys() {
		if !hasPrefix(k, prefixes) {
			continue
		}
		if !utf8.ValidString(k) {
			skipped = append(skipped, fmt.Errorf("key %q: name is not UTF-8", k))
			continue
		}
		e := kept{Key: k, Type: db.Type(k)}
		if ttl := db.TTL(k); ttl > 0 {
			at := now.Add(ttl).UTC()
			e.ExpiresAt = &at
		}
		var err error
		switch e.Type {
		case "string":
			var v string
			v, err = db.Get(k)
			e.String = []byte(v)
		case "hash":
			var fields []string
			fields, err = db.HKeys(k)
			for _, f := range fields {
				e.Hash = append(e.Hash, [2][]byte{[]byte(f), []byte(db.HGet(k, f))})
			}
		case "list":
			var vs []string
			vs, err = db.List(k)
			for _, v := range vs {
				e.List = append(e.List, []byte(v))
			}
		case "set":
			var vs []string
			vs, err = db.Members(k)
			for _, v := range vs {
				e.Set = append(e.Set, []byte(v))
			}
		case "zset":
			var m map[string]float64
			m, err = db.SortedSet(k)
			for v, score := range m {
				e.ZSet = append(e.ZSet, zmember{Member: []byte(v), Score: score})
			}
		case "":
			continue // expired meanwhile
		default:
			err = fmt.Errorf("type %s cannot be kept", e.Type)
		}
		if err != nil {
			skipped = append(skipped, fmt.Errorf("key %q: %w", k, err))
			continue
		}
		snap.Keys = append(snap.Keys, e)
	}
	return snap, errors.Join(skipped...)
}

// apply writes the unexpired keys of snap into db, now being db's clock, and returns how many.
func apply(db *miniredis.RedisDB, snap snapshot, now time.Time) int {
	n := 0
	for _, e := range snap.Keys {
		var ttl time.Duration
		if e.ExpiresAt != nil {
			if ttl = e.ExpiresAt.Sub(now); ttl <= 0 {
				continue
			}
		}
		db.Del(e.Key)
		switch e.Type {
		case "string":
			_ = db.Set(e.Key, string(e.String))
		case "hash":
			fv := make([]string, 0, 2*len(e.Hash))
			for _, p := range e.Hash {
				fv = append(fv, string(p[0]), string(p[1]))
			}
			db.HSet(e.Key, fv...)
		case "list":
			_, _ = db.Push(e.Key, strs(e.List)...)
		case "set":
			_, _ = db.SetAdd(e.Key, strs(e.Set)...)
		case "zset":
			for _, z := range e.ZSet {
				_, _ = db.ZAdd(e.Key, z.Score, string(z.Member))
			}
		default:
			continue // not written by collect
		}
		if ttl > 0 {
			db.SetTTL(e.Key, ttl)
		}
		n++
	}
	return n
}

func strs(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

func hasPrefix(k string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// writeAtomic writes v as JSON to a temporary file beside path, syncs it and renames it over
// path: readers see the old file or the new one, never half of one.
func writeAtomic(path string, v any) (err error) {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	// The rename is durable once the folder is synced; best effort (not every system lets a
	// folder be opened for that).
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
