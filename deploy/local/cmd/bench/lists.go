package main

// Filtered lists over 10,000 objects of one account (issue 31, point 4: p99 ≤ 100 ms on the
// embedded store, as on MongoDB with the indexes): collections' two-filter list (collections
// (a)), payment requests by status (payments (d)) and verification sessions by applicant email
// (verification). Each is read one request at a time, so a figure is the list's own latency,
// not a queue's.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"rentalplatform/deploy/local/internal/load"
)

// listTarget is the p99 a filtered list must answer within.
const listTarget = 100 * time.Millisecond

// A run reads its list listReads times, or fewer once they have taken listBudget together (a
// list the store evaluates over the whole collection costs a second and more a read), but at
// least listMinReads times.
const (
	listReads    = 1000
	listMinReads = 20
	listBudget   = 20 * time.Second
)

// waitEventsStored waits until the platform's "events" queue (asynq's, in Redis) holds no task
// waiting, running or to retry at two polls in a row, up to timeout: the events of the objects
// just created are stored by webhooks-svc, and a list's figures, its CPU per request above
// all, are its own rather than those of that work.
func waitEventsStored(ctx context.Context, redisURL string, timeout time.Duration) error {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	empty := 0
	return load.Poll(ctx, timeout, 250*time.Millisecond, func() (bool, error) {
		n, err := queueLeft(ctx, rdb, "events", false)
		if err != nil || n > 0 {
			empty = 0
			return false, err
		}
		empty++
		return empty == 2, nil
	})
}

// benchList measures one filtered list, path with its query: a first read of 100 (not
// measured, its time printed: it gives the cursor of the deep page, and on the embedded store
// the service builds its in-memory index of the collection at the first query that needs it,
// a cost paid once per process), then the first page (limit 10) and a page after the first
// 100 matches (after all of them when fewer match).
func benchList(ctx context.Context, api load.API, cpu *cpuMeter, path string, stdout io.Writer) error {
	t0 := time.Now()
	first, err := api.Call(fasthttp.MethodGet, path+"&limit=100", "")
	if err != nil {
		return err
	}
	took := time.Since(t0)
	var page struct {
		Data []struct{ ID string }
	}
	if err := json.Unmarshal(first, &page); err != nil {
		return fmt.Errorf("list %s: %.200s", path, first)
	}
	fmt.Fprintf(stdout, "    first read (limit 100, not counted; builds the service's index of the collection if it has none): %s\n", load.Ms(took))
	if len(page.Data) == 0 {
		fmt.Fprintf(stdout, "    nothing matches (too few objects created?): nothing to measure\n")
		return nil
	}
	deep := page.Data[len(page.Data)-1].ID
	if err := readList(ctx, api, cpu, "first page (limit 10)", path, stdout); err != nil {
		return err
	}
	return readList(ctx, api, cpu, fmt.Sprintf("a page after the first %d matches", len(page.Data)), path+"&starting_after="+deep, stdout)
}

// readList reads path one request at a time and prints p50, p99 and max against listTarget,
// then the CPU per read.
func readList(ctx context.Context, api load.API, cpu *cpuMeter, name, path string, stdout io.Writer) error {
	lat := make([]time.Duration, 0, listReads)
	c0 := cpu.sample()
	start := time.Now()
	for len(lat) < listReads && ctx.Err() == nil && (len(lat) < listMinReads || time.Since(start) < listBudget) {
		t0 := time.Now()
		if _, err := api.Call(fasthttp.MethodGet, path, ""); err != nil {
			return err
		}
		lat = append(lat, time.Since(t0))
	}
	line := cpu.per(c0, len(lat), "list request")
	if len(lat) == 0 {
		return ctx.Err()
	}
	slices.Sort(lat)
	p99 := load.Pct(lat, 99)
	verdict := "met"
	if p99 > listTarget {
		verdict = "missed"
	}
	fmt.Fprintf(stdout, "    %-36s %d reads one at a time: p50 %s  p99 %s  max %s  (target p99 ≤ %v: %s)\n",
		name+":", len(lat), load.Ms(load.Pct(lat, 50)), load.Ms(p99), load.Ms(lat[len(lat)-1]), listTarget, verdict)
	fmt.Fprintf(stdout, "      %s\n", line)
	return nil
}
