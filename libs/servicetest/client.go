package servicetest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
)

// Client calls a service started with Start as the gateway would: as one account in one
// mode, every request signed with the identity headers (Secret).
type Client struct {
	T        testing.TB
	BaseURL  string
	Account  string
	Livemode bool
	// IdempotencyKey is the Idempotency-Key the gateway passes on with every request: "" for
	// none.
	IdempotencyKey string
	signer         *identity.Signer
	ids            *ids.Generator
}

// NewClient returns a client of a new account, in test mode, for the service at baseURL.
func NewClient(t testing.TB, baseURL string) *Client {
	signer, err := identity.NewSigner([]byte(Secret), nil)
	if err != nil {
		t.Fatal(err)
	}
	g := ids.NewGenerator(nil)
	return &Client{T: t, BaseURL: baseURL, Account: g.New(ids.Account), signer: signer, ids: g}
}

// Mode returns a client of the same account in the given mode.
func (c *Client) Mode(livemode bool) *Client {
	cp := *c
	cp.Livemode = livemode
	return &cp
}

// WithKey returns a client of the same account and mode whose requests carry the
// Idempotency-Key key, as the gateway passes it on (and again on a retry after a 502).
func (c *Client) WithKey(key string) *Client {
	cp := *c
	cp.IdempotencyKey = key
	return &cp
}

// Hosted returns a client whose requests carry the gateway's hosted-page identity
// (identity.HostedAccount, no account): a browser's requests for a hosted page, as the gateway
// forwards them.
func (c *Client) Hosted() *Client {
	cp := *c
	cp.Account, cp.Livemode = identity.HostedAccount, false
	return &cp
}

// Response is a service's answer.
type Response struct {
	Status int
	Header http.Header
	Raw    []byte
	Body   map[string]any
}

// ErrCode and ErrParam return the error envelope's code and param ("" when absent).
func (r Response) ErrCode() string  { return r.errField("code") }
func (r Response) ErrParam() string { return r.errField("param") }

func (r Response) errField(name string) string {
	e, _ := r.Body["error"].(map[string]any)
	s, _ := e[name].(string)
	return s
}

// Do sends a request with a JSON body ("" sends none) and decodes the JSON object answered.
func (c *Client) Do(method, target, body string) Response {
	c.T.Helper()
	var r io.Reader
	contentType := ""
	if body != "" {
		r, contentType = strings.NewReader(body), "application/json"
	}
	out := c.Send(method, target, contentType, r)
	if out.Body == nil {
		c.T.Fatalf("%s %s: %d, body is not a JSON object: %s", method, target, out.Status, out.Raw)
	}
	return out
}

// Send sends a request with any body (nil sends none; contentType "" sets no Content-Type),
// such as a multipart upload, and returns the answer; Body is decoded only when the answer is
// a JSON object (a file download is not).
func (c *Client) Send(method, target, contentType string, body io.Reader) Response {
	c.T.Helper()
	req, err := http.NewRequest(method, c.BaseURL+target, body)
	if err != nil {
		c.T.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	c.signer.Sign(req.Header.Set, identity.Identity{
		Account: c.Account, Livemode: c.Livemode, RequestID: c.ids.New(ids.Request), IdempotencyKey: c.IdempotencyKey,
	}, method, req.URL.Path)
	// As the gateway forwards: a redirect (a hosted page's 303) is the answer, not followed.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		c.T.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		c.T.Fatal(err)
	}
	out := Response{Status: res.StatusCode, Header: res.Header, Raw: raw}
	if json.Unmarshal(raw, &out.Body) != nil {
		out.Body = nil
	}
	return out
}

// For returns a copy of the client acting for account in the given mode and reporting
// failures to t (a subtest).
func (c *Client) For(t testing.TB, account string, livemode bool) *Client {
	cp := *c
	cp.T, cp.Account, cp.Livemode = t, account, livemode
	return &cp
}

// Str returns the string field key of the body ("" when it is not one).
func (r Response) Str(key string) string { s, _ := r.Body[key].(string); return s }

// WantOK fails t unless the status is 200.
func (r Response) WantOK(t testing.TB) Response {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", r.Status, r.Raw)
	}
	return r
}

// WantError fails t unless the answer is the error envelope with this status, type, code and
// param, and a message.
func (r Response) WantError(t testing.TB, status int, typ, code, param string) {
	t.Helper()
	e, _ := r.Body["error"].(map[string]any)
	if r.Status != status || e == nil || e["type"] != typ || r.ErrCode() != code || r.ErrParam() != param || e["message"] == "" {
		t.Fatalf("got %d %s; want %d %s/%s param %q", r.Status, r.Raw, status, typ, code, param)
	}
}
