package main

// The payments benchmark (issue 11 §4), all through the gateway with a test key of an account
// of its own per part:
//
//	(a) N payment requests created in bulk calls of 100 against tok_test_success agreements:
//	    create requests/s, the time until every one is succeeded, and until webhooks-svc has
//	    stored their events; "fully collected per second" is N over the time from the first
//	    create to the later of the two.
//	(b) p99 latency of single creates (POST /v1/payment_requests) at a fixed 100/s.
//	(c) M requests against tok_test_insufficient_funds agreements: attempt 1 fails and attempt
//	    2 is scheduled 24 h later, so M scheduled retries are held in Redis (asynq's scheduled
//	    set of the "payments" queue); their Redis memory is printed.
//	(d) L requests of one account in bulk calls of 100, one in ten against a
//	    tok_test_insufficient_funds agreement (so processing, its retry scheduled) and the rest
//	    against tok_test_success ones (succeeded); then the list by status
//	    (status=processing: the first page, and a page after the first 100 matches) read one at
//	    a time: p50/p99 against p99 ≤ 100 ms (issue 31, point 4; lists.go). After (c), so that
//	    its scheduled retries are not counted in (c)'s memory; the collection then holds (c)'s
//	    requests of another account too, older than these.
//
// Each part prints the CPU time per unit it counts (cpumeter.go): per payment request fully
// collected in (a), per create in (b), per request created and attempted and per list request
// in (d), per retry scheduled in (c).
//
// How completion is seen, cheaply enough not to slow what is measured (a list filtered by
// status costs the gateway, payments-svc and the store; part (d) measures it, about 1.5 ms of
// CPU a read on the embedded store, where it once scanned the whole collection): in Redis. Attempts run: the "payments" queue holds no task (one per attempt) waiting, running
// or to retry. Events stored: after that, the "events" queue holds no task (an event, or the
// events of one change as a batch; webhooks-svc finishes a task once its events are stored)
// at two polls in a row. Checked once at the end: no request of the account pending,
// processing, failed or cancelled (through the API), and as many of the account's events in
// webhooks-svc's store as expected (counted there; should some still be missing, the time
// they are all there is the one reported). Scheduled retries: ZCARD of
// asynq:{payments}:scheduled.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/deploy/local/internal/load"
	"rentalplatform/deploy/local/stack"
	"rentalplatform/libs/docstore"
)

// Redis keys of the asynq queues the benchmark watches (asynq v0.26's layout).
const (
	paymentsScheduledKey = "asynq:{payments}:scheduled"
	paymentsKeyPattern   = "asynq:{payments}:*"
)

// bulkSize is the most requests one bulk create takes.
const bulkSize = 100

// bulkConcurrency is how many bulk calls are in flight at once.
const bulkConcurrency = 4

// payBench is the state shared by the parts: the stack, a Redis client on the stack's Redis,
// and what was created so far (the collection sizes the figures are printed with).
type payBench struct {
	st     *stack.Stack
	cpu    *cpuMeter
	rdb    *redis.Client
	events *mongo.Collection // webhooks-svc's events in the stack's store, where they are counted
	out    io.Writer
	client *fasthttp.Client
	real   bool // a real Redis (REDIS_URL), where INFO memory exists

	requests   int // payment requests created so far in this stack
	agreements int
}

