package apierr

import (
	"encoding/json"
	"fmt"
	"testing"

	"rentalplatform/libs/domainerr"
)

func TestEnvelopeShape(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  *Error
		want string
	}{
		{"missing", Missing("url"), `{"error":{"type":"invalid_request_error","code":"parameter_missing","message":"Missing required param: url.","param":"url","request_id":"req_1"}}`},
		{"unknown", Unknown("colour"), `{"error":{"type":"invalid_request_error","code":"parameter_unknown","message":"Received unknown parameter: colour.","param":"colour","request_id":"req_1"}}`},
		{"not found", NotFound("webhook_endpoint", "we_x"), `{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such webhook_endpoint: 'we_x'","param":"id","request_id":"req_1"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.err.Envelope("req_1"))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("got  %s\nwant %s", b, tc.want)
			}
		})
	}
}

func TestStatuses(t *testing.T) {
	for _, tc := range []struct {
		err    *Error
		status int
		typ    Type
	}{
		{Missing("a"), 400, InvalidRequest},
		{NotFound("x", "y"), 404, InvalidRequest},
		{Conflict(CodeInvalidState, "no"), 409, InvalidRequest},
		{Unauthenticated(), 401, Authentication},
		{Internal(), 500, API},
	} {
		if tc.err.Status != tc.status || tc.err.Type != tc.typ {
			t.Errorf("%s: status %d type %s, want %d %s", tc.err.Code, tc.err.Status, tc.err.Type, tc.status, tc.typ)
		}
	}
}

func TestFromUnwraps(t *testing.T) {
	base := Missing("url")
	wrapped := fmt.Errorf("creating endpoint: %w", base)
	if From(wrapped) != base {
		t.Fatal("From did not find the wrapped *Error")
	}
	if From(fmt.Errorf("plain")) != nil {
		t.Fatal("From invented an *Error")
	}
}

func TestFromDomain(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		typ    Type
		code   string
		param  string
	}{
		{domainerr.InvalidParam("currency", "bad"), 400, InvalidRequest, CodeParameterInvalid, "currency"},
		{domainerr.Missing("url"), 400, InvalidRequest, CodeParameterMissing, "url"},
		{domainerr.NotFoundObject("event", "evt_1"), 404, InvalidRequest, CodeResourceMissing, "id"},
		{domainerr.InvalidState("no"), 400, InvalidRequest, CodeInvalidState, ""},
		{domainerr.New(domainerr.IdempotencyInUse, CodeIdempotencyKeyInUse, "Idempotency-Key", "busy"), 409, Idempotency, CodeIdempotencyKeyInUse, "Idempotency-Key"},
		{domainerr.New(domainerr.IdempotencyReused, CodeIdempotencyKeyReused, "Idempotency-Key", "reused"), 400, Idempotency, CodeIdempotencyKeyReused, "Idempotency-Key"},
		{domainerr.New(domainerr.TooLarge, "file_too_large", "file", "big"), 413, InvalidRequest, "file_too_large", "file"},
		{domainerr.New(domainerr.UnsupportedMedia, "file_type_unsupported", "file", "exe"), 415, InvalidRequest, "file_type_unsupported", "file"},
	} {
		e := From(fmt.Errorf("use case: %w", tc.err))
		if e == nil || e.Status != tc.status || e.Type != tc.typ || e.Code != tc.code || e.Param != tc.param {
			t.Errorf("From(%v) = %+v, want %d %s %s on %q", tc.err, e, tc.status, tc.typ, tc.code, tc.param)
		}
	}
	if e := From(&domainerr.Error{Kind: 99, Code: "x"}); e != nil {
		t.Fatalf("an unknown kind became %+v, want nil (an internal error)", e)
	}
}
