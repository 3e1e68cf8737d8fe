package app

import (
	"context"
	"errors"
	"time"
)

// ErrNoFeed is returned by the feed's use cases when the service runs without one.
var ErrNoFeed = errors.New("the event stream is not available")

// OpenFeed starts a listener of the caller's events after position after (from now on when
// empty): the position to read from, and whether events after it may be missing.
func (s *Service) OpenFeed(ctx context.Context, who Caller, after string) (position string, gap bool, err error) {
	if s.Feed == nil {
		return "", false, ErrNoFeed
	}
	return s.Feed.Open(ctx, who.Account, who.Livemode, after)
}

// ReadFeed returns up to limit of the caller's events after position after, waiting up to wait
// for the first; lost reports that events may have been missed since the last read.
func (s *Service) ReadFeed(ctx context.Context, who Caller, after string, wait time.Duration, limit int) (entries []FeedEntry, lost bool, err error) {
	if s.Feed == nil {
		return nil, false, ErrNoFeed
	}
	return s.Feed.Read(ctx, who.Account, who.Livemode, after, wait, limit)
}