func benchPayments(ctx context.Context, st *stack.Stack, cpu *cpuMeter, s settings, getenv func(string) string, stdout io.Writer) error {
	opt, err := redis.ParseURL(st.RedisURL)
	if err != nil {
		return err
	}
	b := &payBench{st: st, cpu: cpu, rdb: redis.NewClient(opt), out: stdout, client: load.NewClient(512), real: getenv("REDIS_URL") != ""}
	defer b.rdb.Close()
	storeClient, err := mongo.Connect(options.Client().ApplyURI(st.MongoURI))
	if err != nil {
		return err
	}
	defer storeClient.Disconnect(context.WithoutCancel(ctx))
	// Opened as webhooks-svc opens it, so that Collection finds the events where they are stored.
	webhooksDB, err := docstore.Open(ctx, storeClient.Database(st.DatabasePrefix+"webhooks"))
	if err != nil {
		return err
	}
	b.events = webhooksDB.Collection("events")

	store := "embedded FerretDB v1.24 (SQLite)"
	if getenv("MONGODB_URI") != "" {
		store = "MongoDB at MONGODB_URI"
	}
	redisDesc := "embedded miniredis"
	if b.real {
		redisDesc = "Redis at REDIS_URL"
	}
	fmt.Fprintf(stdout, "\nPayments — %d CPUs, store: %s, Redis: %s; through the gateway with test keys, rate limits off.\n", runtime.NumCPU(), store, redisDesc)
	fmt.Fprintf(stdout, "The load generator (and, embedded, both stores) share this machine's CPUs.\n")

	// A count of 0 skips its part (-payment-requests 0 skips (a), -payment-list-requests 0
	// skips (d), -payment-retries 0 skips (c)).
	if s.payRequests > 0 {
		if err := b.collect(ctx, s.payRequests); err != nil {
			return fmt.Errorf("payments (a): %w", err)
		}
	}
	if err := b.createLatency(ctx, s); err != nil {
		return fmt.Errorf("payments (b): %w", err)
	}
	if s.payRetries > 0 {
		if err := b.retries(ctx, s.payRetries); err != nil {
			return fmt.Errorf("payments (c): %w", err)
		}
	}
	if s.payList > 0 {
		if err := b.list(ctx, s.payList); err != nil {
			return fmt.Errorf("payments (d): %w", err)
		}
	}
	return nil
}

