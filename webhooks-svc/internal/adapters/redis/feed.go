// Package redis keeps the event feed (app.Feed) in Redis streams: one stream per account and
// mode that someone listens to, holding the recent events in the order they were stored.
package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"rentalplatform/libs/events"

	"rentalplatform/webhooks-svc/internal/app"
)

// Feed implements app.Feed.
//
// Keys, all with the account and mode as their hash tag so that a script touches one slot:
//
//	feed:{acct_…:test}          the stream of entries (id, type, data), in the order stored
//	feed:{acct_…:test}:on       set while someone listens, for the retention after the last read
//	feed:{acct_…:test}:seen:evt_… set when the event was appended, for the retention
//
// Nothing is kept for an account nobody listens to: appending costs one script call that
// finds no listener mark.
type Feed struct {
	rc        redis.UniversalClient
	retention time.Duration
	maxLen    int64
	now       func() time.Time
}

var _ app.Feed = (*Feed)(nil)

// Config bounds a feed.
type Config struct {
	// Retention is how long an entry is kept, and how long after a listener's last read
	// events are still appended for it.
	Retention time.Duration
	// MaxLen bounds the entries of one account and mode; the oldest go first.
	MaxLen int64
	// Now is time.Now when nil.
	Now func() time.Time
}

// NewFeed returns the feed on rc.
func NewFeed(rc redis.UniversalClient, cfg Config) *Feed {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Feed{rc: rc, retention: cfg.Retention, maxLen: cfg.MaxLen, now: cfg.Now}
}

func streamKey(account string, livemode bool) string {
	mode := "test"
	if livemode {
		mode = "live"
	}
	return "feed:{" + account + ":" + mode + "}"
}

// appendScript adds an entry once, and only while someone listens. The trims are exact, so
// that Open can tell a trimmed stream (at its length bound) from one that had nothing more.
//
// KEYS: the listener mark, the event's seen mark, the stream.
// ARGV: retention (ms), the oldest id kept, the length bound, event id, type, data.
var appendScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if not redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[1]) then return 0 end
redis.call('XADD', KEYS[3], 'MAXLEN', ARGV[3], '*', 'id', ARGV[4], 'type', ARGV[5], 'data', ARGV[6])
redis.call('XTRIM', KEYS[3], 'MINID', ARGV[2])
redis.call('PEXPIRE', KEYS[3], ARGV[1])
return 1
`)

// Append implements app.Feed.
func (f *Feed) Append(ctx context.Context, ev events.Event) error {
	data, err := json.Marshal(events.Render(ev, ev.APIVersion))
	if err != nil {
		return fmt.Errorf("encoding event %s: %w", ev.ID, err)
	}
	key := streamKey(ev.Account, ev.Livemode)
	err = appendScript.Run(ctx, f.rc, []string{key + ":on", key + ":seen:" + ev.ID, key},
		f.retention.Milliseconds(), f.oldestKept(), f.maxLen, ev.ID, ev.Type, data).Err()
	if err != nil {
		return fmt.Errorf("appending event %s to its feed: %w", ev.ID, err)
	}
	return nil
}

// oldestKept is the smallest entry id within the retention.
func (f *Feed) oldestKept() string {
	return strconv.FormatInt(f.now().Add(-f.retention).UnixMilli(), 10) + "-0"
}

// Open implements app.Feed.
func (f *Feed) Open(ctx context.Context, account string, livemode bool, after string) (string, bool, error) {
	key := streamKey(account, livemode)
	pipe := f.rc.Pipeline()
	marked := pipe.SetNX(ctx, key+":on", "1", f.retention)
	pipe.PExpire(ctx, key+":on", f.retention)
	var edge *redis.XMessageSliceCmd
	var length *redis.IntCmd
	if after == "" {
		edge = pipe.XRevRangeN(ctx, key, "+", "-", 1)
	} else {
		edge = pipe.XRangeN(ctx, key, "-", "+", 1)
		length = pipe.XLen(ctx, key)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return "", false, fmt.Errorf("opening the event feed: %w", err)
	}
	if after == "" {
		if msgs := edge.Val(); len(msgs) > 0 {
			return msgs[0].ID, false, nil
		}
		return "0-0", false, nil
	}
	gap := marked.Val() || // nobody listened within the retention, or Redis lost its data
		positionBefore(after, f.oldestKept())
	if msgs := edge.Val(); len(msgs) > 0 && length.Val() >= f.maxLen && positionBefore(after, msgs[0].ID) {
		gap = true // the length bound trimmed entries after it
	}
	return after, gap, nil
}

// Read implements app.Feed.
func (f *Feed) Read(ctx context.Context, account string, livemode bool, after string, wait time.Duration, limit int) ([]app.FeedEntry, bool, error) {
	key := streamKey(account, livemode)
	pipe := f.rc.Pipeline()
	marked := pipe.SetNX(ctx, key+":on", "1", f.retention)
	pipe.PExpire(ctx, key+":on", f.retention)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, false, fmt.Errorf("reading the event feed: %w", err)
	}
	// The mark is set from Open on: missing now, it went with Redis's data (a flush, a
	// restart without persistence), and with it the entries appended in between.
	lost := marked.Val()
	// BLOCK 0 waits for ever: wait at least a millisecond.
	streams, err := f.rc.XRead(ctx, &redis.XReadArgs{Streams: []string{key, after}, Count: int64(limit), Block: max(wait, time.Millisecond)}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, lost, nil
	}
	if err != nil {
		return nil, lost, fmt.Errorf("reading the event feed: %w", err)
	}
	var out []app.FeedEntry
	for _, s := range streams {
		for _, m := range s.Messages {
			id, _ := m.Values["id"].(string)
			typ, _ := m.Values["type"].(string)
			data, _ := m.Values["data"].(string)
			out = append(out, app.FeedEntry{Position: m.ID, Event: id, Type: typ, Data: []byte(data)})
		}
	}
	return out, lost, nil
}

// positionBefore reports whether stream id a comes before b ("ms-seq" each).
func positionBefore(a, b string) bool {
	am, as := splitID(a)
	bm, bs := splitID(b)
	return am < bm || (am == bm && as < bs)
}

func splitID(id string) (ms, seq uint64) {
	m, s, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseUint(m, 10, 64)
	seq, _ = strconv.ParseUint(s, 10, 64)
	return ms, seq
}
