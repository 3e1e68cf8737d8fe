package http

import (
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"rentalplatform/gateway/internal/app"
	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/apierr"
	"rentalplatform/libs/fiberx"
)

// Response headers of idempotent requests.
const (
	// headerReplayed marks a response that is the stored answer of an earlier request.
	headerReplayed = "Idempotent-Replayed"
	// headerOriginalRequest names the request whose answer is replayed.
	headerOriginalRequest = "Original-Request"
)

// idempotencyKey returns the request's Idempotency-Key ("" when there is none), checked.
func idempotencyKey(c *fiber.Ctx) (string, error) {
	vals := c.Request().Header.PeekAll(domain.IdempotencyKeyHeader)
	switch len(vals) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", apierr.Invalid(apierr.CodeParameterInvalid, domain.IdempotencyKeyHeader,
			"Send one Idempotency-Key header, not several.")
	}
	k := string(vals[0])
	if err := domain.ValidateIdempotencyKey(k); err != nil {
		return "", err
	}
	return k, nil
}

// idempotentRun is one POST with an Idempotency-Key, from claiming the key to storing the
// answer. A JSON body is read whole first, so its fingerprint is known before the key is
// claimed. An upload is streamed: its fingerprint is computed while it passes through and
// stored with the answer; a retry of a finished upload is read whole (not forwarded) to
// compare, and a retry while the first still runs gets 409 without its body being read.
type idempotentRun struct {
	p      *public
	c      *fiber.Ctx
	scope  app.IdempotencyScope
	path   string
	upload bool

	fp     string // JSON: known before the claim
	upFP   *domain.UploadFingerprint
	claim  app.Claim
	closed bool // completed or released
}

func (p *public) newIdempotentRun(c *fiber.Ctx, key domain.Key, path, idemKey string, upload bool) *idempotentRun {
	return &idempotentRun{p: p, c: c, path: path, upload: upload,
		scope: app.IdempotencyScope{Account: key.Account(), Livemode: key.Livemode(), Key: idemKey}}
}

// begin attaches the body to out and claims the key. handled is true when the answer was
// written already (a replay); err is the answer when the request must not run.
func (r *idempotentRun) begin(out *fasthttp.Request) (body *bodyReader, handled bool, err error) {
	c := r.c
	query := c.Request().URI().QueryString()
	if !r.upload {
		if _, err := r.p.attachBody(c, out, false, nil); err != nil {
			return nil, false, err
		}
		r.fp = domain.Fingerprint(fiber.MethodPost, r.path, query, out.Body())
		claim, rec, err := r.p.idem.BeginIdempotent(c.UserContext(), r.scope, r.fp)
		if err != nil {
			return nil, false, idempotencyFailure(err)
		}
		if rec != nil {
			r.replay(rec)
			return nil, true, nil
		}
		r.claim = claim
		return nil, false, nil
	}

	r.upFP = domain.NewUploadFingerprint(fiber.MethodPost, r.path, query, string(c.Request().Header.ContentType()))
	claim, rec, err := r.p.idem.BeginIdempotent(c.UserContext(), r.scope, "")
	if err != nil {
		return nil, false, idempotencyFailure(err)
	}
	if rec != nil {
		if err := r.p.readUpload(c, r.upFP); err != nil {
			return nil, false, err
		}
		if !rec.Matches(r.upFP.Sum()) {
			return nil, false, domain.ErrIdempotencyKeyReused
		}
		r.replay(rec)
		return nil, true, nil
	}
	r.claim = claim
	body, err = r.p.attachBody(c, out, true, r.upFP)
	return body, false, err
}

// complete stores the service's answer (when it is one that is kept) for replays.
func (r *idempotentRun) complete(resp *fasthttp.Response, body *bodyReader) {
	fp := r.fp
	if r.upload {
		// A service that answered before reading the whole upload (a refusal) leaves the
		// fingerprint incomplete; nothing is stored and a retry runs again.
		if body != nil && !body.eof {
			r.release()
			return
		}
		fp = r.upFP.Sum()
	}
	r.closed = true
	r.p.idem.CompleteIdempotent(r.c.UserContext(), r.claim, fp, domain.StoredResponse{
		Status:    resp.StatusCode(),
		Header:    endToEndHeaders(resp),
		Body:      append([]byte(nil), resp.Body()...),
		RequestID: fiberx.RequestID(r.c),
	})
}

// release gives the key up unless the run completed.
func (r *idempotentRun) release() {
	if r.closed {
		return
	}
	r.closed = true
	r.p.idem.ReleaseIdempotent(r.c.UserContext(), r.claim)
}

// replay answers with a stored response, byte for byte, marked as a replay.
func (r *idempotentRun) replay(rec *domain.IdempotencyRecord) {
	c := r.c
	c.Status(rec.Response.Status)
	h := &c.Response().Header
	for _, kv := range rec.Response.Header {
		h.Add(kv[0], kv[1])
	}
	h.Set(headerReplayed, "true")
	if rec.Response.RequestID != "" {
		h.Set(headerOriginalRequest, rec.Response.RequestID)
	}
	c.Response().SetBody(rec.Response.Body)
}

// endToEndHeaders are the service's response headers the client gets (see copyResponse).
func endToEndHeaders(resp *fasthttp.Response) [][2]string {
	var out [][2]string
	for k, v := range resp.Header.All() {
		if !hopHeader(k) {
			out = append(out, [2]string{string(k), string(v)})
		}
	}
	return out
}

// idempotencyFailure maps an error of BeginIdempotent.
func idempotencyFailure(err error) error {
	if errors.Is(err, app.ErrIdempotencyUnavailable) {
		return apierr.New(fiber.StatusServiceUnavailable, apierr.API, apierr.CodeServiceUnavailable,
			"Idempotency keys cannot be checked right now, so this request was not run. Retry it with the same Idempotency-Key after a short wait.")
	}
	return err
}
