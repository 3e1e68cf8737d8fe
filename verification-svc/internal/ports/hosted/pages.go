package hosted

import (
	"embed"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/libs/hostedpage"
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

// loadPages reads the verification pages (libs/hostedpage).
func loadPages() (*hostedpage.Pages, error) {
	return hostedpage.Load(files, "pages", pageVerify, pageDone, pageLive, pageNotFound, pageError)
}

// view is what a page shows. Fields a page does not use stay zero.
type view struct {
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

// render answers with the page name in the layout. withForm says whether the page has a form,
// and formTo is the origin that form may be sent on to (the session's redirect_url: a
// submission that redirects must be allowed to go there), "" for none.
func render(c *fiber.Ctx, p *hostedpage.Pages, status int, name string, v view, withForm bool, formTo string) error {
	formAction := ""
	if withForm {
		formAction = "'self'"
		if formTo != "" {
			formAction += " " + formTo
		}
	}
	return p.Render(c, status, name, v, formAction)
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
