package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/go-redis/redis_rate/v10"
	goredis "github.com/redis/go-redis/v9"

	"rentalplatform/gateway/internal/app"
)

// Limiter is the app.RateLimiter on Redis: redis_rate's GCRA, one Lua script call, with
// Redis's clock, so replicas with skewed clocks still agree.
type Limiter struct {
	l *redis_rate.Limiter
}

var _ app.RateLimiter = (*Limiter)(nil)

// NewLimiter returns a limiter on rdb.
func NewLimiter(rdb *goredis.Client) *Limiter {
	return &Limiter{l: redis_rate.NewLimiter(rdb)}
}

// Take implements app.RateLimiter with redis_rate's AllowAtMost.
func (l *Limiter) Take(ctx context.Context, bucket string, rate, burst int, period time.Duration, n int) (app.RateDecision, error) {
	res, err := l.l.AllowAtMost(ctx, "gw:"+bucket, redis_rate.Limit{Rate: rate, Burst: burst, Period: period}, n)
	if err != nil {
		return app.RateDecision{}, fmt.Errorf("rate limit %s: %w", bucket, err)
	}
	d := app.RateDecision{
		Granted:    res.Allowed,
		Limit:      burst,
		Remaining:  res.Remaining,
		ResetAfter: max(res.ResetAfter, 0),
	}
	if d.Granted == 0 {
		d.RetryAfter = max(res.RetryAfter, 0)
	}
	return d, nil
}
