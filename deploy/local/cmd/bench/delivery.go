package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"rentalplatform/deploy/local/e2e/receiver"
	"rentalplatform/deploy/local/internal/load"
	"rentalplatform/deploy/local/stack"
)

// benchDeliveries measures event-to-delivery: events are caused through the API at a fixed rate
// (updates of webhook endpoints, which emit webhook_endpoint.updated) and delivered to a local
// TLS receiver subscribed to that type. Latency runs from the API's response to the delivery's
// arrival. The throughput run prints the CPU per delivery: from the first update to the last
// delivery's arrival, the updates that caused them included.
func benchDeliveries(ctx context.Context, st *stack.Stack, cpu *cpuMeter, s settings, stdout io.Writer) error {
	rcv := receiver.Start()
	defer rcv.Close()
	api := load.API{Base: st.GatewayURL, Key: st.DevAPIKey, Client: load.NewClient(512)}

	// Updates are spread over several source endpoints: updates of one endpoint are applied one
	// after the other, and the benchmark is about delivery, not about one document's lock.
	var sources []string
	for i := 0; i < 50; i++ {
		id, err := api.CreateEndpoint(fmt.Sprintf("https://example.com/source-%d", i), "payment_request.failed")
		if err != nil {
			return err
		}
		sources = append(sources, id)
	}

	idle, err := redisRate(ctx, st, 5*time.Second)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nEvent to delivery (webhook_endpoint.updated → local TLS receiver):\n")
	fmt.Fprintf(stdout, "  Redis at idle (all pollers): %.0f commands/s\n", idle)

	latSub, err := api.CreateEndpoint(rcv.URL()+"/latency", "webhook_endpoint.updated")
	if err != nil {
		return err
	}
	l0 := cpu.sample()
	lat, missing, l1, _, err := causeAndMeasure(ctx, api, rcv, cpu, sources, "/latency", 1, s.eventRate, s.duration)
	if err != nil {
		return err
	}
	slices.Sort(lat)
	fmt.Fprintf(stdout, "  %d events/s for %s, 1 endpoint: p50 %s  p95 %s  p99 %s  max %s  (targets at 500 events/s: p50 ≤ 10ms, p99 ≤ 50ms)  missing %d\n",
		s.eventRate, s.duration, load.Ms(load.Pct(lat, 50)), load.Ms(load.Pct(lat, 95)), load.Ms(load.Pct(lat, 99)), load.Ms(load.Pct(lat, 100)), missing)
	// Beside the latency, what one event costs end to end: when it is more than the machine's
	// CPUs over the rate, the run is saturated and the latency is queueing.
	fmt.Fprintf(stdout, "    %s\n", cpu.between(l0, l1, len(lat), "event (its update through the API, its delivery)"))
	if err := api.Delete(latSub); err != nil {
		return err
	}

	const subscribers = 20
	if s.deliveryRate < subscribers {
		return nil // skipped: -delivery-rate 0, or below one event a second for the 20 endpoints
	}
	for i := 0; i < subscribers; i++ {
		if _, err := api.CreateEndpoint(fmt.Sprintf("%s/fanout-%d", rcv.URL(), i), "webhook_endpoint.updated"); err != nil {
			return err
		}
	}
	before, _ := st.RedisCommands(ctx)
	rate := s.deliveryRate / subscribers
	start := time.Now()
	c0 := cpu.sample()
	tlat, missing, c1, flow, err := causeAndMeasure(ctx, api, rcv, cpu, sources, "/fanout-", subscribers, rate, s.duration)
	if err != nil {
		return err
	}
	after, _ := st.RedisCommands(ctx)
	elapsed := time.Since(start)
	slices.Sort(tlat)
	delivered := len(tlat)
	fmt.Fprintf(stdout, "  %d events/s × %d endpoints for %s: %d deliveries in %s = %.0f deliveries/s, the last one's latency included\n",
		rate, subscribers, s.duration, delivered, elapsed.Round(time.Millisecond), float64(delivered)/elapsed.Seconds())
	// The target is about keeping up (flow.go): the rate over the run's last two thirds, with
	// the backlog not growing.
	if w, ok := steadyWindow(flow, s.duration); ok {
		fmt.Fprintf(stdout, "    sustained: %s  (target ≥ 3000 deliveries/s, the backlog not growing)\n", w)
	}
	fmt.Fprintf(stdout, "    latency p50 %s  p99 %s  max %s  missing %d; Redis %.0f commands/s under load\n",
		load.Ms(load.Pct(tlat, 50)), load.Ms(load.Pct(tlat, 99)), load.Ms(load.Pct(tlat, 100)), missing, float64(after-before)/elapsed.Seconds())
	fmt.Fprintf(stdout, "    %s\n", cpu.between(c0, c1, delivered, "delivery"))
	return nil
}

