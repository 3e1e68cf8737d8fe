package hostedpage

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gofiber/fiber/v2"
)

func TestRenderInlinesTheStylesheetItsPolicyAllows(t *testing.T) {
	fsys := fstest.MapFS{
		"p/layout.html": {Data: []byte(`{{define "layout"}}<style>{{stylesheet}}</style><h1>{{template "title" .}}</h1>{{end}}`)},
		"p/one.html":    {Data: []byte(`{{define "title"}}One {{.}}{{end}}`)},
		"p/style.css":   {Data: []byte(`.own{color:red}`)},
	}
	pages, err := Load(fsys, "p", "one")
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New()
	app.Get("/form", func(c *fiber.Ctx) error { return pages.Render(c, 201, "one", "<b>", "'self'") })
	app.Get("/plain", func(c *fiber.Ctx) error { return pages.Render(c, 200, "one", "x", "") })
	app.Get("/missing", func(c *fiber.Ctx) error { return pages.Render(c, 200, "two", "x", "") })

	res, err := app.Test(httptest.NewRequest("GET", "/form", nil))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	css := regexp.MustCompile(`(?s)<style>(.*)</style>`).FindSubmatch(body)
	if res.StatusCode != 201 || css == nil || !strings.Contains(string(body), "<h1>One &lt;b&gt;</h1>") {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	// The base stylesheet, then the service's own rules.
	if !strings.HasPrefix(string(css[1]), string(baseCSS)) || !strings.HasSuffix(string(css[1]), ".own{color:red}") {
		t.Fatalf("stylesheet: %q", css[1])
	}
	sum := sha256.Sum256(css[1])
	csp := res.Header.Get("Content-Security-Policy")
	want := "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
	if csp != want {
		t.Fatalf("CSP %q\nwant %q", csp, want)
	}
	for h, v := range map[string]string{"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
		"X-Content-Type-Options": "nosniff", "Content-Type": "text/html; charset=utf-8"} {
		if got := res.Header.Get(h); got != v {
			t.Errorf("%s: %q, want %q", h, got, v)
		}
	}

	res, _ = app.Test(httptest.NewRequest("GET", "/plain", nil))
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'none'") {
		t.Errorf("a page without a form: %q", csp)
	}
	if res, _ = app.Test(httptest.NewRequest("GET", "/missing", nil)); res.StatusCode != 500 {
		t.Errorf("a page not loaded: %d", res.StatusCode)
	}
}

func TestLoadFailsOnAMissingPage(t *testing.T) {
	fsys := fstest.MapFS{"p/layout.html": {Data: []byte(`{{define "layout"}}{{end}}`)}}
	if _, err := Load(fsys, "p", "none"); err == nil {
		t.Fatal("a page that is not there loaded")
	}
	if _, err := Load(fstest.MapFS{}, "p"); err == nil {
		t.Fatal("no layout loaded")
	}
}