// collect is part (a).
func (b *payBench) collect(ctx context.Context, n int) error {
	api, err := b.account(ctx, "acct_benchcollect")
	if err != nil {
		return err
	}
	fmt.Fprintf(b.out, "\n(a) %d payment requests in bulk calls of %d (%d in flight) against 100 tok_test_success agreements\n", n, bulkSize, bulkConcurrency)
	fmt.Fprintf(b.out, "    collections before: %s\n", b.sizes(ctx))
	attemptsBefore, err := b.tasksDone(ctx, "payments")
	if err != nil {
		return err
	}
	agreements, err := b.createAgreements(api, 100, "tok_test_success")
	if err != nil {
		return err
	}

	start := time.Now()
	c0 := b.cpu.sample()
	ids, err := b.bulkCreate(ctx, api, agreements, n, "a", nil)
	if err != nil {
		return err
	}
	created := time.Since(start)
	fmt.Fprintf(b.out, "    created %d in %s: %.0f creates/s\n", len(ids), created.Round(time.Millisecond), float64(len(ids))/created.Seconds())

	// Every request's attempt has run (tok_test_success: attempt 1 succeeds): the payments
	// queue holds no task any more, waiting, running or to retry (each create queued its
	// request's first attempt before answering). And webhooks-svc has stored every event
	// (payment_request.created, .processing and .succeeded per request, and
	// payment_agreement.created per agreement): once the attempts have run, the events queue
	// is empty at two polls in a row (an attempt's events are queued just after its write).
	// Both are watched in Redis, which costs the store nothing; counts of tasks would not do,
	// since the reconciler queues an attempt again once it is late (a backlog here), and the
	// events of one change travel as one task. The stores are checked once at the end.
	// Each request: created, processing, its charge's charge.succeeded, succeeded.
	wantEvents := 4*n + len(agreements)
	var succeeded, stored time.Duration
	var attemptsRun int
	drained := 0
	if err := load.Poll(ctx, 30*time.Minute, 50*time.Millisecond, func() (bool, error) {
		if succeeded == 0 {
			left, err := queueLeft(ctx, b.rdb, "payments", false)
			if err != nil {
				return false, err
			}
			if left == 0 {
				succeeded = time.Since(start)
				done, err := b.tasksDone(ctx, "payments")
				if err != nil {
					return false, err
				}
				attemptsRun = done - attemptsBefore
			}
		}
		if succeeded > 0 && stored == 0 {
			left, err := queueLeft(ctx, b.rdb, "events", false)
			if err != nil {
				return false, err
			}
			if drained++; left > 0 {
				drained = 0
			} else if drained == 2 {
				stored = time.Since(start)
			}
		}
		return succeeded > 0 && stored > 0, nil
	}); err != nil {
		return fmt.Errorf("waiting for %d attempts and %d events: %w", n, wantEvents, err)
	}
	c1 := b.cpu.sample()

	// The check, not timed: no request of the account is left pending, processing, failed or
	// cancelled (each list with limit=1), and no event task is left waiting, retrying or
	// archived. Should a request still be open, the time it closes is the one reported.
	t0 := time.Now()
	var open []string
	checks := 0
	var lastCheck time.Duration
	if err := load.Poll(ctx, 10*time.Minute, 250*time.Millisecond, func() (bool, error) {
		checks++
		lastCheck = time.Since(start)
		open = open[:0]
		for _, status := range []string{"pending", "processing", "failed", "cancelled"} {
			some, err := api.Any("/v1/payment_requests?limit=1&status=" + status)
			if err != nil {
				return false, err
			}
			if some {
				open = append(open, status)
			}
		}
		return len(open) == 0 || slices.Contains(open, "failed") || slices.Contains(open, "cancelled"), nil
	}); err != nil {
		return fmt.Errorf("checking that every request succeeded (some are %v): %w", open, err)
	}
	if len(open) > 0 {
		return fmt.Errorf("some requests of the run are %v", open)
	}
	if checks > 1 {
		fmt.Fprintf(b.out, "    !! requests were still open when their attempts were counted; the check saw them all succeeded at %s\n", lastCheck.Round(time.Millisecond))
		succeeded = max(succeeded, lastCheck)
	}
	var have int64
	counts := 0
	if err := load.Poll(ctx, 10*time.Minute, 250*time.Millisecond, func() (bool, error) {
		counts++
		lastCheck = time.Since(start)
		var err error
		have, err = b.storedEvents(ctx, "acct_benchcollect")
		return have >= int64(wantEvents), err
	}); err != nil {
		return fmt.Errorf("checking that webhooks-svc stored the %d events (has %d): %w", wantEvents, have, err)
	}
	if have > int64(wantEvents) {
		return fmt.Errorf("webhooks-svc stored %d events of the account, want %d", have, wantEvents)
	}
	if counts > 1 {
		fmt.Fprintf(b.out, "    !! events were still missing when the events queue was empty; all were stored by %s\n", lastCheck.Round(time.Millisecond))
		stored = max(stored, lastCheck)
	}
	checkTook := time.Since(t0)
	waiting, err := queueLeft(ctx, b.rdb, "events", true)
	if err != nil {
		return err
	}
	total := max(succeeded, stored)

	fmt.Fprintf(b.out, "    all %d succeeded %s after the first create: %.0f collected/s\n", n, succeeded.Round(time.Millisecond), float64(n)/succeeded.Seconds())
	fmt.Fprintf(b.out, "    their %d events stored by webhooks-svc %s after the first create\n", wantEvents, stored.Round(time.Millisecond))
	fmt.Fprintf(b.out, "    => %.0f payment requests fully collected per second, events stored included (target ≥ 1000)\n", float64(n)/total.Seconds())
	// Measured to the poll that saw the events stored (up to 50 ms late): creates, attempts,
	// events and the polling itself.
	fmt.Fprintf(b.out, "       %s\n", b.cpu.between(c0, c1, n, "collected payment"))
	if !b.real {
		// Measured so, the queue's cost is the interpreter's, not Redis's: state which figure
		// the target is about, and how to get it.
		fmt.Fprintf(b.out, "       (Redis here is the embedded miniredis, which runs asynq's Lua scripts in an interpreter, in the embedded\n"+
			"       stores' process; the target is measured against a real Redis: REDIS_URL=redis://127.0.0.1:6379/12 make bench BENCH_FLAGS='-only payments')\n")
	}
	fmt.Fprintf(b.out, "    checked: none of the account's requests pending, processing, failed or cancelled, and its %d events in webhooks-svc's store (the checks took %s); events queue: %d tasks left\n",
		wantEvents, checkTook.Round(time.Millisecond), waiting)
	if attemptsRun > n {
		fmt.Fprintf(b.out, "    attempt tasks run: %d for %d requests (the rest: attempts the reconciler queued again once late, which found them done)\n", attemptsRun, n)
	}
	return nil
}

