package http

import (
	"bytes"
	"io"
	"net"
)

// Limits of the request line and header block.
const (
	// MaxRequestTarget is the longest request target (path and query) the gateway reads; a
	// longer one is answered 414. Every route's path and query fit in far less, and a URL
	// longer than a few KiB is refused by some proxies and browsers anyway.
	MaxRequestTarget = 4 << 10
	// publicReadBuffer is the public listener's read buffer, which bounds the request line and
	// header block together (a block that does not fit is 431, a request line that does not
	// 414). Twice MaxRequestTarget, so a target at the limit still leaves room for the headers;
	// fasthttp's default of 4 KiB would make any target near the limit a 431.
	publicReadBuffer = 8 << 10
)

// WrapListener wraps a listener served by NewPublic or NewAdmin so that its connections count
// the bytes read since the last line end. fasthttp answers a request line or header block that
// does not fit its read buffer with ErrSmallBuffer and resets the header before the error
// handler runs, so that count is the only way left to tell a request line that never ended
// (414) from headers too large (431).
func WrapListener(ln net.Listener) net.Listener { return lineListener{ln} }

type lineListener struct{ net.Listener }

func (l lineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		return &lineConn{TCPConn: tc}, nil
	}
	return c, nil // not TCP: not counted, a long request line is then 431
}

// lineConn counts the bytes read since the last '\n'. Only the connection's serving goroutine
// reads it and asks run, so it needs no lock. It embeds the *net.TCPConn itself, not a
// net.Conn, so that what the server and the handlers find on a TCP connection is still there:
// ReadFrom (a streamed download is written straight to the socket as it arrives; through a
// net.Conn it would sit in fasthttp's write buffer, TestFileDownloadIsStreamed) and CloseWrite
// (the lingering close after a refusal).
type lineConn struct {
	*net.TCPConn
	run int
}

// maxRun caps the count: it only has to reach a read buffer's size.
const maxRun = 1 << 30

func (c *lineConn) Read(p []byte) (int, error) {
	n, err := c.TCPConn.Read(p)
	if i := bytes.LastIndexByte(p[:n], '\n'); i >= 0 {
		c.run = n - 1 - i
	} else {
		c.run = min(c.run+n, maxRun)
	}
	return n, err
}

// WriteTo hides the TCPConn's, which would read past Read and its count.
func (c *lineConn) WriteTo(w io.Writer) (int64, error) {
	return io.Copy(w, struct{ io.Reader }{c})
}

// requestLineUnended reports whether the connection's last error of a too-small read buffer
// (size bytes) came from a request line that never ended: the buffer was full and the last
// size bytes read hold no line end, so the request that starts in the buffer has no line end
// in it yet. A request line that ended and headers that did not fit leave a line end in the
// buffer.
func requestLineUnended(conn net.Conn, size int) bool {
	c, ok := conn.(*lineConn)
	return ok && c.run >= size
}
