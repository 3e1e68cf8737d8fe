// Package hostedpage renders the platform's hosted pages (docs/hosted-pages.md): the pages a
// service serves to a person in a browser through the gateway, such as verification-svc's
// verification page and webhooks-svc's webhook portal. A service's pages are html/template
// files in a layout of its own; this package gives them the platform's base stylesheet (with
// the service's own rules after it), inlined in every page and allowed by its hash, so a page
// loads nothing, and the headers every hosted answer carries.
package hostedpage

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"path"

	"github.com/gofiber/fiber/v2"
)

// baseCSS is the stylesheet every hosted page starts from: type, colours, focus, forms.
//
//go:embed base.css
var baseCSS []byte

// Pages are a service's hosted pages: each page in the layout, and the stylesheet.
type Pages struct {
	byName map[string]*template.Template
	// styleSource is the Content-Security-Policy source of the stylesheet: 'sha256-<base64>'.
	styleSource string
}

// Load reads a service's pages from dir in fsys: dir/layout.html, which defines the template
// "layout" and writes the stylesheet with {{stylesheet}}, and for each name, dir/<name>.html,
// which defines what the layout asks of a page. dir/style.css, when present, adds the service's
// rules after the base stylesheet's.
func Load(fsys fs.FS, dir string, names ...string) (*Pages, error) {
	css := bytes.Clone(baseCSS)
	switch own, err := fs.ReadFile(fsys, path.Join(dir, "style.css")); {
	case err == nil:
		css = append(append(css, '\n'), own...)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("hosted pages: %w", err)
	}
	sum := sha256.Sum256(css)
	p := &Pages{byName: map[string]*template.Template{}, styleSource: "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"}
	stylesheet := template.CSS(css)
	layout, err := template.New("layout.html").
		Funcs(template.FuncMap{"stylesheet": func() template.CSS { return stylesheet }}).
		ParseFS(fsys, path.Join(dir, "layout.html"))
	if err != nil {
		return nil, fmt.Errorf("hosted pages: %w", err)
	}
	for _, name := range names {
		t, err := layout.Clone()
		if err != nil {
			return nil, fmt.Errorf("hosted pages: %w", err)
		}
		if _, err := t.ParseFS(fsys, path.Join(dir, name+".html")); err != nil {
			return nil, fmt.Errorf("hosted pages: %w", err)
		}
		p.byName[name] = t
	}
	return p, nil
}

// Render answers with the page name, in the layout, showing data, and the headers every hosted
// answer carries. formAction is the sources the page's forms may be sent to ("'self'", and the
// origin a submission redirects to), "" for a page without a form.
func (p *Pages) Render(c *fiber.Ctx, status int, name string, data any, formAction string) error {
	t, ok := p.byName[name]
	if !ok {
		return fmt.Errorf("render %s: no such page", name)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", data); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	if formAction == "" {
		formAction = "'none'"
	}
	SetHeaders(c, "default-src 'none'; style-src "+p.styleSource+"; form-action "+formAction+
		"; frame-ancestors 'none'; base-uri 'none'")
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Status(status).Send(buf.Bytes())
}

// SetHeaders sets what every hosted answer carries, a page or not (a redirect): nothing cached
// (the pages show credentials and secrets), no Referer sent on (an address may hold a
// credential), never framed (clickjacking), no type sniffing, and the Content-Security-Policy
// csp.
func SetHeaders(c *fiber.Ctx, csp string) {
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
	c.Set(fiber.HeaderXFrameOptions, "DENY")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderContentSecurityPolicy, csp)
}

// NoContent is the Content-Security-Policy of an answer that is no page (a redirect).
const NoContent = "default-src 'none'; frame-ancestors 'none'"
