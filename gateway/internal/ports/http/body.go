package http

import (
	"bufio"
	"errors"
	"io"
	"net"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"rentalplatform/libs/apierr"
)

// errBodyTooLarge is what a bodyReader returns once more than its limit was read.
var errBodyTooLarge = errors.New("request body over the limit")

type bodyKey struct{}

// bodyReader reads the client's body stream up to a limit and remembers how that went, so the
// handler can tell a client's failure from a service's and guardBody can tell whether the
// connection is clean.
type bodyReader struct {
	r         io.Reader
	remaining int
	eof       bool  // the whole body was read
	err       error // errBodyTooLarge, or the client's read error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.eof {
		return 0, io.EOF
	}
	// Read one byte past the limit, which is how an over-long chunked body is noticed.
	if len(p) > b.remaining+1 {
		p = p[:b.remaining+1]
	}
	n, err := b.r.Read(p)
	b.remaining -= n
	switch {
	case b.remaining < 0:
		b.err = errBodyTooLarge
		return 0, b.err
	case err == io.EOF:
		b.eof = true
	case err != nil:
		b.err = err
	}
	return n, err
}

// clientError is the answer for a body that failed on the client's side.
func (b *bodyReader) clientError(limit int) *apierr.Error {
	if errors.Is(b.err, errBodyTooLarge) {
		return bodyTooLarge(limit)
	}
	return apierr.New(fiber.StatusBadRequest, apierr.InvalidRequest, codeBodyUnreadable,
		"The request body could not be read completely.")
}

// attachBody gives out the client's body. A JSON body is read whole (it is small, and a
// buffered request can be retried on a stale keep-alive connection); an upload is handed over
// as a stream and read while it is sent. Either way the limit is checked on Content-Length
// before anything is read, and again while reading a chunked body. It returns the reader of
// an upload, nil otherwise. tee, when set, sees an upload's bytes as they are sent (the
// idempotency fingerprint).
func (p *public) attachBody(c *fiber.Ctx, out *fasthttp.Request, upload bool, tee io.Writer) (*bodyReader, error) {
	req := c.Request()
	limit := p.bodyLimit
	if upload {
		limit = p.uploadLimit
	}
	cl := req.Header.ContentLength() // -1: chunked, -2: no body
	if cl > limit {
		return nil, bodyTooLarge(limit)
	}
	if !req.IsBodyStream() {
		if len(req.Body()) > limit {
			return nil, bodyTooLarge(limit)
		}
		out.SetBody(req.Body())
		if upload && tee != nil {
			_, _ = tee.Write(req.Body())
		}
		return nil, nil
	}
	br := &bodyReader{r: req.BodyStream(), remaining: limit}
	c.Locals(bodyKey{}, br)
	if upload {
		var src io.Reader = br
		if tee != nil {
			src = io.TeeReader(br, tee)
		}
		out.SetBodyStream(src, cl)
		return br, nil
	}
	buf := p.copyBufs.Get().(*[]byte)
	_, err := io.CopyBuffer(out.BodyWriter(), br, *buf)
	p.copyBufs.Put(buf)
	if err != nil {
		return nil, br.clientError(limit)
	}
	return nil, nil
}

// readUpload reads the client's whole upload into w, under the upload limit, without
// forwarding it (an idempotent replay has to see the body before it can answer).
func (p *public) readUpload(c *fiber.Ctx, w io.Writer) error {
	req := c.Request()
	limit := p.uploadLimit
	if req.Header.ContentLength() > limit {
		return bodyTooLarge(limit)
	}
	if !req.IsBodyStream() {
		if len(req.Body()) > limit {
			return bodyTooLarge(limit)
		}
		_, _ = w.Write(req.Body())
		return nil
	}
	br := &bodyReader{r: req.BodyStream(), remaining: limit}
	c.Locals(bodyKey{}, br)
	buf := p.copyBufs.Get().(*[]byte)
	_, err := io.CopyBuffer(w, br, *buf)
	p.copyBufs.Put(buf)
	if err != nil {
		return br.clientError(limit)
	}
	return nil
}

// Bounds of a lingering close.
const (
	lingerTimeout  = 5 * time.Second
	lingerMaxBytes = 64 << 20
	lingerWrite    = 10 * time.Second
)

// guardBody runs around every request on the public listener. fasthttp leaves an unread
// streamed body on the connection, where it would be parsed as the next request, and Fiber's
// tracing middleware would read all of it into memory. So whatever the handler did not read
// is dealt with here: up to the JSON body limit it is drained and the connection stays
// usable; beyond that the connection gets a lingering close.
func (p *public) guardBody(c *fiber.Ctx) error {
	err := c.Next()
	req := c.Request()
	if !req.IsBodyStream() {
		return err
	}
	clean := false
	src := req.BodyStream()
	br, _ := c.Locals(bodyKey{}).(*bodyReader)
	if br != nil {
		clean = br.eof
		src = br.r
	}
	if !clean && (br == nil || br.err == nil) {
		cl := req.Header.ContentLength()
		switch {
		case cl >= 0 && cl <= p.drainLimit:
			_, derr := io.Copy(io.Discard, src)
			clean = derr == nil
		case cl == -1:
			n, derr := io.Copy(io.Discard, io.LimitReader(src, int64(p.drainLimit)+1))
			clean = derr == nil && n <= int64(p.drainLimit)
		}
	}
	req.ResetBody()
	if !clean {
		if err != nil {
			// Render the error now: the lingering close sends the response itself.
			if herr := c.App().ErrorHandler(c, err); herr != nil {
				return herr
			}
			err = nil
		}
		lingeringClose(c.Context())
	}
	return err
}

// lingeringClose sends the response and closes the connection without a reset. Closing a
// socket that still has unread data makes the kernel send RST, and most clients then report
// "connection reset" instead of the 413 or 401 that was sent. So the response is written,
// the sending side shut down, and whatever the client still sends is read and dropped until it
// stops, lingerTimeout passes or lingerMaxBytes arrive; only then is the socket closed
// (nginx's lingering_close). fasthttp skips hijack handlers on responses marked
// "Connection: close", so the handler writes the response itself.
func lingeringClose(ctx *fasthttp.RequestCtx) {
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(conn net.Conn) {
		ctx.Response.SetConnectionClose()
		_ = conn.SetWriteDeadline(time.Now().Add(lingerWrite))
		w := bufio.NewWriter(conn)
		if err := ctx.Response.Write(w); err != nil || w.Flush() != nil {
			return
		}
		raw := conn
		if u, ok := conn.(interface{ UnsafeConn() net.Conn }); ok {
			raw = u.UnsafeConn()
		}
		if cw, ok := raw.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_ = conn.SetReadDeadline(time.Now().Add(lingerTimeout))
		_, _ = io.CopyN(io.Discard, conn, lingerMaxBytes)
	})
}
