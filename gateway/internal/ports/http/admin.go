package http

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"strings"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"rentalplatform/gateway/internal/app"
	"rentalplatform/gateway/internal/domain"
	"rentalplatform/libs/apierr"
	"rentalplatform/libs/fiberx"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
)

// KeyAdmin manages keys (app.Service).
type KeyAdmin interface {
	CreateKey(ctx context.Context, in app.CreateKey) (domain.Key, string, error)
	ListKeys(ctx context.Context, account string, p listing.Params) ([]domain.Key, bool, error)
	RevokeKey(ctx context.Context, id string) (domain.Key, error)
}

// AdminConfig configures NewAdmin.
type AdminConfig struct {
	Logger         *slog.Logger
	Keys           KeyAdmin
	Token          string
	IDs            *ids.Generator
	TracerProvider trace.TracerProvider
	Propagator     propagation.TextMapPropagator
}

const keysPath = "/admin/api_keys"

// NewAdmin returns the admin listener's app. Every route, unknown ones included, needs the
// admin token, so the admin API reveals nothing without it.
func NewAdmin(cfg AdminConfig) *fiber.App {
	app := fiberx.New(fiberx.Config{
		Service:        "gateway-admin",
		Logger:         cfg.Logger,
		TracerProvider: cfg.TracerProvider,
		Propagator:     cfg.Propagator,
		RequestID:      func(*fiber.Ctx) string { return cfg.IDs.New(ids.Request) },
	})
	guardServer(app, cfg.IDs)
	a := &admin{keys: cfg.Keys, tokenHash: sha256.Sum256([]byte(cfg.Token))}
	app.Use(a.requireToken)
	app.Post(keysPath, a.create)
	app.Get(keysPath, a.list)
	app.Post(keysPath+"/:id/revoke", a.revoke)
	return app
}

type admin struct {
	keys      KeyAdmin
	tokenHash [sha256.Size]byte
}

// requireToken compares hashes of the tokens in constant time, which hides the token's length
// as well as its contents.
func (a *admin) requireToken(c *fiber.Ctx) error {
	tok, _ := bearer(c.Request().Header.Peek(fiber.HeaderAuthorization))
	got := sha256.Sum256([]byte(tok))
	if tok == "" || subtle.ConstantTimeCompare(got[:], a.tokenHash[:]) != 1 {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="Rental Platform admin"`)
		return apierr.New(fiber.StatusUnauthorized, apierr.Authentication, apierr.CodeAdminTokenInvalid,
			"Invalid admin token. Send 'Authorization: Bearer <ADMIN_TOKEN>'.")
	}
	return c.Next()
}

// keyJSON is the api_key object. Secret appears only in the response that created the key.
type keyJSON struct {
	ID       string `json:"id"`
	Object   string `json:"object"`
	Secret   string `json:"secret,omitempty"`
	Account  string `json:"account"`
	Livemode bool   `json:"livemode"`
	Created  int64  `json:"created"`
	LastUsed *int64 `json:"last_used"`
	Revoked  bool   `json:"revoked"`
}

func toJSON(k domain.Key, secret string) keyJSON {
	j := keyJSON{
		ID: k.ID(), Object: "api_key", Secret: secret, Account: k.Account(), Livemode: k.Livemode(),
		Created: k.Created().Unix(), Revoked: k.Revoked(),
	}
	if t := k.LastUsed(); !t.IsZero() {
		u := t.Unix()
		j.LastUsed = &u
	}
	return j
}

func (a *admin) create(c *fiber.Ctx) error {
	var body struct {
		Account  *string `json:"account"`
		Livemode *bool   `json:"livemode"`
		Secret   *string `json:"secret"`
	}
	if err := fiberx.DecodeJSON(c, &body); err != nil {
		return err
	}
	if body.Account == nil || *body.Account == "" {
		return apierr.Missing("account")
	}
	in := app.CreateKey{Account: *body.Account}
	if body.Livemode != nil {
		in.Livemode = *body.Livemode
	}
	if body.Secret != nil {
		if *body.Secret == "" {
			return apierr.Invalid(apierr.CodeParameterInvalid, "secret", "Invalid secret: must not be empty; omit it to have one generated.")
		}
		in.Secret = *body.Secret
	}
	k, secret, err := a.keys.CreateKey(c.UserContext(), in)
	if err != nil {
		return fromDomain(err)
	}
	return c.Status(fiber.StatusCreated).JSON(toJSON(k, secret))
}

func (a *admin) list(c *fiber.Ctx) error {
	q, err := fiberx.Query(c)
	if err != nil {
		return err
	}
	p, err := listing.Parse(q, listing.Spec{IDPrefix: ids.APIKey, Created: true, Filters: []string{"account"}})
	if err != nil {
		return err
	}
	keys, more, err := a.keys.ListKeys(c.UserContext(), q.Get("account"), p)
	if err != nil {
		return fromDomain(err)
	}
	data := make([]keyJSON, len(keys))
	for i, k := range keys {
		data[i] = toJSON(k, "")
	}
	return c.JSON(listing.New(keysPath, data, more))
}

func (a *admin) revoke(c *fiber.Ctx) error {
	var body struct{}
	if err := fiberx.DecodeJSON(c, &body); err != nil {
		return err
	}
	k, err := a.keys.RevokeKey(c.UserContext(), strings.Clone(c.Params("id")))
	if err != nil {
		return fromDomain(err)
	}
	return c.JSON(toJSON(k, ""))
}