// createLatency is part (b): single creates at a fixed 100/s, latency from each one's
// scheduled start (openLoop), against 10 tok_test_success agreements (each create also starts
// an attempt and stores three events in the background, as in production).
func (b *payBench) createLatency(ctx context.Context, s settings) error {
	const rate = 100
	api, err := b.account(ctx, "acct_benchlatency")
	if err != nil {
		return err
	}
	agreements, err := b.createAgreements(api, 10, "tok_test_success")
	if err != nil {
		return err
	}
	if err := b.settle(ctx); err != nil {
		return err
	}
	fmt.Fprintf(b.out, "\n(b) POST /v1/payment_requests at %d/s for %s (after %s unmeasured), 10 tok_test_success agreements\n", rate, s.duration, s.warmup)
	fmt.Fprintf(b.out, "    collections before: %s\n", b.sizes(ctx))
	var seq atomic.Int64
	t := target{name: "create", url: b.st.GatewayURL + "/v1/payment_requests", prepare: func(r *fasthttp.Request) {
		i := seq.Add(1)
		r.Header.SetMethod(fasthttp.MethodPost)
		r.Header.Set("Authorization", "Bearer "+api.Key)
		r.Header.SetContentType("application/json")
		r.SetBodyString(fmt.Sprintf(`{"payment_agreement":%q,"amount":%d,"currency":"eur","description":"rent"}`, agreements[int(i)%len(agreements)], 1000+i))
	}}
	openLoop(ctx, t, rate, s.warmup)
	c0 := b.cpu.sample()
	r := openLoop(ctx, t, rate, s.duration)
	b.requests += int(seq.Load())
	fmt.Fprintf(b.out, "    %s  (target p99 ≤ 50ms)\n", r)
	// The answered creates; their attempts and events run meanwhile, in the background.
	fmt.Fprintf(b.out, "      %s\n", b.cpu.per(c0, r.sent-r.failed, "request"))
	return nil
}

