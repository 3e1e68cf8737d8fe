package e2e

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"rentalplatform/deploy/local/e2e/faultproxy"
	"rentalplatform/embedded/testkit"
)

// webhooks-svc's connection to its store is cut again and again while endpoints are updated
// (three fields at once): every answer is a success or the error envelope, and reading back
// shows each update applied whole or not at all, never in part; the updated events match the
// updates applied, none lost, none doubled.
func TestDrillStoreCutMidWrite(t *testing.T) {
	t.Parallel()
	writers, versions, cuts := scale(4, 8), scale(12, 50), scale(3, 10)
	d := newDrill(t, "store connection cut mid-write")
	store := testkit.Mongo(t)
	u, err := url.Parse(store.URI)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.Start(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close) // after the stack has stopped
	cut := *u
	cut.Host = proxy.Addr()
	p := startWith(t, stackConfig{mongoURI: store.URI, programEnv: map[string]map[string]string{"webhooks-svc": {"MONGODB_URI": cut.String()}}})
	key := p.newKey(t, "acct_drillstorecut", false)
	endpoints := make([]string, writers)
	for w := range endpoints {
		endpoints[w], _ = p.createEndpoint(t, key, publicURL, quietType)
	}

	ctx, cancel := context.WithTimeout(context.Background(), scale(4*time.Minute, 10*time.Minute))
	defer cancel()
	var acked, errored, appliedAfterError, partial, requests atomic.Int64
	applied := make([]int, writers)    // versions applied per endpoint (its updated events)
	last := make([]int, writers)       // the version each endpoint should end with
	history := make([]string, writers) // per endpoint: v<n> ok, v<n> error→applied, v<n> error→not
	// The cuts run while the writers write; the writers write at least `versions` updates each
	// and go on until the last cut is over.
	cutsDone := make(chan struct{})
	var cutsMade atomic.Int64
	go func() {
		defer close(cutsDone)
		for range cuts {
			time.Sleep(300 * time.Millisecond)
			proxy.Cut()
			cutsMade.Add(1)
			time.Sleep(time.Second)
			if err := proxy.Restore(); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			u := p.GatewayURL + "/v1/webhook_endpoints/" + endpoints[w]
			for v := 1; ctx.Err() == nil && (v <= versions || !closed(cutsDone)); v++ {
				res, err := send(ctx, "POST", u, key, versionParams(v), idem(fmt.Sprintf("drill-storecut-%d-%d", w, v)))
				requests.Add(1)
				switch {
				case err == nil && res.Status == 200:
					acked.Add(1)
					applied[w]++
					last[w] = v
					history[w] += fmt.Sprintf(" v%d:ok", v)
					continue
				case err == nil && (res.Status < 500 || res.errCode() == ""):
					t.Errorf("update %d of %s: %d %s (want 200 or a 5xx error envelope)", v, endpoints[w], res.Status, res.Raw)
					return
				}
				// An error: read back once the store answers again.
				errored.Add(1)
				got, err := readBack(ctx, u, key)
				requests.Add(1)
				if err != nil {
					t.Errorf("reading %s back after a failed update: %v", endpoints[w], err)
					return
				}
				switch got {
				case v:
					appliedAfterError.Add(1)
					applied[w]++
					last[w] = v
					history[w] += fmt.Sprintf(" v%d:error(%d %s)→applied", v, res.Status, res.errCode())
				case v - 1:
					history[w] += fmt.Sprintf(" v%d:error(%d %s)→not applied", v, res.Status, res.errCode())
				default:
					partial.Add(1)
					t.Errorf("update %d of %s failed and left it at %d", v, endpoints[w], got)
				}
			}
		})
	}
	wg.Wait()
	<-cutsDone
	d.count(int(requests.Load()), int(cutsMade.Load()))
	d.did("%d writers, at least %d updates of 3 fields each, %d cuts of webhooks-svc's store connection (1 s each)", writers, versions, cutsMade.Load())
	d.note("%d updates answered 200, %d answered an error (%d of those applied whole, the rest not at all), %d half-applied",
		acked.Load(), errored.Load(), appliedAfterError.Load(), partial.Load())
	if errored.Load() == 0 {
		d.note("no update met a cut: each waited for the store and succeeded")
	}

	// Each endpoint ends at its last applied version, with one updated event per version
	// applied.
	lost, doubled := int(partial.Load()), 0
	counts := map[string]int{}
	evVersions := map[string][]string{} // endpoint → the description of each updated event's object
	wait := time.Now().Add(deliveryWait)
	for {
		clear(counts)
		clear(evVersions)
		for _, e := range listAll(t, key, p.GatewayURL+"/v1/events?type=webhook_endpoint.updated") {
			id := objectIDOf(e)
			counts[id]++
			obj, _ := e["data"].(map[string]any)["object"].(map[string]any)
			evVersions[id] = append(evVersions[id], str(obj["description"]))
		}
		short := false
		for w, id := range endpoints {
			short = short || counts[id] < applied[w]
		}
		if !short || time.Now().After(wait) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	for w, id := range endpoints {
		got, err := readBack(ctx, p.GatewayURL+"/v1/webhook_endpoints/"+id, key)
		if err != nil || got != last[w] {
			t.Errorf("%s ends at version %d (%v), want %d", id, got, err, last[w])
		}
		switch c := counts[id]; {
		case c < applied[w]:
			lost += applied[w] - c
			t.Errorf("%s: %d updated events for %d updates applied (%s); events of %v", id, c, applied[w], history[w], evVersions[id])
		case c > applied[w]:
			doubled += c - applied[w]
			t.Errorf("%s: %d updated events for %d updates applied (%s); events of %v", id, c, applied[w], history[w], evVersions[id])
		}
	}
	d.losses(lost, doubled)
	p.noDeaths(t)
}

// closed reports whether c is closed.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// versionParams changes all of an endpoint's description, metadata and enabled events to
// version v's.
func versionParams(v int) map[string]any {
	return map[string]any{
		"description":    fmt.Sprintf("v%d", v),
		"metadata":       map[string]string{"v": fmt.Sprint(v)},
		"enabled_events": versionEvents(v),
	}
}

func versionEvents(v int) []string {
	if v%2 == 0 {
		return []string{quietType}
	}
	return []string{"payment_request.cancelled", quietType}
}

// readBack waits until the endpoint can be read and returns the version it is at, or -1 when
// its fields are of different versions (a half-applied update).
func readBack(ctx context.Context, u, key string) (int, error) {
	for {
		res, err := send(ctx, "GET", u, key, nil, nil)
		if err == nil && res.Status == 200 {
			var v int
			if _, err := fmt.Sscanf(str(res.Body["description"]), "v%d", &v); err != nil {
				return 0, nil // never updated
			}
			md, _ := res.Body["metadata"].(map[string]any)
			var events []string
			for _, e := range res.Body["enabled_events"].([]any) {
				events = append(events, str(e))
			}
			slices.Sort(events)
			if md["v"] != fmt.Sprint(v) || !slices.Equal(events, versionEvents(v)) {
				return -1, nil
			}
			return v, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("not readable: %v %d %s", err, res.Status, res.Raw)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
