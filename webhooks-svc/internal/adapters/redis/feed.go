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
	"sync"
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
//	feed:listeners               the feeds listened to ("acct_…:test"), each scored by the
//	                             Unix millisecond its listener mark lasts until
//
// Nothing is kept for an account nobody listens to, and appending to its feed costs no Redis
// call: each process keeps a copy of feed:listeners, read again once it is Refresh old, and
// appends (the script, which checks the mark itself) only to the feeds listed there. That copy
// can miss a listener for up to Refresh after its Open, so Open waits Refresh before it takes
// the position it returns: every event appended after that position is one that no process
// skipped (see Open).
type Feed struct {
	rc        redis.UniversalClient
	retention time.Duration
	maxLen    int64
	refresh   time.Duration
	now       func() time.Time

	// listening is this process's copy of feed:listeners; asked is when the read that filled
	// it was sent (the monotonic clock: what matters is how long ago, measured here).
	mu        sync.Mutex
	listening map[string]struct{}
	asked     time.Time
}

var _ app.Feed = (*Feed)(nil)

// Config bounds a feed.
type Config struct {
	// Retention is how long an entry is kept, and how long after a listener's last read
	// events are still appended for it.
	Retention time.Duration
	// MaxLen bounds the entries of one account and mode; the oldest go first.
	MaxLen int64
	// Refresh is how long a process trusts its copy of the list of feeds listened to, and so
	// how long Open waits (DefaultRefresh when zero).
	Refresh time.Duration
	// Now is time.Now when nil. It dates the entries and marks; the copy of the listeners'
	// list is timed with the process's own monotonic clock.
	Now func() time.Time
}

// DefaultRefresh is Config.Refresh's default: a listener's start waits this long, and a
// process with events to append reads the list of listened feeds at most this often.
const DefaultRefresh = 250 * time.Millisecond

// listenersKey is the sorted set of the feeds listened to, scored by the Unix millisecond
// their listener mark lasts until (by the clock of the process that last renewed it).
const listenersKey = "feed:listeners"

// listenerSlack is how long after its score a feed still counts as listened to: more than
// any skew between the processes' clocks. A feed counted too long costs only the script call,
// which finds no mark.
const listenerSlack = time.Minute

// NewFeed returns the feed on rc.
func NewFeed(rc redis.UniversalClient, cfg Config) *Feed {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultRefresh
	}
	return &Feed{rc: rc, retention: cfg.Retention, maxLen: cfg.MaxLen, refresh: cfg.Refresh, now: cfg.Now}
}

// feedName is an account and mode's name in feed:listeners and in its keys' hash tag.
func feedName(account string, livemode bool) string {
	if livemode {
		return account + ":live"
	}
	return account + ":test"
}

func streamKey(account string, livemode bool) string {
	return "feed:{" + feedName(account, livemode) + "}"
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
	listened, err := f.listened(ctx, feedName(ev.Account, ev.Livemode))
	if err != nil {
		return fmt.Errorf("appending event %s to its feed: %w", ev.ID, err)
	}
	if !listened {
		return nil
	}
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

// listened reports whether the feed name may have a listener, from this process's copy of
// feed:listeners, read again when it is Refresh old. Appenders wait for that one read rather
// than each asking Redis: under load it is one read per Refresh, not a script per event.
func (f *Feed) listened(ctx context.Context, name string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listening == nil || time.Since(f.asked) >= f.refresh {
		asked := time.Now()
		since := f.now().Add(-listenerSlack).UnixMilli()
		names, err := f.rc.ZRangeByScore(ctx, listenersKey, &redis.ZRangeBy{Min: strconv.FormatInt(since, 10), Max: "+inf"}).Result()
		if err != nil {
			return false, fmt.Errorf("reading the feeds listened to: %w", err)
		}
		f.listening = make(map[string]struct{}, len(names))
		for _, n := range names {
			f.listening[n] = struct{}{}
		}
		f.asked = asked
	}
	_, ok := f.listening[name]
	return ok, nil
}

// listen renews the feed's listener mark and its entry in feed:listeners on pipe, and drops
// the entries long expired. It reports whether the mark was missing (set anew).
func (f *Feed) listen(ctx context.Context, pipe redis.Pipeliner, account string, livemode bool) *redis.BoolCmd {
	key := streamKey(account, livemode)
	marked := pipe.SetNX(ctx, key+":on", "1", f.retention)
	pipe.PExpire(ctx, key+":on", f.retention)
	now := f.now()
	pipe.ZAdd(ctx, listenersKey, redis.Z{Score: float64(now.Add(f.retention).UnixMilli()), Member: feedName(account, livemode)})
	pipe.ZRemRangeByScore(ctx, listenersKey, "-inf", "("+strconv.FormatInt(now.Add(-listenerSlack).UnixMilli(), 10))
	return marked
}

// catchUp waits until every process's copy of feed:listeners was read after a listen that
// returned before this call: a process that skipped an event for want of the feed in its copy
// did so before this returns.
func (f *Feed) catchUp(ctx context.Context) error {
	t := time.NewTimer(f.refresh)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// oldestKept is the smallest entry id within the retention.
func (f *Feed) oldestKept() string {
	return strconv.FormatInt(f.now().Add(-f.retention).UnixMilli(), 10) + "-0"
}

// Open implements app.Feed. It lists the feed as listened to, then waits until every
// process's copy of that list is newer (catchUp) before it reads the position: an event another
// process skipped meanwhile was stored before that position, and every event after it is
// appended. A listener's start takes Refresh longer for it.
func (f *Feed) Open(ctx context.Context, account string, livemode bool, after string) (string, bool, error) {
	key := streamKey(account, livemode)
	pipe := f.rc.Pipeline()
	marked := f.listen(ctx, pipe, account, livemode)
	if _, err := pipe.Exec(ctx); err != nil {
		return "", false, fmt.Errorf("opening the event feed: %w", err)
	}
	if err := f.catchUp(ctx); err != nil {
		return "", false, fmt.Errorf("opening the event feed: %w", err)
	}
	pipe = f.rc.Pipeline()
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
	marked := f.listen(ctx, pipe, account, livemode)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, false, fmt.Errorf("reading the event feed: %w", err)
	}
	// The mark is set from Open on: missing now, it went with Redis's data (a flush, a
	// restart without persistence), and with it the entries appended in between. Events
	// skipped until the processes see the feed listed again are among those reported lost.
	lost := marked.Val()
	if lost {
		if err := f.catchUp(ctx); err != nil {
			return nil, lost, fmt.Errorf("reading the event feed: %w", err)
		}
	}
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
