package service_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/config"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/service"
	"rentalplatform/libs/servicetest"
)

var spec = service.Spec{Name: "example-svc", HTTPAddr: "127.0.0.1:8099", MongoDatabase: "example"}

// run is the run() of an example service, in the steps every service's follows: its
// configuration read once, the runtime started, its own parts composed (compose, nil: none),
// and served until ctx ends; a compose error closes everything started.
func run(compose func(context.Context, *service.Runtime) error) servicetest.RunFunc {
	return func(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
		base, err := config.LoadBase(getenv, spec.Defaults())
		if err != nil {
			return err
		}
		rt, err := service.Start(ctx, spec.Name, base, stdout)
		if err != nil {
			return err
		}
		if compose != nil {
			if err := compose(ctx, rt); err != nil {
				return errors.Join(err, rt.Close())
			}
		}
		return rt.Serve(ctx)
	}
}

// A service that composes nothing still passes the component check: the runtime alone is a
// correct (empty) service.
func TestRuntimeShell(t *testing.T) {
	servicetest.Component(t, func(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
		return run(nil)(ctx, getenv, stdout)
	}, nil)
}

func TestRuntimeServesWhatComposeAdds(t *testing.T) {
	t.Parallel()
	m := testkit.Mongo(t)
	things := run(func(_ context.Context, rt *service.Runtime) error {
		rt.App.Get("/v1/things", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"object": "list"}) })
		return nil
	})
	p := servicetest.Start(t, things, map[string]string{
		"HTTP_ADDR": "127.0.0.1:0", "MONGODB_URI": m.URI, "MONGODB_DATABASE": m.Database,
		"INTERNAL_AUTH_SECRET": servicetest.Secret,
	}, "http")
	signer, err := identity.NewSigner([]byte(servicetest.Secret), nil)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, p.URL("http")+"/v1/things", nil)
	signer.Sign(req.Header.Set, identity.Identity{Account: "acct_x", RequestID: "req_x"}, http.MethodGet, "/v1/things")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"list"`) {
		t.Fatalf("GET /v1/things: %d %s", res.StatusCode, body)
	}
	if !strings.Contains(p.Logs(), `"service":"example-svc"`) {
		t.Errorf("log lines do not name the service:\n%s", p.Logs())
	}
}

func TestRuntimeClosesWhenComposeFails(t *testing.T) {
	t.Parallel()
	m := testkit.Mongo(t)
	env := map[string]string{"MONGODB_URI": m.URI, "MONGODB_DATABASE": m.Database, "INTERNAL_AUTH_SECRET": servicetest.Secret}
	boom := errors.New("boom")
	closed := false
	err := run(func(_ context.Context, rt *service.Runtime) error {
		rt.OnClose(func(context.Context) error { closed = true; return nil })
		return boom
	})(t.Context(), func(k string) string { return env[k] }, io.Discard)
	if !errors.Is(err, boom) || !closed {
		t.Fatalf("Run = %v, closed %v; want the compose error and the runtime closed", err, closed)
	}
}