// retries is part (c).
func (b *payBench) retries(ctx context.Context, n int) error {
	api, err := b.account(ctx, "acct_benchretries")
	if err != nil {
		return err
	}
	agreements, err := b.createAgreements(api, 100, "tok_test_insufficient_funds")
	if err != nil {
		return err
	}
	if err := b.settle(ctx); err != nil {
		return err
	}
	fmt.Fprintf(b.out, "\n(c) %d scheduled retries: requests against 100 tok_test_insufficient_funds agreements, in bulk calls of %d;\n", n, bulkSize)
	fmt.Fprintf(b.out, "    attempt 1 fails and attempt 2 is scheduled 24 h later (%s)\n", paymentsScheduledKey)
	fmt.Fprintf(b.out, "    collections before: %s\n", b.sizes(ctx))
	before, err := b.rdb.ZCard(ctx, paymentsScheduledKey).Result()
	if err != nil {
		return err
	}
	usedBefore, _ := b.usedMemory(ctx)

	start := time.Now()
	c0 := b.cpu.sample()
	ids, err := b.bulkCreate(ctx, api, agreements, n, "c", newProgress(b.out, n))
	if err != nil {
		return err
	}
	created := time.Since(start)
	fmt.Fprintf(b.out, "    created %d in %s: %.0f creates/s\n", len(ids), created.Round(time.Millisecond), float64(len(ids))/created.Seconds())

	var held int64
	var scheduled time.Duration
	lastReport := time.Now()
	if err := load.Poll(ctx, 60*time.Minute, 250*time.Millisecond, func() (bool, error) {
		c, err := b.rdb.ZCard(ctx, paymentsScheduledKey).Result()
		if err != nil {
			return false, err
		}
		held = c - before
		if time.Since(lastReport) > 30*time.Second {
			fmt.Fprintf(b.out, "      … %d retries scheduled after %s\n", held, time.Since(start).Round(time.Second))
			lastReport = time.Now()
		}
		if held < int64(n) {
			return false, nil
		}
		scheduled = time.Since(start)
		return true, nil
	}); err != nil {
		return fmt.Errorf("waiting for %d scheduled retries (have %d): %w", n, held, err)
	}
	fmt.Fprintf(b.out, "    all %d retries scheduled %s after the first create: %.0f attempts run and rescheduled/s\n",
		held, scheduled.Round(time.Millisecond), float64(held)/scheduled.Seconds())
	fmt.Fprintf(b.out, "      %s\n", b.cpu.per(c0, int(held), "retry scheduled"))

	if err := b.printMemory(ctx, n, usedBefore, "with every retry scheduled"); err != nil {
		return err
	}

	// The run's events (created, processing, retrying per request) are stored by webhooks-svc
	// meanwhile; they wait in the events queue, whose keys are counted under "all keys" only.
	// Once they are stored, what Redis holds is the schedule alone: measured again if that
	// happens within drainWait.
	const drainWait = 3 * time.Minute
	t0 := time.Now()
	if err := b.settleFor(ctx, drainWait); err != nil {
		left, _ := queueLeft(ctx, b.rdb, "events", false)
		fmt.Fprintf(b.out, "    the events queue still holds %d tasks after %s more\n", left, time.Since(t0).Round(time.Second))
		return nil
	}
	fmt.Fprintf(b.out, "    webhooks-svc had stored the run's events %s after the last retry was scheduled (%s after the first create)\n",
		time.Since(t0).Round(time.Second), time.Since(start).Round(time.Second))
	return b.printMemory(ctx, n, usedBefore, "once the events are stored")
}

