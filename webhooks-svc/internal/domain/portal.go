package domain

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"time"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/validate"
)

// The webhook portal: a short-lived link that an account hands to its own customer, who then
// sees the account's endpoints (or one of them), their recent events and deliveries, and, with
// read-write access, retries deliveries, rotates secrets and disables or enables endpoints
// (docs/hosted-pages.md, "The webhook portal").

// Prefixes of the portal's ids and tokens.
const (
	PortalSessionIDPrefix = "wps_"
	PortalTokenPrefix     = "wpst_"
)

// ObjectPortalSession is the portal session's object type.
const ObjectPortalSession = "webhook_portal_session"

// PortalSessionTTL is how long a portal link works: one hour from its creation, whatever is
// done with it meanwhile.
const PortalSessionTTL = time.Hour

// PortalAccess is what the portal's visitor may do.
type PortalAccess string

// Access levels.
const (
	// PortalReadOnly: see endpoints, events and deliveries; no action.
	PortalReadOnly PortalAccess = "read_only"
	// PortalReadWrite: also retry deliveries, rotate secrets, disable and enable endpoints.
	PortalReadWrite PortalAccess = "read_write"
)

// ErrPortalSessionNotFound is the repository's answer for a portal session id it does not
// hold.
var ErrPortalSessionNotFound = domainerr.NotFoundSentinel(ObjectPortalSession)

// PortalSessionNotFound is the error for a portal session id that is not stored.
func PortalSessionNotFound(id string) error {
	return domainerr.NotFoundObject(ObjectPortalSession, id)
}

// PortalSession is one portal link: an account and mode, optionally one of its endpoints, an
// access level, and the SHA-256 of its token (the token itself is shown once, in the link,
// and never stored). It never changes after creation.
type PortalSession struct {
	id        string
	account   string
	livemode  bool
	endpoint  string // "" when the session covers every endpoint of the account and mode
	access    PortalAccess
	returnURL string // "" when none
	tokenHash string // hex SHA-256 of the token
	created   time.Time
	expiresAt time.Time
}

// NewPortalSessionParams is a new portal session: the client's input (Endpoint, checked to be
// the account's by the application; Access; ReturnURL) and what the application assigns.
type NewPortalSessionParams struct {
	ID       string
	Account  string
	Livemode bool
	// Token is the session's secret, which the link carries; only its hash is kept.
	Token     string
	Created   time.Time
	Endpoint  string
	Access    *string // nil: read_only
	ReturnURL *string // nil: none
}

// NewPortalSession validates the input and returns the session, expiring PortalSessionTTL
// after its creation (in whole seconds, as the API shows them).
func NewPortalSession(p NewPortalSessionParams) (*PortalSession, error) {
	s := &PortalSession{
		id: p.ID, account: p.Account, livemode: p.Livemode, endpoint: p.Endpoint, access: PortalReadOnly,
		tokenHash: HashPortalToken(p.Token),
		created:   p.Created.UTC().Truncate(time.Second),
	}
	s.expiresAt = s.created.Add(PortalSessionTTL)
	if p.Access != nil {
		a, err := ParsePortalAccess(*p.Access)
		if err != nil {
			return nil, err
		}
		s.access = a
	}
	if p.ReturnURL != nil {
		u, err := validate.ParseHTTPSURL("return_url", *p.ReturnURL, MaxURLLen)
		if err != nil {
			return nil, err
		}
		s.returnURL = u.String()
	}
	return s, nil
}

// ParsePortalAccess reads read_only or read_write.
func ParsePortalAccess(s string) (PortalAccess, error) {
	switch a := PortalAccess(s); a {
	case PortalReadOnly, PortalReadWrite:
		return a, nil
	}
	return "", invalid(CodeParameterInvalid, "access", "Invalid access: must be read_only or read_write, got '%s'.", validate.Shown(s))
}

