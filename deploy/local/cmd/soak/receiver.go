package main

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// receiver is the local TLS server the soak's webhook endpoints point at. Unlike the end-to-end
// tests' receiver, which keeps every request, it keeps only the event ids it got (the
// webhook-id header) and each first arrival's time: a soak runs for long, and what it holds
// must not be what grows.
type receiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	seen     map[string]struct{}
	arrivals []time.Time // one per event id, its first delivery
}

func startReceiver() *receiver {
	r := &receiver{seen: map[string]struct{}{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	r.srv = srv
	return r
}

func (r *receiver) serve(w http.ResponseWriter, hr *http.Request) {
	_, _ = io.Copy(io.Discard, hr.Body)
	id := hr.Header.Get("webhook-id")
	r.mu.Lock()
	if _, dup := r.seen[id]; !dup && id != "" {
		r.seen[id] = struct{}{}
		r.arrivals = append(r.arrivals, time.Now())
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) url() string { return r.srv.URL }

func (r *receiver) close() { r.srv.Close() }

// missing returns the ids of events not delivered yet.
func (r *receiver) missing(ids []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, id := range ids {
		if _, ok := r.seen[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}

// deliveries returns the first arrival of each event, as time since start.
func (r *receiver) deliveries(start time.Time) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]time.Duration, len(r.arrivals))
	for i, t := range r.arrivals {
		out[i] = t.Sub(start)
	}
	return out
}
