package hosted

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"
)

//go:embed pages
var files embed.FS

// Page names (pages/<name>.html).
const (
	pageVerify   = "verify"
	pageDone     = "done"
	pageLive     = "live"
	pageNotFound = "notfound"
	pageError    = "error"
)

// pages are the templates, each its page in the layout, and the one stylesheet, inlined in
// every page and allowed by its hash: the pages load nothing, and the Content-Security-Policy
// allows nothing else.
type pages struct {
	byName map[string]*template.Template
	css    template.CSS
	// styleSource is the CSP source of the stylesheet: 'sha256-<base64>'.
	styleSource string
}

func loadPages() (*pages, error) {
	css, err := files.ReadFile("pages/style.css")
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(css)
	p := &pages{byName: map[string]*template.Template{}, css: template.CSS(css),
		styleSource: "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"}
	layout, err := template.ParseFS(files, "pages/layout.html")
	if err != nil {
		return nil, err
	}
	for _, name := range []string{pageVerify, pageDone, pageLive, pageNotFound, pageError} {
		t, err := layout.Clone()
		if err != nil {
			return nil, err
		}
		if _, err := t.ParseFS(files, "pages/"+name+".html"); err != nil {
			return nil, err
		}
		p.byName[name] = t
	}
	return p, nil
}

// view is what a page shows. Fields a page does not use stay zero.
type view struct {
	CSS       template.CSS
	TestMode  bool
	RequestID string // the error page's reference

	// The verification page.
	Action   string // where the form posts: /verify/<id> (the secret goes in the body)
	Secret   string
	Products []productView
	Errors   []fieldError // the summary at the top, in the order of the fields
	// ReturnURL is the session's redirect_url, ReturnHost its host as a person reads it.
	ReturnURL  string
	ReturnHost string
	Expires    string

	// The page after a submission without a redirect_url.
	Status string
}

// productView is one product's radio group.
type productView struct {
	Product string
	ID      string // the fieldset's id: outcome-<product>
	Name    string // "Identity"
	Lower   string // "identity", within a sentence
	About   string
	Choices []choiceView
	Error   string
}

type choiceView struct {
	ID      string // outcome-<product>-<value>
	Field   string // outcomes[<product>]
	Value   string
	Label   string
	Hint    string
	Checked bool
}

// fieldError is one line of the error summary: its message, linking to the field.
type fieldError struct {
	Target  string
	Message string
}

// render answers with the page name in the layout and the security headers every hosted
// answer carries. formTo is the origin the page's form may be sent on to (the session's
// redirect_url: a form submission that redirects must be allowed to go there), "" for none;
// withForm says whether the page has a form at all.
func (p *pages) render(c *fiber.Ctx, status int, name string, v view, withForm bool, formTo string) error {
	v.CSS = p.css
	var buf bytes.Buffer
	if err := p.byName[name].ExecuteTemplate(&buf, "layout", v); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	formAction := "'none'"
	if withForm {
		formAction = "'self'"
		if formTo != "" {
			formAction += " " + formTo
		}
	}
	setHeaders(c, "default-src 'none'; style-src "+p.styleSource+"; form-action "+formAction+
		"; frame-ancestors 'none'; base-uri 'none'")
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Status(status).Send(buf.Bytes())
}

// setHeaders sets what every hosted answer carries: nothing cached (the page holds the client
// secret), no Referer sent on (the page's URL holds it too), never framed (clickjacking), no
// type sniffing, and the Content-Security-Policy csp.
func setHeaders(c *fiber.Ctx, csp string) {
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
	c.Set(fiber.HeaderXFrameOptions, "DENY")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderContentSecurityPolicy, csp)
}

// origin returns the CSP source of an https URL's origin ("https://shop.example.com:8443"),
// and the host as a person reads it. A host CSP cannot name (an IPv6 literal) allows any
// https origin instead: the redirect still works, the policy is only wider for that session.
func origin(raw string) (source, host string) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", ""
	}
	if strings.HasPrefix(u.Host, "[") {
		return "https:", u.Host
	}
	return u.Scheme + "://" + u.Host, u.Hostname()
}