// list is part (d).
func (b *payBench) list(ctx context.Context, n int) error {
	api, err := b.account(ctx, "acct_benchlists")
	if err != nil {
		return err
	}
	// Ten agreements; element j of each bulk call is against agreements[j % 10] (bulkCreate),
	// so one request in ten is against the one whose card lacks funds.
	const processingAt = 3
	agreements, err := b.createAgreements(api, 9, "tok_test_success")
	if err != nil {
		return err
	}
	short, err := b.createAgreements(api, 1, "tok_test_insufficient_funds")
	if err != nil {
		return err
	}
	agreements = slices.Insert(agreements, processingAt, short[0])
	// (c)'s events may still be on their way to webhooks-svc's store (it waits for them a few
	// minutes only).
	if err := b.settleFor(ctx, 30*time.Minute); err != nil {
		return err
	}
	processing := 0
	for i := range n {
		if i%bulkSize%len(agreements) == processingAt {
			processing++
		}
	}
	fmt.Fprintf(b.out, "\n(d) %d payment requests of one account in bulk calls of %d, one in ten against a tok_test_insufficient_funds agreement\n", n, bulkSize)
	fmt.Fprintf(b.out, "    (attempt 1 fails, the request stays processing with its retry scheduled) and the rest against tok_test_success ones;\n")
	fmt.Fprintf(b.out, "    then GET /v1/payment_requests?status=processing (%d of them match)\n", processing)
	c0 := b.cpu.sample()
	start := time.Now()
	ids, err := b.bulkCreate(ctx, api, agreements, n, "d", nil)
	if err != nil {
		return err
	}
	// Every attempt run and every event stored: the list reads a quiet platform. Twice, a
	// moment apart: an event the outbox relay has yet to publish is in no queue.
	for range 2 {
		if err := b.settleFor(ctx, 30*time.Minute); err != nil {
			return fmt.Errorf("waiting for the attempts and events of %d requests: %w", len(ids), err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	took := time.Since(start)
	fmt.Fprintf(b.out, "    created %d, their attempts run and events stored, in %s\n", len(ids), took.Round(time.Millisecond))
	fmt.Fprintf(b.out, "      %s\n", b.cpu.per(c0, len(ids), "request created and attempted"))
	fmt.Fprintf(b.out, "    collections now: %s\n", b.sizes(ctx))
	return benchList(ctx, api, b.cpu, "/v1/payment_requests?status=processing", b.out)
}

// printMemory prints what the payments queue's keys take in Redis, per scheduled retry.
func (b *payBench) printMemory(ctx context.Context, n int, usedBefore int64, when string) error {
	m, err := b.keysMemory(ctx)
	if err != nil {
		return err
	}
	mib := func(v int64) string { return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20)) }
	fmt.Fprintf(b.out, "    Redis, %s:\n", when)
	fmt.Fprintf(b.out, "      %s keys: %d (%d scheduled tasks), %s by MEMORY USAGE of each + its name = %.0f bytes per retry; %s per 100,000 (target ≤ 100 MiB)\n",
		paymentsKeyPattern, m.paymentKeys, m.scheduled, mib(m.paymentBytes), float64(m.paymentBytes)/float64(n), mib(m.paymentBytes*100_000/int64(n)))
	kinds := slices.Sorted(maps.Keys(m.byKind))
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s: %d keys, %s", k, m.byKind[k].keys, mib(m.byKind[k].bytes)))
	}
	fmt.Fprintf(b.out, "        (%s)\n", strings.Join(parts, "; "))
	fmt.Fprintf(b.out, "      all keys: %d, %s by the same method (events queue: %d tasks waiting)\n", m.allKeys, mib(m.allBytes), m.eventsWaiting)
	if used, err := b.usedMemory(ctx); err == nil {
		fmt.Fprintf(b.out, "      INFO memory used_memory: %s, %s more than before the run = %.0f bytes per retry\n",
			mib(used), mib(used-usedBefore), float64(used-usedBefore)/float64(n))
	} else if !b.real {
		fmt.Fprintf(b.out, "      (the embedded miniredis has no INFO memory; MEMORY USAGE there is the Go size of each value)\n")
	}
	return nil
}

type redisMemory struct {
	paymentKeys, allKeys     int
	paymentBytes, allBytes   int64
	scheduled, eventsWaiting int64
	// byKind splits the payments queue's keys by what follows "asynq:{payments}:" ("t" for
	// the task hashes, "scheduled", "processed", …).
	byKind map[string]*kindMemory
}

type kindMemory struct {
	keys  int
	bytes int64
}

// keysMemory sums MEMORY USAGE (plus the key's name) over every key, and over the payments
// queue's keys.
func (b *payBench) keysMemory(ctx context.Context) (redisMemory, error) {
	m := redisMemory{byKind: map[string]*kindMemory{}}
	var err error
	if m.scheduled, err = b.rdb.ZCard(ctx, paymentsScheduledKey).Result(); err != nil {
		return m, err
	}
	for _, k := range []string{"asynq:{events}:pending", "asynq:{events}:active"} {
		n, err := b.rdb.LLen(ctx, k).Result()
		if err != nil {
			return m, err
		}
		m.eventsWaiting += n
	}
	var keys []string
	var cursor uint64
	for {
		page, next, err := b.rdb.Scan(ctx, cursor, "*", 10000).Result()
		if err != nil {
			return m, err
		}
		keys = append(keys, page...)
		if cursor = next; cursor == 0 {
			break
		}
	}
	const batch = 1000
	for i := 0; i < len(keys); i += batch {
		part := keys[i:min(i+batch, len(keys))]
		pipe := b.rdb.Pipeline()
		cmds := make([]*redis.IntCmd, len(part))
		for j, k := range part {
			cmds[j] = pipe.MemoryUsage(ctx, k)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return m, fmt.Errorf("MEMORY USAGE: %w", err)
		}
		for j, k := range part {
			v, err := cmds[j].Result()
			if err != nil {
				continue // gone meanwhile
			}
			size := v + int64(len(k))
			m.allKeys++
			m.allBytes += size
			if rest, ok := strings.CutPrefix(k, "asynq:{payments}:"); ok {
				m.paymentKeys++
				m.paymentBytes += size
				kind, _, _ := strings.Cut(rest, ":")
				if m.byKind[kind] == nil {
					m.byKind[kind] = &kindMemory{}
				}
				m.byKind[kind].keys++
				m.byKind[kind].bytes += size
			}
		}
	}
	return m, nil
}

