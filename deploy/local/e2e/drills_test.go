package e2e

// Drills (issue 29 §1): each starts the platform the way users do, injects its fault while
// load runs, then checks the invariants (no lost event, no double charge, nothing
// half-applied) by reading the stores and the API, and prints what it did and what it found.
//
// Two sizes: the short form runs in `make test` (and so in CI); `make drills` sets DRILLS=full
// and runs the full form (the loads and fault counts of the issue). Each drill's figures
// (requests, faults, lost, doubled) are logged and, when DRILLS_REPORT names a file, appended to
// it as one line, which `make drills` prints at the end.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/libs/docstore"
)

// drillsFull reports whether the full drills were asked for (make drills).
func drillsFull() bool { return os.Getenv("DRILLS") == "full" }

// scale is the short form's figure or the full form's.
func scale[T any](short, full T) T {
	if drillsFull() {
		return full
	}
	return short
}

// drill prints what a drill did and found, and its figures at the end.
type drill struct {
	t    *testing.T
	name string

	mu                              sync.Mutex
	requests, faults, lost, doubled int
	notes                           []string
}

// newDrill starts a drill's report; its summary line is written when the test ends, with
// PASS or FAIL.
func newDrill(t *testing.T, name string) *drill {
	d := &drill{t: t, name: name}
	t.Cleanup(func() {
		form := "short"
		if drillsFull() {
			form = "full"
		}
		verdict := "PASS"
		if t.Failed() {
			verdict = "FAIL"
		}
		d.mu.Lock()
		line := fmt.Sprintf("drill %-44s %-5s requests=%-6d faults=%-3d lost=%-3d doubled=%-3d %s", d.name, form, d.requests, d.faults, d.lost, d.doubled, verdict)
		if len(d.notes) > 0 {
			line += " (" + strings.Join(d.notes, "; ") + ")"
		}
		d.mu.Unlock()
		t.Log(line)
		if f := os.Getenv("DRILLS_REPORT"); f != "" {
			if err := appendLine(f, line); err != nil {
				t.Errorf("drill report: %v", err)
			}
		}
	})
	return d
}

func appendLine(file, line string) error {
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// did logs a step of the drill.
func (d *drill) did(format string, args ...any) {
	d.t.Helper()
	d.t.Logf("drill %s: did: %s", d.name, fmt.Sprintf(format, args...))
}

// found logs an observation; note also puts it in the summary line.
func (d *drill) found(format string, args ...any) {
	d.t.Helper()
	d.t.Logf("drill %s: found: %s", d.name, fmt.Sprintf(format, args...))
}

func (d *drill) note(format string, args ...any) {
	d.t.Helper()
	s := fmt.Sprintf(format, args...)
	d.found("%s", s)
	d.mu.Lock()
	d.notes = append(d.notes, s)
	d.mu.Unlock()
}

func (d *drill) count(requests, faults int) {
	d.mu.Lock()
	d.requests += requests
	d.faults += faults
	d.mu.Unlock()
}

// losses records what a drill found lost or doubled; any is a failure.
func (d *drill) losses(lost, doubled int) {
	d.t.Helper()
	d.mu.Lock()
	d.lost += lost
	d.doubled += doubled
	d.mu.Unlock()
	if lost != 0 || doubled != 0 {
		d.t.Errorf("drill %s: %d lost, %d doubled", d.name, lost, doubled)
	}
}

// send is call without failing the test: for goroutines and for requests expected to fail
// during a fault. A transport error is returned; an answer of any status is not an error.
func send(ctx context.Context, method, u, key string, body any, headers map[string]string) (response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return response{}, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return response{}, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, err
	}
	out := response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	_ = json.Unmarshal(raw, &out.Body)
	return out, nil
}

// retryable reports whether a client should send the same request again (with the same
// Idempotency-Key): the answers docs/api.md says were not applied or may not have been.
func retryable(r response, err error) bool {
	if err != nil {
		return true
	}
	switch r.Status {
	case http.StatusConflict, http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// postUntilApplied POSTs body with an Idempotency-Key until an answer says it was applied or
// refused for good (what a careful client does through a fault), and returns that answer and
// how many tries it took.
func postUntilApplied(ctx context.Context, u, key, idemKey string, body any) (response, int, error) {
	for tries := 1; ; tries++ {
		res, err := send(ctx, http.MethodPost, u, key, body, idem(idemKey))
		if !retryable(res, err) {
			return res, tries, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("%d %s", res.Status, res.Raw)
			}
			return res, tries, fmt.Errorf("POST %s (Idempotency-Key %s) not applied after %d tries: %w", u, idemKey, tries, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// storeDB opens one of the platform's databases (by its name without the stack's prefix) on
// the platform's store, embedded or real, for a drill to read what the API does not show.
func (p *platform) storeDB(t *testing.T, name string) *docstore.DB {
	t.Helper()
	client, err := mongo.Connect(options.Client().ApplyURI(p.MongoURI))
	if err != nil {
		t.Fatalf("connecting to the store: %v", err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	// Opened as the services open theirs, so that Collection finds each where it is stored.
	db, err := docstore.Open(t.Context(), client.Database(p.DatabasePrefix+name))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// countBy counts ids; doubled is how many of them occur more than once (each extra counted).
func countBy(ids []string) (counts map[string]int, doubled int) {
	counts = map[string]int{}
	for _, id := range ids {
		counts[id]++
		if counts[id] > 1 {
			doubled++
		}
	}
	return counts, doubled
}
