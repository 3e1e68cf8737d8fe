package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// checkRedisFree refuses a REDIS_URL database that another platform is using, or in which an
// earlier one left tasks that would run at once: the bench's platform would consume them (an
// earlier run's events, stored again under the same bench accounts, make its counts wrong: seen
// once, 100 events too many, after a run stopping on the same database published into it) or
// share its queues with the other platform's workers. Scheduled tasks (the retries of payments
// part (c), due a day later) do not run during a bench and are left alone.
func checkRedisFree(ctx context.Context, url string) error {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return fmt.Errorf("REDIS_URL: %w", err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	where := fmt.Sprintf("REDIS_URL's database %d", opt.DB)
	// asynq keeps each running server in a sorted set scored by when its registration expires
	// (renewed every few seconds); a stopped server removes itself, a killed one expires.
	live, err := rdb.ZCount(ctx, "asynq:servers", strconv.FormatInt(time.Now().Unix(), 10), "+inf").Result()
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if live > 0 {
		return fmt.Errorf("%s is in use: %d asynq workers of another platform run on it (another bench, soak or `make run`); stop it or give the bench a database of its own", where, live)
	}
	// Every queue asynq has enqueued to on this database, the platform's and any other's.
	queues, err := rdb.SMembers(ctx, "asynq:queues").Result()
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	slices.Sort(queues)
	var left []string
	for _, q := range queues {
		n, err := queueLeft(ctx, rdb, q, false)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if n > 0 {
			left = append(left, fmt.Sprintf("%d in %q", n, q))
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("%s holds tasks an earlier platform left, waiting, running or to retry (%s): this bench's platform would run them and count them in its figures; empty it first (redis-cli -n %d flushdb) or give the bench another database",
			where, strings.Join(left, ", "), opt.DB)
	}
	return nil
}
