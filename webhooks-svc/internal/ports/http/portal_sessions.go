package http

import (
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/libs/request"

	"rentalplatform/webhooks-svc/internal/app"
	"rentalplatform/webhooks-svc/internal/domain"
)

const portalSessionsPath = "/v1/webhook_portal_sessions"

// PortalPrefix is the webhook portal's path prefix on the gateway's public address (its pages:
// package portal).
const PortalPrefix = "/portal/"

// The headers the gateway sets on every request it forwards, overwriting any the client sent:
// the public address the client used.
const (
	headerForwardedHost  = "X-Forwarded-Host"
	headerForwardedProto = "X-Forwarded-Proto"
)

// PortalConfig configures the portal sessions' operation.
type PortalConfig struct {
	// BaseURL is where the portal's links point (WEBHOOKS_PORTAL_BASE_URL), without a trailing
	// slash; "" derives it from the public address the client used (the gateway's
	// X-Forwarded-Proto and X-Forwarded-Host).
	BaseURL string
}

type portalHandlers struct {
	svc *app.Service
	cfg PortalConfig
}

// RegisterPortalSessions adds POST /v1/webhook_portal_sessions to r.
func RegisterPortalSessions(r fiber.Router, svc *app.Service, cfg PortalConfig) {
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	h := portalHandlers{svc: svc, cfg: cfg}
	r.Post(portalSessionsPath, request.NoQuery(h.create))
}

// portalSessionParams is the body of POST /v1/webhook_portal_sessions.
type portalSessionParams struct {
	Endpoint  *string `json:"endpoint"`
	Access    *string `json:"access"`
	ReturnURL *string `json:"return_url"`
}

// portalSessionJSON is the webhook_portal_session object; url (with the token) is shown only
// by the create.
type portalSessionJSON struct {
	ID        string  `json:"id"`
	Object    string  `json:"object"`
	Livemode  bool    `json:"livemode"`
	Created   int64   `json:"created"`
	ExpiresAt int64   `json:"expires_at"`
	Endpoint  *string `json:"endpoint"`
	Access    string  `json:"access"`
	ReturnURL *string `json:"return_url"`
	URL       string  `json:"url"`
}

func (h portalHandlers) create(c *fiber.Ctx) error {
	var p portalSessionParams
	if err := request.DecodeJSON(c, &p); err != nil {
		return err
	}
	ps, token, err := h.svc.CreatePortalSession(c.UserContext(), caller(c), app.CreatePortalSession{
		Endpoint: p.Endpoint, Access: p.Access, ReturnURL: p.ReturnURL,
	})
	if err != nil {
		return err
	}
	out := portalSessionJSON{
		ID: ps.ID(), Object: domain.ObjectPortalSession, Livemode: ps.Livemode(),
		Created: ps.Created().Unix(), ExpiresAt: ps.ExpiresAt().Unix(), Access: string(ps.Access()),
		URL: h.base(c) + PortalPrefix + ps.ID() + "?token=" + url.QueryEscape(token),
	}
	if ep := ps.Endpoint(); ep != "" {
		out.Endpoint = &ep
	}
	if u := ps.ReturnURL(); u != "" {
		out.ReturnURL = &u
	}
	return c.JSON(out)
}

// base is the portal links' origin: the configured one, else the public address the client
// used as the gateway forwards it (else this request's own Host: a call made to the service
// directly).
func (h portalHandlers) base(c *fiber.Ctx) string {
	if h.cfg.BaseURL != "" {
		return h.cfg.BaseURL
	}
	return PublicOrigin(c)
}

// PublicOrigin is the origin ("https://api.example.com") the client addressed, from the
// headers the gateway sets (X-Forwarded-Proto, X-Forwarded-Host), else the request's own Host
// over http. A host that is not a plain host[:port] is not used (then 127.0.0.1).
func PublicOrigin(c *fiber.Ctx) string {
	h := &c.Request().Header
	host := string(h.Peek(headerForwardedHost))
	if host == "" {
		host = string(c.Request().Host())
	}
	if !plainHost(host) {
		host = "127.0.0.1"
	}
	scheme := "http"
	if string(h.Peek(headerForwardedProto)) == "https" {
		scheme = "https"
	}
	return scheme + "://" + host
}

// PublicHTTPS reports whether the client addressed the platform over https.
func PublicHTTPS(c *fiber.Ctx) bool {
	return string(c.Request().Header.Peek(headerForwardedProto)) == "https"
}

// plainHost reports whether s is a host and optional port, and nothing else.
func plainHost(s string) bool {
	if s == "" || len(s) > 300 {
		return false
	}
	u, err := url.Parse("http://" + s)
	return err == nil && u.Host == s && u.User == nil && u.Path == "" && u.RawQuery == "" && u.Fragment == "" &&
		!strings.ContainsAny(s, "\"'<> \\")
}
