package webhookhttp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"syscall"

	"rentalplatform/libs/netguard"

	"rentalplatform/webhooks-svc/internal/domain"
)

// phase is how far an attempt got before it failed. The same error means different things at
// different points: a timeout while connecting is the receiver's network, one after the
// request went out is the receiver's application, and a connection closed during the TLS
// handshake is a TLS problem rather than a dropped connection.
type phase int32

const (
	phaseWaiting     phase = iota // no connection begun for this request yet
	phaseResolving                // looking the host name up
	phaseConnecting               // TCP connect to a resolved address
	phaseHandshaking              // TLS handshake on a connected socket
	phaseConnected                // a connection (new or reused) carries the request
)

// progress records the furthest phase an attempt reached. httptrace hooks run on the
// transport's dialing goroutines, possibly several at once (one per address family), and may
// still run after the request returned, hence atomic; it only moves forward, so a losing dial
// racing a winning one cannot take it back.
type progress struct{ p atomic.Int32 }

func (pr *progress) reach(p phase) {
	for {
		old := pr.p.Load()
		if int32(p) <= old || pr.p.CompareAndSwap(old, int32(p)) {
			return
		}
	}
}

func (pr *progress) get() phase { return phase(pr.p.Load()) }

func (pr *progress) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		DNSStart:          func(httptrace.DNSStartInfo) { pr.reach(phaseResolving) },
		ConnectStart:      func(string, string) { pr.reach(phaseConnecting) },
		TLSHandshakeStart: func() { pr.reach(phaseHandshaking) },
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			if err == nil {
				pr.reach(phaseConnected)
			}
		},
		GotConn: func(httptrace.GotConnInfo) { pr.reach(phaseConnected) },
	}
}

// classify names the category of a transport error (no response was received), from the
// error's type where Go reports one and otherwise from the phase the attempt had reached.
func classify(err error, at phase) domain.AttemptErrorCode {
	var (
		dnsErr     *net.DNSError
		verifyErr  *tls.CertificateVerificationError
		authErr    x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalidErr x509.CertificateInvalidError
		recordErr  tls.RecordHeaderError
		netErr     net.Error
	)
	switch {
	case errors.Is(err, netguard.ErrBlocked):
		return domain.AttemptAddressNotAllowed
	case errors.As(err, &dnsErr):
		return domain.AttemptDNSResolutionFailed
	case errors.As(err, &verifyErr), errors.As(err, &authErr), errors.As(err, &hostErr), errors.As(err, &invalidErr):
		return domain.AttemptTLSCertificateInvalid
	case errors.As(err, &recordErr), errors.Is(err, http.ErrSchemeMismatch):
		// The server answered the ClientHello with something that is not TLS; net/http
		// reports a plain HTTP answer as a scheme mismatch.
		return domain.AttemptTLSHandshakeFailed
	case errors.Is(err, syscall.ECONNREFUSED):
		return domain.AttemptConnectionRefused
	case at == phaseHandshaking:
		// A handshake alert from the server, a connection closed mid-handshake, or the
		// handshake's own timeout.
		return domain.AttemptTLSHandshakeFailed
	}
	timeout := errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout()
	switch {
	case !timeout:
		return domain.AttemptConnectionFailed
	case at == phaseResolving:
		return domain.AttemptDNSResolutionFailed
	case at == phaseConnected:
		return domain.AttemptResponseTimeout
	default:
		return domain.AttemptConnectionTimeout
	}
}