// HashPortalToken is what is stored of a token: its SHA-256, in hex. A token is 190 random
// bits, so a plain hash (no salt, no stretching) is as strong as the token.
func HashPortalToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Opens reports whether token opens the session at now: its hash is the session's, compared
// in constant time, and the session's expires_at has not come. A token opens its own session
// only (each is checked against the session the link names).
func (s *PortalSession) Opens(token string, now time.Time) bool {
	// Compared first and always, so the time taken does not tell an expired session apart.
	match := subtle.ConstantTimeCompare([]byte(HashPortalToken(token)), []byte(s.tokenHash)) == 1
	return match && token != "" && now.Before(s.expiresAt)
}

// CSRF is the value every action form carries besides the cookie: an HMAC of the session's id
// keyed with its token. Another site can make the browser send the cookie, but cannot read
// the page to learn this value; the token is never in a page, and this value does not reveal
// it.
func (s *PortalSession) CSRF(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("webhook-portal-csrf:" + s.id))
	return hex.EncodeToString(m.Sum(nil))
}

// CSRFValid reports whether v is the CSRF value of the session and token, in constant time.
func (s *PortalSession) CSRFValid(token, v string) bool {
	return hmac.Equal([]byte(s.CSRF(token)), []byte(v))
}

// Writable reports whether the session may act (read_write).
func (s *PortalSession) Writable() bool { return s.access == PortalReadWrite }

// Covers reports whether the session may see endpoint: every endpoint of its account and mode,
// or its one endpoint.
func (s *PortalSession) Covers(endpoint string) bool {
	return endpoint != "" && (s.endpoint == "" || s.endpoint == endpoint)
}

// Remaining is how long the session still works at now (0 once expired).
func (s *PortalSession) Remaining(now time.Time) time.Duration {
	return max(s.expiresAt.Sub(now), 0)
}

func (s *PortalSession) ID() string           { return s.id }
func (s *PortalSession) Account() string      { return s.account }
func (s *PortalSession) Livemode() bool       { return s.livemode }
func (s *PortalSession) Endpoint() string     { return s.endpoint }
func (s *PortalSession) Access() PortalAccess { return s.access }
func (s *PortalSession) ReturnURL() string    { return s.returnURL }
func (s *PortalSession) Created() time.Time   { return s.created }
func (s *PortalSession) ExpiresAt() time.Time { return s.expiresAt }

// PortalSessionState is a stored session's fields, for the repository.
type PortalSessionState struct {
	ID, Account        string
	Livemode           bool
	Endpoint           string
	Access             PortalAccess
	ReturnURL          string
	TokenHash          string
	Created, ExpiresAt time.Time
}

// RehydratePortalSession returns the session as stored.
func RehydratePortalSession(s PortalSessionState) *PortalSession {
	return &PortalSession{
		id: s.ID, account: s.Account, livemode: s.Livemode, endpoint: s.Endpoint, access: s.Access,
		returnURL: s.ReturnURL, tokenHash: s.TokenHash, created: s.Created.UTC(), expiresAt: s.ExpiresAt.UTC(),
	}
}

// State returns the session's fields for storage.
func (s *PortalSession) State() PortalSessionState {
	return PortalSessionState{
		ID: s.id, Account: s.account, Livemode: s.livemode, Endpoint: s.endpoint, Access: s.access,
		ReturnURL: s.returnURL, TokenHash: s.tokenHash, Created: s.created, ExpiresAt: s.expiresAt,
	}
}

// PortalSessionRepository stores portal sessions. Sessions are written once and read by id
// alone: the link names no account, so the owner is what the stored session says.
type PortalSessionRepository interface {
	// Create stores a new session.
	Create(ctx context.Context, s *PortalSession) error
	// Load returns the session, or ErrPortalSessionNotFound.
	Load(ctx context.Context, id string) (*PortalSession, error)
	// Purge removes the sessions that expired before t and returns how many.
	Purge(ctx context.Context, before time.Time) (int64, error)
}
