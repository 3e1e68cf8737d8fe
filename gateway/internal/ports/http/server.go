package http

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"rentalplatform/libs/apierr"
	"rentalplatform/libs/fiberx"
	"rentalplatform/libs/ids"
)

// Codes for requests that never reach Fiber's middleware.
const (
	codeRequestMalformed      = "request_malformed"
	codeRequestHeadersTooBig  = "request_headers_too_large"
	codeRequestTimeout        = "request_timeout"
	codeRequestURITooLong     = "request_uri_too_long"
	requestHeaderFieldsTooBig = 431
)

// allowedMethods is the Allow header of a 405: what the public API answers.
const allowedMethods = "GET, HEAD, POST, DELETE"

// guardServer covers what Fiber answers before any middleware runs, so that these answers,
// too, carry a Request-Id and the error envelope:
//
//   - a method Fiber does not know (Fiber would send a plain-text 400 and, with body
//     streaming on, leave the body on the connection to be parsed as the next request);
//   - a request fasthttp cannot parse (malformed, headers too large, too slow);
//   - a request whose framing fasthttp would accept but RFC 9112 refuses (checkFraming);
//   - a request target over MaxRequestTarget, or a request line that does not fit the read
//     buffer at all (414; told from headers too large by WrapListener's count).
//
// Both end the connection: after either, the byte stream cannot be trusted.
func guardServer(app *fiber.App, gen *ids.Generator) {
	srv := app.Server()
	inner := srv.Handler
	srv.Handler = func(ctx *fasthttp.RequestCtx) {
		// Header names go out as written (RateLimit-Limit, WWW-Authenticate), not as fasthttp
		// would normalise them (Ratelimit-Limit, Www-Authenticate): names are case-insensitive,
		// but clients and docs match them by eye. Request headers stay normalised, so that
		// lookups of what clients send in any case still work.
		ctx.Response.Header.DisableNormalizing()
		if e := checkFraming(&ctx.Request.Header); e != nil {
			writeRaw(ctx, gen, e)
			return
		}
		if len(ctx.Request.Header.RequestURI()) > MaxRequestTarget {
			writeRaw(ctx, gen, uriTooLong())
			return
		}
		if !ctx.Request.Header.IsHTTP11() {
			// HTTP/1.0 gets one answer and the connection ends: keep-alive is HTTP/1.1's.
			ctx.SetConnectionClose()
		}
		if !knownMethod(ctx.Method()) {
			writeRaw(ctx, gen, apierr.New(fiber.StatusMethodNotAllowed, apierr.InvalidRequest, apierr.CodeMethodNotAllowed,
				fmt.Sprintf("Method %q is not allowed.", ctx.Method())))
			ctx.Response.Header.Set(fiber.HeaderAllow, allowedMethods)
			return
		}
		inner(ctx)
	}
	srv.ErrorHandler = func(ctx *fasthttp.RequestCtx, err error) {
		var small *fasthttp.ErrSmallBuffer
		var ne net.Error
		switch {
		case errors.As(err, &small) && requestLineUnended(ctx.Conn(), readBufferSize(srv)):
			writeRaw(ctx, gen, uriTooLong())
		case errors.As(err, &small):
			writeRaw(ctx, gen, apierr.New(requestHeaderFieldsTooBig, apierr.InvalidRequest, codeRequestHeadersTooBig,
				"The request headers are too large."))
		case errors.As(err, &ne) && ne.Timeout():
			writeRaw(ctx, gen, apierr.New(fiber.StatusRequestTimeout, apierr.InvalidRequest, codeRequestTimeout,
				"The request was not received in time."))
		case errors.Is(err, fasthttp.ErrDuplicateContentLength):
			writeRaw(ctx, gen, malformed("The request has more than one Content-Length header."))
		case errors.Is(err, fasthttp.ErrUnsupportedTransferEncoding):
			writeRaw(ctx, gen, malformed("The only Transfer-Encoding accepted is a single 'chunked', without Content-Length."))
		case errors.Is(err, fasthttp.ErrBodyTooLarge):
			writeRaw(ctx, gen, apierr.New(fiber.StatusRequestEntityTooLarge, apierr.InvalidRequest, apierr.CodeBodyTooLarge,
				"The request body is too large."))
		default:
			writeRaw(ctx, gen, apierr.New(fiber.StatusBadRequest, apierr.InvalidRequest, codeRequestMalformed,
				"The request is not valid HTTP/1.1."))
		}
	}
}

func uriTooLong() *apierr.Error {
	return apierr.New(fiber.StatusRequestURITooLong, apierr.InvalidRequest, codeRequestURITooLong,
		fmt.Sprintf("The request target (path and query) is longer than the limit of %d bytes.", MaxRequestTarget))
}

// readBufferSize is the server's read buffer as fasthttp uses it (its default when unset).
func readBufferSize(srv *fasthttp.Server) int {
	if srv.ReadBufferSize > 0 {
		return srv.ReadBufferSize
	}
	return fiber.DefaultReadBufferSize
}

func knownMethod(m []byte) bool {
	for _, k := range fiber.DefaultMethods {
		if string(m) == k {
			return true
		}
	}
	return false
}

// writeRaw answers with the envelope outside Fiber and closes the connection.
func writeRaw(ctx *fasthttp.RequestCtx, gen *ids.Generator, e *apierr.Error) {
	id := gen.New(ids.Request)
	body, _ := json.Marshal(e.Envelope(id)) // a struct of strings always marshals
	ctx.Request.ResetBody()
	ctx.Response.Reset()
	ctx.SetStatusCode(e.Status)
	ctx.SetContentType(fiber.MIMEApplicationJSON)
	ctx.Response.Header.Set(fiberx.HeaderRequestID, id)
	ctx.SetBody(body)
	// The answer to a HEAD has no body. fasthttp skips it for a handler's answer but not for
	// its ErrorHandler's, and a body there would be read as the start of the next response.
	ctx.Response.SkipBody = ctx.IsHead()
	ctx.SetConnectionClose()
}