// causeAndMeasure updates the sources at rate per second for d, each update with a unique
// description, waits for every expected delivery (perEvent per update) on paths starting with
// pathPrefix, and returns each delivery's latency from its update's response, how many are
// missing, cpu's sample as the waiting ended (before the deliveries are read back, which
// is the benchmark's work, not the platform's), and the flow sampled while the updates were
// made.
func causeAndMeasure(ctx context.Context, api load.API, rcv *receiver.Receiver, cpu *cpuMeter, sources []string, pathPrefix string, perEvent, rate int, d time.Duration) ([]time.Duration, int, cpuSample, []flowSample, error) {
	tag := strconv.FormatInt(time.Now().UnixNano(), 36)
	before := rcv.Count("")
	interval := time.Second / time.Duration(rate)
	n := int(d / interval)
	responded := make([]time.Time, n)
	var failed []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	var answered atomic.Int64
	start := time.Now()
	// The flow (flow.go), sampled every 100 ms while updates are made: arrivals here count
	// every delivery to the receiver, which this run alone is sending to.
	var flow []flowSample
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			flow = append(flow, flowSample{at: time.Since(start), owed: int(answered.Load()) * perEvent, arrived: rcv.Count("") - before})
			select {
			case <-stopSampling:
				return
			case <-t.C:
			}
		}
	}()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		if w := time.Until(start.Add(time.Duration(i) * interval)); w > 0 {
			time.Sleep(w)
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			err := api.Update(sources[i%len(sources)], fmt.Sprintf("%s-%d", tag, i))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, err)
				return
			}
			responded[i] = time.Now()
			answered.Add(1)
		}(i)
	}
	wg.Wait()
	close(stopSampling)
	<-sampled
	if len(failed) > 0 {
		// An overloaded system is a result, not an error: report it and measure what got through.
		fmt.Printf("    %d of %d updates failed (first: %v)\n", len(failed), n, failed[0])
	}
	want := (n - len(failed)) * perEvent
	count := func() []receiver.Request {
		var out []receiver.Request
		for _, p := range rcvPaths(rcv, pathPrefix, perEvent) {
			out = append(out, rcv.Requests(p)...)
		}
		return out
	}
	// Waiting counts arrivals (cheap); the requests themselves are read once, at the end: copying
	// them on every poll took CPU away from what is measured.
	deadline := time.Now().Add(60 * time.Second)
	for rcv.Count("")-before < want && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	arrived := cpu.sample()
	got := count()
	seen := map[string]bool{}
	var lat []time.Duration
	for _, r := range got {
		var body struct {
			Data struct {
				Object struct {
					Description string `json:"description"`
				} `json:"object"`
			} `json:"data"`
		}
		if json.Unmarshal(r.Body, &body) != nil {
			continue
		}
		desc := body.Data.Object.Description
		key := r.Path + " " + desc
		if !strings.HasPrefix(desc, tag+"-") || seen[key] {
			continue // another run's event, or a retry of one already counted
		}
		seen[key] = true
		i, err := strconv.Atoi(strings.TrimPrefix(desc, tag+"-"))
		if err != nil || i >= n || responded[i].IsZero() {
			continue // not ours, or its update timed out at the client and has no response time
		}
		lat = append(lat, r.Time.Sub(responded[i]))
	}
	return lat, want - len(lat), arrived, flow, nil
}

func rcvPaths(rcv *receiver.Receiver, prefix string, n int) []string {
	if n == 1 {
		return []string{prefix}
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// redisRate samples Redis's command counter over d.
func redisRate(ctx context.Context, st *stack.Stack, d time.Duration) (float64, error) {
	a, err := st.RedisCommands(ctx)
	if err != nil {
		return 0, err
	}
	time.Sleep(d)
	b, err := st.RedisCommands(ctx)
	if err != nil {
		return 0, err
	}
	return float64(b-a) / d.Seconds(), nil
}
