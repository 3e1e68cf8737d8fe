package http

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"rentalplatform/gateway/internal/app"
	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/apierr"
	"rentalplatform/libs/fiberx"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/request"
)

// KeyAdmin manages keys (app.Service).
type KeyAdmin interface {
	CreateKey(ctx context.Context, in app.CreateKey) (domain.Key, string, error)
	GetKey(ctx context.Context, id string) (domain.Key, error)
	ListKeys(ctx context.Context, account string, p listing.Params) ([]domain.Key, bool, error)
	RevokeKey(ctx context.Context, id string) (domain.Key, error)
	RollKey(ctx context.Context, id string, expiresIn time.Duration) (domain.Key, string, error)
	SetRateLimit(ctx context.Context, id string, r *domain.RateLimit) (domain.Key, error)
}

// AdminConfig configures NewAdmin.
type AdminConfig struct {
	Logger         *slog.Logger
	Keys           KeyAdmin
	Token          string
	IDs            *ids.Generator
	TracerProvider trace.TracerProvider
	Propagator     propagation.TextMapPropagator
	Sampler        sdktrace.Sampler // fiberx.Config.Sampler
	MeterProvider  metric.MeterProvider
	// AuthLimit limits wrong tokens per client address as the public listener limits bad
	// API keys (GATEWAY_AUTH_FAILURE_LIMIT); nil: unlimited.
	AuthLimit AuthLimit
	// Documents are served behind the token like every admin route: the admin API's
	// contract.
	Documents []Document
}

const keysPath = "/admin/api_keys"

// NewAdmin returns the admin listener's app. Every route, unknown ones included, needs the
// admin token, so the admin API reveals nothing without it; a client address that keeps
// sending wrong tokens gets 429 authentication_rate_limited, as on the public listener.
func NewAdmin(cfg AdminConfig) *fiber.App {
	app := fiberx.New(fiberx.Config{
		Service:        "gateway-admin",
		Logger:         cfg.Logger,
		TracerProvider: cfg.TracerProvider,
		Propagator:     cfg.Propagator,
		Sampler:        cfg.Sampler,
		MeterProvider:  cfg.MeterProvider,
		Listener:       "admin",
		RequestIDs:     cfg.IDs,
	})
	guardServer(app, cfg.IDs)
	a := &admin{keys: cfg.Keys, tokenHash: sha256.Sum256([]byte(cfg.Token)), limit: cfg.AuthLimit}
	app.Use(a.requireToken)
	// The list reads its query parameters; every other operation takes none.
	app.Post(keysPath, request.NoQuery(a.create))
	app.Get(keysPath, a.list)
	app.Get(keysPath+"/:id", request.NoQuery(a.get))
	app.Post(keysPath+"/:id", request.NoQuery(a.update))
	app.Post(keysPath+"/:id/revoke", request.NoQuery(a.revoke))
	app.Post(keysPath+"/:id/roll", request.NoQuery(a.roll))
	serveDocuments(app, cfg.Documents)
	return app
}

type admin struct {
	keys      KeyAdmin
	tokenHash [sha256.Size]byte
	limit     AuthLimit
}

