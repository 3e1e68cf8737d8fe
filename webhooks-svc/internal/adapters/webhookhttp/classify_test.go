package webhookhttp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"rentalplatform/webhooks-svc/internal/app"
	"rentalplatform/webhooks-svc/internal/domain"
)

// leak matches what the message an API caller reads must never contain: an IPv4 address, a
// port, and Go's resolver and dialer wording, which names the platform's DNS resolver and
// the address a name resolved to.
var leak = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+|:\d+|(?i)\blookup\b|dial tcp|no such host|\[::|::1`)

// TestClassifiesRealFailures makes each failure happen for real, on 127.0.0.1 only (names
// resolve through a DNS server of the test's own on 127.0.0.1), and checks the category the
// sender reports and that the customer message shows nothing of what Go's error says.
func TestClassifiesRealFailures(t *testing.T) {
	t.Parallel()
	resolver := dnsServer(t, map[string]netip.Addr{
		"internal.example.test":   netip.MustParseAddr("127.0.0.1"),
		"wrong-host.example.test": netip.MustParseAddr("127.0.0.1"),
	})
	// A failure that is not a timeout gets a limit no loaded machine reaches (a handshake
	// under the race detector has taken over 500 ms here); a timeout case gets a short one,
	// and the response timeout one long enough for the handshake before it.
	const timeout, short, responseTimeout = 10 * time.Second, 500 * time.Millisecond, 3 * time.Second

	closedAddr := closedPort(t)

	var guarded atomic.Bool
	guardedSrv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { guarded.Store(true) }))
	t.Cleanup(guardedSrv.Close)
	t.Cleanup(func() { // after the parallel subtests
		if guarded.Load() {
			t.Error("the guard let a request through to 127.0.0.1")
		}
	})

	plain := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(plain.Close)

	hangsUp := listen(t) // accepts, then closes before any TLS
	go serve(hangsUp, func(c net.Conn) { c.Close() })
	silent := listen(t) // accepts and says nothing
	go serve(silent, func(c net.Conn) {
		go func() {
			_, _ = io.Copy(io.Discard, c) // until the client gives up
			c.Close()
		}()
	})

	selfSigned := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(selfSigned.Close)
	trusted := x509.NewCertPool()
	trusted.AddCert(selfSigned.Certificate()) // valid for example.com, 127.0.0.1 and ::1

	release := make(chan struct{})
	slow := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
			// The client gave up: answer nothing. Returning would send an implicit 200, which
			// Go's client has been seen to return in place of its own timeout (1 run in 10
			// under -race), making a receiver that never answered look like a success.
			panic(http.ErrAbortHandler)
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) }) // before slow.Close, which waits for its handlers

	reset := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			c.Close()
		}
	}))
	t.Cleanup(reset.Close)

	status := func(code int) string {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if code/100 == 3 {
				w.Header().Set("Location", "https://127.0.0.1/elsewhere")
			}
			w.WriteHeader(code)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}

	open := Config{Timeout: timeout, AllowPrivate: true, TLSInsecure: true, Resolver: resolver}
	openWithin := func(d time.Duration) Config { c := open; c.Timeout = d; return c }
	for _, tc := range []struct {
		name string
		url  string
		cfg  Config
		want domain.AttemptErrorCode
		// cause checks the error kept for the log, so the case tests what it says it does.
		cause func(error) bool
	}{
		{"closed port", "https://" + closedAddr + "/hook", open, domain.AttemptConnectionRefused,
			func(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }},
		{"unknown name", "https://hooks.example.invalid/hook", open, domain.AttemptDNSResolutionFailed,
			func(err error) bool { var e *net.DNSError; return errors.As(err, &e) && e.IsNotFound }},
		{"name resolving to an internal address", "https://internal.example.test:" + port(guardedSrv.URL) + "/hook",
			Config{Timeout: timeout, TLSInsecure: true, Resolver: resolver}, domain.AttemptAddressNotAllowed,
			func(err error) bool { return strings.Contains(err.Error(), "127.0.0.1") }},
		{"internal address literal", guardedSrv.URL + "/hook",
			Config{Timeout: timeout, TLSInsecure: true}, domain.AttemptAddressNotAllowed,
			func(err error) bool { return strings.Contains(err.Error(), "127.0.0.1") }},
		{"plain HTTP server", "https://" + plain.Listener.Addr().String() + "/hook", open, domain.AttemptTLSHandshakeFailed,
			func(err error) bool {
				var e tls.RecordHeaderError
				return errors.Is(err, http.ErrSchemeMismatch) || errors.As(err, &e)
			}},
		{"connection closed during the handshake", "https://" + hangsUp.Addr().String() + "/hook", open, domain.AttemptTLSHandshakeFailed,
			func(err error) bool { return err != nil }},
		{"handshake never completes", "https://" + silent.Addr().String() + "/hook", openWithin(short), domain.AttemptTLSHandshakeFailed,
			func(err error) bool { var ne net.Error; return errors.As(err, &ne) && ne.Timeout() }},
		{"self-signed certificate", selfSigned.URL + "/hook", Config{Timeout: timeout, AllowPrivate: true}, domain.AttemptTLSCertificateInvalid,
			func(err error) bool { var e x509.UnknownAuthorityError; return errors.As(err, &e) }},
		{"certificate for another host", "https://wrong-host.example.test:" + port(selfSigned.URL) + "/hook",
			Config{Timeout: timeout, AllowPrivate: true, Resolver: resolver, RootCAs: trusted}, domain.AttemptTLSCertificateInvalid,
			func(err error) bool { var e x509.HostnameError; return errors.As(err, &e) }},
		{"accepts but never answers", slow.URL + "/hook", openWithin(responseTimeout), domain.AttemptResponseTimeout,
			func(err error) bool { var ne net.Error; return errors.As(err, &ne) && ne.Timeout() }},
		{"closes instead of answering", reset.URL + "/hook", open, domain.AttemptConnectionFailed,
			func(err error) bool { return err != nil }},
		{"500", status(500) + "/hook", open, domain.AttemptHTTPStatus, nil},
		{"redirect", status(302) + "/hook", open, domain.AttemptHTTPStatus, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := newSender(t, tc.cfg).Send(context.Background(), app.Request{URL: tc.url, MessageID: "evt_1", Timestamp: time.Now(), Secrets: []string{secretA}})
			checkAttempt(t, res, tc.want, tc.cause)
			if tc.want == domain.AttemptResponseTimeout && res.Duration < tc.cfg.Timeout {
				t.Errorf("timed out after %v, before the %v limit", res.Duration, tc.cfg.Timeout)
			}
		})
	}
}

// TestClassifiesConnectTimeout: a listener whose accept queue is full neither accepts nor
// refuses a connection (the kernel drops the SYN), so connecting times out.
func TestClassifiesConnectTimeout(t *testing.T) {
	t.Parallel()
	addr, ok := fullBacklog(t)
	if !ok {
		t.Skip("this platform does not leave a connection to a full accept queue waiting")
	}
	res := newSender(t, Config{Timeout: 500 * time.Millisecond, AllowPrivate: true, TLSInsecure: true}).
		Send(context.Background(), app.Request{URL: "https://" + addr + "/hook", MessageID: "evt_1", Timestamp: time.Now(), Secrets: []string{secretA}})
	checkAttempt(t, res, domain.AttemptConnectionTimeout, func(err error) bool { var ne net.Error; return errors.As(err, &ne) && ne.Timeout() })
}

// TestClassifyByPhase covers what the real failures above cannot make happen on demand: a
// timeout or a dropped connection is named by how far the attempt had got.
func TestClassifyByPhase(t *testing.T) {
	dialTimeout := &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, tc := range []struct {
		err  error
		at   phase
		want domain.AttemptErrorCode
	}{
		{dialTimeout, phaseConnecting, domain.AttemptConnectionTimeout},
		{context.DeadlineExceeded, phaseWaiting, domain.AttemptConnectionTimeout},
		{context.DeadlineExceeded, phaseResolving, domain.AttemptDNSResolutionFailed},
		{context.DeadlineExceeded, phaseHandshaking, domain.AttemptTLSHandshakeFailed},
		{context.DeadlineExceeded, phaseConnected, domain.AttemptResponseTimeout},
		{io.EOF, phaseHandshaking, domain.AttemptTLSHandshakeFailed},
		{io.EOF, phaseConnected, domain.AttemptConnectionFailed},
		{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, phaseConnected, domain.AttemptConnectionFailed},
		{context.Canceled, phaseConnected, domain.AttemptConnectionFailed},
	} {
		if got := classify(tc.err, tc.at); got != tc.want {
			t.Errorf("classify(%v, phase %d) = %s, want %s", tc.err, tc.at, got, tc.want)
		}
	}
}

// checkAttempt checks the category of res and that its customer message leaks nothing.
func checkAttempt(t *testing.T, res domain.Result, want domain.AttemptErrorCode, cause func(error) bool) {
	t.Helper()
	a := res.Attempt()
	msg := a.Message()
	t.Logf("%s %q (status %d; logged: %v)", a.ErrorCode, msg, res.Status, res.Cause)
	if a.ErrorCode != want {
		t.Errorf("error code %q, want %q (status %d, cause %v)", a.ErrorCode, want, res.Status, res.Cause)
	}
	if msg == "" {
		t.Error("no message")
	}
	if m := leak.FindString(msg); m != "" {
		t.Errorf("the message shows %q: %s", m, msg)
	}
	if cause != nil && (res.Cause == nil || !cause(res.Cause)) {
		t.Errorf("cause %v is not the failure this case makes", res.Cause)
	}
	if cause == nil && res.Cause != nil {
		t.Errorf("a response with a cause: %v", res.Cause)
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// closedPort returns an address on 127.0.0.1 where nothing listens and nothing else can:
// its port stays bound to a socket that never listens, so a connection is refused (a port
// merely closed again was taken by another test's server under load, which answered 200).
func closedPort(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}

func serve(ln net.Listener, handle func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		handle(c)
	}
}

func port(rawURL string) string { return rawURL[strings.LastIndex(rawURL, ":")+1:] }

// fullBacklog returns the address of a listener on 127.0.0.1 with an accept queue of one,
// filled by a connection nobody accepts, and reports whether a further connection then
// waits (rather than being accepted or refused).
func fullBacklog(t *testing.T) (string, bool) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	for i := range 16 {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			// Only once a connection is queued: a first dial that merely took long on a
			// loaded machine has filled nothing.
			var ne net.Error
			return addr, i > 0 && errors.As(err, &ne) && ne.Timeout()
		}
		t.Cleanup(func() { c.Close() })
	}
	return "", false
}

// dnsServer runs a DNS server on 127.0.0.1 that answers A queries for the names in hosts,
// gives no records of other types for them, and answers NXDOMAIN (no such host) for any other
// name; it returns a resolver that asks it and nothing else.
func dnsServer(t *testing.T, hosts map[string]netip.Addr) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := dnsAnswer(buf[:n], hosts); resp != nil {
				_, _ = pc.WriteTo(resp, from)
			}
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

// dnsAnswer is the response to the query q (RFC 1035 §4.1), or nil for a malformed one.
func dnsAnswer(q []byte, hosts map[string]netip.Addr) []byte {
	if len(q) < 12 {
		return nil
	}
	i := 12
	var labels []string
	for {
		if i >= len(q) {
			return nil
		}
		l := int(q[i])
		i++
		if l == 0 {
			break
		}
		if l&0xc0 != 0 || i+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i:i+l]))
		i += l
	}
	if i+4 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i:])
	question := q[12 : i+4]
	addr, known := hosts[strings.ToLower(strings.Join(labels, "."))]

	resp := make([]byte, 12, 12+len(question)+16)
	copy(resp, q[:2])                       // the query's id
	flags := uint16(0x8180)                 // a response; recursion desired and available
	binary.BigEndian.PutUint16(resp[4:], 1) // one question
	if !known {
		flags |= 3 // NXDOMAIN
	}
	binary.BigEndian.PutUint16(resp[2:], flags)
	resp = append(resp, question...)
	if known && qtype == 1 && addr.Is4() {
		binary.BigEndian.PutUint16(resp[6:], 1) // one answer
		a := addr.As4()
		// name (a pointer to the question's), type A, class IN, TTL 60, 4 bytes of address
		resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
		resp = append(resp, a[:]...)
	}
	return resp
}