// usedMemory is INFO memory's used_memory (a real Redis only).
func (b *payBench) usedMemory(ctx context.Context) (int64, error) {
	info, err := b.rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errors.New("no used_memory in INFO memory")
}

// tasksDone is how many tasks of an asynq queue have been done (processed less failed): on
// "payments" one per attempt run.
func (b *payBench) tasksDone(ctx context.Context, queue string) (int, error) {
	get := func(k string) (int, error) {
		v, err := b.rdb.Get(ctx, k).Int()
		if errors.Is(err, redis.Nil) {
			return 0, nil
		}
		return v, err
	}
	processed, err := get("asynq:{" + queue + "}:processed")
	if err != nil {
		return 0, err
	}
	failed, err := get("asynq:{" + queue + "}:failed")
	return processed - failed, err
}

// queueLeft is how many tasks an asynq queue holds waiting, running or to retry, and archived
// too when archived is set.
func queueLeft(ctx context.Context, rdb *redis.Client, queue string, archived bool) (int64, error) {
	var n int64
	for _, part := range []string{"pending", "active"} {
		v, err := rdb.LLen(ctx, "asynq:{"+queue+"}:"+part).Result()
		if err != nil {
			return 0, err
		}
		n += v
	}
	sets := []string{"retry"}
	if archived {
		sets = append(sets, "archived")
	}
	for _, part := range sets {
		v, err := rdb.ZCard(ctx, "asynq:{"+queue+"}:"+part).Result()
		if err != nil {
			return 0, err
		}
		n += v
	}
	return n, nil
}

// settle waits until the payments and events queues have nothing waiting or running, so a part
// does not measure the previous part's tail.
func (b *payBench) settle(ctx context.Context) error { return b.settleFor(ctx, 5*time.Minute) }

func (b *payBench) settleFor(ctx context.Context, timeout time.Duration) error {
	return load.Poll(ctx, timeout, 250*time.Millisecond, func() (bool, error) {
		for _, q := range []string{"payments", "events"} {
			n, err := queueLeft(ctx, b.rdb, q, false)
			if err != nil || n > 0 {
				return false, err
			}
		}
		return true, nil
	})
}

// sizes describes the collections as they stand: the payment requests and agreements this run
// created, and the events webhooks-svc has stored since the stack started.
func (b *payBench) sizes(ctx context.Context) string {
	ev, err := b.storedEvents(ctx, "")
	evs := strconv.FormatInt(ev, 10)
	if err != nil {
		evs = "?"
	}
	return fmt.Sprintf("payment_requests %d documents, payment_agreements %d, simulated_charges ≈ payment_requests, webhooks-svc events %s", b.requests, b.agreements, evs)
}

// storedEvents counts the events webhooks-svc has stored, of one account or (account "") all:
// in its database directly, since the API lists but does not count.
func (b *payBench) storedEvents(ctx context.Context, account string) (int64, error) {
	coll := b.events
	if account == "" {
		return coll.EstimatedDocumentCount(ctx)
	}
	return coll.CountDocuments(ctx, bson.D{{Key: "account", Value: account}})
}