// requireToken compares hashes of the tokens in constant time, which hides the token's length
// as well as its contents. Wrong tokens are counted per client address: past the limit the
// address gets 429 until it is under again, the right token included, so the token cannot
// be guessed at the speed of the network.
func (a *admin) requireToken(c *fiber.Ctx) error {
	ip := clientIP(c)
	if a.limit != nil {
		if wait, blocked := a.limit.Blocked(ip); blocked {
			return adminBlocked(c, wait)
		}
	}
	tok, _ := bearer(c.Request().Header.Peek(fiber.HeaderAuthorization))
	got := sha256.Sum256([]byte(tok))
	if tok == "" || subtle.ConstantTimeCompare(got[:], a.tokenHash[:]) != 1 {
		if a.limit != nil {
			if wait, blocked := a.limit.AuthFailed(c.UserContext(), ip); blocked {
				return adminBlocked(c, wait)
			}
		}
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="Rental Platform admin"`)
		return apierr.New(fiber.StatusUnauthorized, apierr.Authentication, apierr.CodeAdminTokenInvalid,
			"Invalid admin token. Send 'Authorization: Bearer <ADMIN_TOKEN>'.")
	}
	return c.Next()
}

// keyJSON is the api_key object. Secret appears only in the response that created the key
// (or rolled it: the successor's).
type keyJSON struct {
	ID          string            `json:"id"`
	Object      string            `json:"object"`
	Type        string            `json:"type"`
	Secret      string            `json:"secret,omitempty"`
	Account     string            `json:"account"`
	Livemode    bool              `json:"livemode"`
	Permissions map[string]string `json:"permissions"`
	RateLimit   *int              `json:"rate_limit"`
	Created     int64             `json:"created"`
	Expires     *int64            `json:"expires"`
	LastUsed    *int64            `json:"last_used"`
	Revoked     bool              `json:"revoked"`
}

func toJSON(k domain.Key, secret string) keyJSON {
	j := keyJSON{
		ID: k.ID(), Object: "api_key", Type: string(k.Type()), Secret: secret, Account: k.Account(),
		Livemode: k.Livemode(), Created: k.Created().Unix(), Revoked: k.Revoked(),
		LastUsed: unixOrNil(k.LastUsed()), Expires: unixOrNil(k.ExpiresAt()),
	}
	if k.Type() == domain.KeyRestricted {
		j.Permissions = map[string]string{}
		for r, a := range k.Permissions().Map() {
			j.Permissions[string(r)] = a.String()
		}
	}
	if r, ok := k.RateLimit(); ok {
		j.RateLimit = &r.PerSecond
	}
	return j
}

func unixOrNil(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	u := t.Unix()
	return &u
}

func (a *admin) create(c *fiber.Ctx) error {
	var body struct {
		Account     *string           `json:"account"`
		Livemode    *bool             `json:"livemode"`
		Secret      *string           `json:"secret"`
		Permissions map[string]string `json:"permissions"`
		RateLimit   *int              `json:"rate_limit"`
	}
	if err := request.DecodeJSON(c, &body); err != nil {
		return err
	}
	if body.Account == nil || *body.Account == "" {
		return apierr.Missing("account")
	}
	in := app.CreateKey{Account: *body.Account}
	if body.Livemode != nil {
		in.Livemode = *body.Livemode
	}
	if body.Permissions != nil {
		p, err := domain.ParsePermissions(body.Permissions)
		if err != nil {
			return err
		}
		in.Permissions = &p
	}
	if body.RateLimit != nil {
		r, err := domain.NewRateLimit(*body.RateLimit)
		if err != nil {
			return err
		}
		in.RateLimit = &r
	}
	if body.Secret != nil {
		if *body.Secret == "" {
			return apierr.Invalid(apierr.CodeParameterInvalid, "secret", "Invalid secret: must not be empty; omit it to have one generated.")
		}
		in.Secret = *body.Secret
	}
	k, secret, err := a.keys.CreateKey(c.UserContext(), in)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(toJSON(k, secret))
}

func (a *admin) list(c *fiber.Ctx) error {
	q, err := request.Query(c)
	if err != nil {
		return err
	}
	p, err := listing.Parse(q, listing.Spec{IDPrefix: ids.APIKey, Created: true, Filters: []string{"account"}})
	if err != nil {
		return err
	}
	keys, more, err := a.keys.ListKeys(c.UserContext(), q.Get("account"), p)
	if err != nil {
		return err
	}
	data := make([]keyJSON, len(keys))
	for i, k := range keys {
		data[i] = toJSON(k, "")
	}
	return c.JSON(listing.Across(keysPath, data, more))
}

func (a *admin) get(c *fiber.Ctx) error {
	k, err := a.keys.GetKey(c.UserContext(), strings.Clone(c.Params("id")))
	if err != nil {
		return err
	}
	return c.JSON(toJSON(k, ""))
}

// update changes what can change of a key: its own rate limit (a number, or null for the
// default of its mode).
func (a *admin) update(c *fiber.Ctx) error {
	var body struct {
		RateLimit json.RawMessage `json:"rate_limit"`
	}
	if err := request.DecodeJSON(c, &body); err != nil {
		return err
	}
	if len(body.RateLimit) == 0 {
		return apierr.Missing("rate_limit")
	}
	var r *domain.RateLimit
	if string(body.RateLimit) != "null" {
		var n int
		if err := json.Unmarshal(body.RateLimit, &n); err != nil {
			return apierr.Invalid(apierr.CodeParameterInvalid, "rate_limit",
				"Invalid rate_limit: expected a whole number of requests per second, or null for the default.")
		}
		v, err := domain.NewRateLimit(n)
		if err != nil {
			return err
		}
		r = &v
	}
	k, err := a.keys.SetRateLimit(c.UserContext(), strings.Clone(c.Params("id")), r)
	if err != nil {
		return err
	}
	return c.JSON(toJSON(k, ""))
}

// roll issues a successor of the key; the response is the new key with its secret.
func (a *admin) roll(c *fiber.Ctx) error {
	var body struct {
		ExpiresIn *int64 `json:"expires_in"`
	}
	if err := request.DecodeJSON(c, &body); err != nil {
		return err
	}
	if body.ExpiresIn == nil {
		return apierr.Missing("expires_in")
	}
	if most := int64(domain.MaxRollExpiry / time.Second); *body.ExpiresIn < 0 || *body.ExpiresIn > most {
		return apierr.Invalid(apierr.CodeParameterInvalid, "expires_in",
			fmt.Sprintf("Invalid expires_in %d: expected 0 (the old key stops at once) to %d seconds (7 days).", *body.ExpiresIn, most))
	}
	k, secret, err := a.keys.RollKey(c.UserContext(), strings.Clone(c.Params("id")), time.Duration(*body.ExpiresIn)*time.Second)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(toJSON(k, secret))
}

func (a *admin) revoke(c *fiber.Ctx) error {
	var body struct{}
	if err := request.DecodeJSON(c, &body); err != nil {
		return err
	}
	k, err := a.keys.RevokeKey(c.UserContext(), strings.Clone(c.Params("id")))
	if err != nil {
		return err
	}
	return c.JSON(toJSON(k, ""))
}
