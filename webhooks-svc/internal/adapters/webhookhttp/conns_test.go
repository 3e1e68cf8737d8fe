package webhookhttp

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"rentalplatform/webhooks-svc/internal/app"
)

// TestBurstsToOneHostReuseConnections: two bursts of as many attempts to one receiver as the
// service makes at once. The second opens no connection: each one of the first stayed idle.
// Before InFlight, all but 100 were closed at the end of a burst, and each was dialled and
// TLS-handshaken again in the next one.
func TestBurstsToOneHostReuseConnections(t *testing.T) {
	const inFlight = 160
	var opened atomic.Int64
	var mu sync.Mutex
	var release chan struct{} // the current burst's: closed once all its attempts arrived
	var arrived sync.WaitGroup
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gate := release
		mu.Unlock()
		arrived.Done()
		<-gate // every attempt of the burst in flight at once, each on a connection
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	s := newSender(t, Config{Timeout: 10 * time.Second, AllowPrivate: true, TLSInsecure: true, InFlight: inFlight})

	burst := func() {
		t.Helper()
		mu.Lock()
		release = make(chan struct{})
		mu.Unlock()
		arrived.Add(inFlight)
		var done sync.WaitGroup
		for i := 0; i < inFlight; i++ {
			done.Add(1)
			go func() {
				defer done.Done()
				res := s.Send(context.Background(), app.Request{URL: srv.URL + "/hook", MessageID: "evt_1", Timestamp: time.Now(), Secrets: []string{secretA}})
				if res.Status != http.StatusOK {
					t.Errorf("attempt: %+v", res)
				}
			}()
		}
		arrived.Wait()
		mu.Lock()
		close(release)
		mu.Unlock()
		done.Wait()
	}
	burst()
	if n := opened.Load(); n != inFlight {
		t.Fatalf("the first burst opened %d connections, want %d (one per attempt in flight)", n, inFlight)
	}
	burst()
	if n := opened.Load() - inFlight; n != 0 {
		t.Fatalf("the second burst opened %d connections, want 0: the first burst's were closed", n)
	}
}
