package asynqx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"rentalplatform/embedded/testkit"
)

// collect reads every data point of the reader, by metric name and attribute set.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]map[attribute.Distinct]any {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[attribute.Distinct]any{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			points := map[attribute.Distinct]any{}
			switch d := m.Data.(type) {
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					points[p.Attributes.Equivalent()] = p.Value
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					points[p.Attributes.Equivalent()] = p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					points[p.Attributes.Equivalent()] = p.Count
				}
			}
			out[m.Name] = points
		}
	}
	return out
}

func set(kv ...string) attribute.Distinct {
	var attrs []attribute.KeyValue
	for i := 0; i+1 < len(kv); i += 2 {
		attrs = append(attrs, attribute.String(kv[i], kv[i+1]))
	}
	s := attribute.NewSet(attrs...)
	return s.Equivalent()
}

// The queue gauges read what asynq holds, by state; a queue asynq has never seen reads 0.
func TestObserveQueues(t *testing.T) {
	opt, err := RedisOpt(testkit.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	client := asynq.NewClient(opt)
	inspector := asynq.NewInspector(opt)
	t.Cleanup(func() { client.Close(); inspector.Close() })
	for i, at := range []time.Duration{0, 0, time.Hour} {
		task := asynq.NewTask("t", nil)
		if _, err := client.Enqueue(task, asynq.Queue("busy"), asynq.TaskID(fmt.Sprint(i)), asynq.ProcessIn(at)); err != nil {
			t.Fatal(err)
		}
	}
	reader := sdkmetric.NewManualReader()
	if _, err := ObserveQueues(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), inspector, "busy", "never"); err != nil {
		t.Fatal(err)
	}
	got := collect(t, reader)
	tasks, latency := got[MetricQueueTasks], got[MetricQueueLatency]
	for _, c := range []struct {
		queue, state string
		want         int64
	}{
		{"busy", "pending", 2}, {"busy", "scheduled", 1}, {"busy", "active", 0}, {"busy", "retry", 0}, {"busy", "archived", 0},
		{"never", "pending", 0}, {"never", "scheduled", 0},
	} {
		if v, ok := tasks[set("queue", c.queue, "state", c.state)]; !ok || v.(int64) != c.want {
			t.Errorf("%s %s: %v (reported %v), want %d", c.queue, c.state, v, ok, c.want)
		}
	}
	if v, ok := latency[set("queue", "busy")]; !ok || v.(float64) < 0 || v.(float64) > 60 {
		t.Errorf("latency of busy: %v (reported %v)", v, ok)
	}
	if v, ok := latency[set("queue", "never")]; !ok || v.(float64) != 0 {
		t.Errorf("latency of never: %v (reported %v)", v, ok)
	}
}

// Tasks are measured by queue, type and what asynq does next with them.
func TestMetricsMiddleware(t *testing.T) {
	opt, err := RedisOpt(testkit.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	measure, err := MetricsMiddleware(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	srv := asynq.NewServer(opt, ServerConfig(map[string]int{"work": 1}, 2, slog.New(slog.DiscardHandler)))
	mux := asynq.NewServeMux()
	mux.Use(measure)
	done := make(chan struct{}, 3)
	mux.HandleFunc("ok", func(context.Context, *asynq.Task) error { done <- struct{}{}; return nil })
	mux.HandleFunc("bad", func(context.Context, *asynq.Task) error {
		done <- struct{}{}
		return fmt.Errorf("%w: undecodable", asynq.SkipRetry)
	})
	mux.HandleFunc("flaky", func(context.Context, *asynq.Task) error { done <- struct{}{}; return errors.New("store down") })
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	client := asynq.NewClient(opt)
	t.Cleanup(func() { client.Close() })
	for _, typ := range []string{"ok", "bad", "flaky"} {
		if _, err := client.Enqueue(asynq.NewTask(typ, nil), asynq.Queue("work"), asynq.MaxRetry(3)); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("tasks not handled within 30s")
		}
	}
	// The middleware records after the handler returns.
	deadline := time.Now().Add(5 * time.Second)
	for {
		h := collect(t, reader)[MetricProcessDuration]
		want := map[attribute.Distinct]bool{}
		for typ, outcome := range map[string]string{"ok": OutcomeOK, "bad": OutcomeArchived, "flaky": OutcomeRetry} {
			want[set("asynq.task.type", typ, "messaging.destination.name", "work", "messaging.system", "asynq", "outcome", outcome)] = true
		}
		n := 0
		for k, v := range h {
			if want[k] && v.(uint64) == 1 {
				n++
			}
		}
		if n == 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("measured %v; want one of each of ok, archived (SkipRetry) and retry", h)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