// account creates a test key for a new account (no rate limit: the stack runs with them off).
func (b *payBench) account(ctx context.Context, account string) (load.API, error) {
	res, status, err := b.st.Admin(ctx, http.MethodPost, "/admin/api_keys", map[string]any{"account": account})
	if err != nil || status != http.StatusCreated {
		return load.API{}, fmt.Errorf("creating a key for %s: %d %v %v", account, status, res, err)
	}
	key, _ := res["secret"].(string)
	return load.API{Base: b.st.GatewayURL, Key: key, Client: b.client}, nil
}

func (b *payBench) createAgreements(api load.API, n int, token string) ([]string, error) {
	body := fmt.Sprintf(`{"tenant":{"name":"Bench Tenant","email":"tenant@example.com"},"payment_methods":[{"type":"sepa_debit","token":%q,"preferred":true}]}`, token)
	out := make([]string, 0, n)
	for range n {
		raw, err := api.Call(fasthttp.MethodPost, "/v1/payment_agreements", body)
		if err != nil {
			return nil, err
		}
		var a struct{ ID string }
		if err := json.Unmarshal(raw, &a); err != nil || a.ID == "" {
			return nil, fmt.Errorf("create agreement: %s", raw)
		}
		out = append(out, a.ID)
	}
	b.agreements += n
	return out, nil
}

// bulkCreate creates n requests in bulk calls of bulkSize, bulkConcurrency calls in flight;
// element j of each call is against agreements[j % len], as a landlord's monthly run over its
// tenants would be. It returns the ids created.
func (b *payBench) bulkCreate(ctx context.Context, api load.API, agreements []string, n int, tag string, prog *progress) ([]string, error) {
	calls := (n + bulkSize - 1) / bulkSize
	ids := make([][]string, calls)
	next := make(chan int)
	errs := make(chan error, bulkConcurrency)
	var wg sync.WaitGroup
	for range bulkConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				size := min(bulkSize, n-c*bulkSize)
				var sb strings.Builder
				sb.WriteString(`{"requests":[`)
				for j := range size {
					if j > 0 {
						sb.WriteByte(',')
					}
					fmt.Fprintf(&sb, `{"payment_agreement":%q,"amount":%d,"currency":"eur","description":"bench %s %d"}`,
						agreements[j%len(agreements)], 1000+j, tag, c*bulkSize+j)
				}
				sb.WriteString(`]}`)
				raw, err := api.Call(fasthttp.MethodPost, "/v1/payment_requests/bulk", sb.String())
				if err != nil {
					errs <- err
					return
				}
				var out struct {
					Data []struct {
						ID string `json:"id"`
					} `json:"data"`
					TotalCreated int `json:"total_created"`
				}
				if err := json.Unmarshal(raw, &out); err != nil || out.TotalCreated != size || len(out.Data) != size {
					errs <- fmt.Errorf("bulk create answered %.200s", raw)
					return
				}
				for _, d := range out.Data {
					ids[c] = append(ids[c], d.ID)
				}
				if prog != nil {
					prog.add(size)
				}
			}
		}()
	}
	var err error
feed:
	for c := range calls {
		select {
		case next <- c:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	var all []string
	for _, part := range ids {
		all = append(all, part...)
	}
	b.requests += len(all)
	return all, err
}

// progress prints how far a long creation has got, every 30 s.
type progress struct {
	mu    sync.Mutex
	out   io.Writer
	total int
	done  int
	start time.Time
	last  time.Time
}

func newProgress(out io.Writer, total int) *progress {
	now := time.Now()
	return &progress{out: out, total: total, start: now, last: now}
}

func (p *progress) add(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if time.Since(p.last) >= 30*time.Second {
		p.last = time.Now()
		fmt.Fprintf(p.out, "      … %d of %d created after %s\n", p.done, p.total, time.Since(p.start).Round(time.Second))
	}
}
