// Package hosted is verification-svc's hosted page: the page an applicant opens in a browser
// at /verify/<session id>?client_secret=…, through the gateway without an API key (the
// gateway signs it with the hosted-page identity, identity.HostedAccount). The session's
// client secret is the page's only credential. In test mode the applicant chooses how each
// product's check turns out and submits; the session is finished through the application, as
// the test helper moves it, and the applicant is sent to the session's redirect_url. In live
// mode the page says that no verification provider is connected. Every answer is HTML made
// with html/template from embedded files, with no external asset and a strict
// Content-Security-Policy (pages.go); docs/hosted-pages.md describes the page.
package hosted

import (
	"errors"
	"log/slog"
	"strings"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/libs/fiberx"
	"rentalplatform/libs/hostedpage"

	"rentalplatform/verification-svc/internal/app"
	"rentalplatform/verification-svc/internal/domain"
)

// Prefix is the hosted page's path prefix, which the service declares to its HTTP server
// (service.WithHostedPages) and the gateway routes to it without an API key.
const Prefix = "/verify/"

// Path is the page's route.
const Path = Prefix + ":id"

type handlers struct {
	svc   *app.Service
	log   *slog.Logger
	pages *hostedpage.Pages
}

// Register adds the page's routes to r: GET (and HEAD) shows the page, POST submits it.
func Register(r fiber.Router, svc *app.Service, log *slog.Logger) error {
	p, err := loadPages()
	if err != nil {
		return err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := handlers{svc: svc, log: log, pages: p}
	r.Get(Path, h.show)
	r.Post(Path, h.submit)
	return nil
}

// The form's fields.
const (
	fieldSecret = "client_secret"
	fieldAction = "action"
	// outcomes[<product>]: passed, failed or error.
	fieldOutcome = "outcomes"
)

// The choices of a product's radio group, in the order shown. passed and failed are the
// product's result in the report (the session completes); error is the check that could not
// be done (the session fails, last_error naming the product).
var choices = []struct{ value, label, hint string }{
	{string(domain.ResultPassed), "Passes", "The report shows this check as passed."},
	{string(domain.ResultFailed), "Fails", "The report shows this check as failed, with the reason."},
	{choiceError, "Cannot be completed", "The verification fails without a report; its last error names this check."},
}

const choiceError = "error"

// The submit buttons' values.
const (
	actionSubmit  = "submit"
	actionDecline = "decline"
)

// products names and describes each product for the applicant.
var products = map[domain.Product]struct{ name, about string }{
	domain.ProductIdentity:  {"Identity", "confirms that you are who you say you are."},
	domain.ProductIncome:    {"Income", "confirms your income."},
	domain.ProductCredit:    {"Credit", "checks your credit history."},
	domain.ProductCashFlow:  {"Cash flow", "looks at the money going in and out of your bank account."},
	domain.ProductDocuments: {"Documents", "checks the documents you provide."},
}

// show answers GET /verify/:id?client_secret=…: the page, or the one "not found" page for
// every secret that does not open it.
func (h handlers) show(c *fiber.Ctx) error {
	id := strings.Clone(c.Params("id"))
	secret := string(c.Request().URI().QueryArgs().Peek(fieldSecret))
	s, err := h.svc.OpenHostedPage(c.UserContext(), id, secret)
	if err != nil {
		return h.fail(c, err)
	}
	if s.Livemode() {
		return h.live(c, fiber.StatusOK, s)
	}
	return h.form(c, fiber.StatusOK, s, secret, nil, nil)
}

// submit answers POST /verify/:id: the client secret comes from the body (a form post), never
// the query. It is the page's CSRF token too: another site cannot know it.
func (h handlers) submit(c *fiber.Ctx) error {
	id := strings.Clone(c.Params("id"))
	form := c.Request().PostArgs()
	secret := string(form.Peek(fieldSecret))
	s, err := h.svc.OpenHostedPage(c.UserContext(), id, secret)
	if err != nil {
		return h.fail(c, err)
	}
	if s.Livemode() {
		return h.live(c, fiber.StatusConflict, s)
	}

	var a domain.Advance
	if string(form.Peek(fieldAction)) == actionDecline {
		a = domain.Advance{To: domain.StatusFailed, Failure: &domain.FailParams{Code: domain.ErrorConsentDeclined}}
	} else {
		chosen := map[domain.Product]string{}
		var missing []domain.Product
		var errored *domain.Product
		outcomes := map[domain.Product]domain.ResultStatus{}
		for _, p := range s.Products() {
			v := string(form.Peek(fieldOutcome + "[" + string(p) + "]"))
			switch v {
			case string(domain.ResultPassed), string(domain.ResultFailed):
				outcomes[p] = domain.ResultStatus(v)
			case choiceError:
				if errored == nil {
					errored = &p
				}
			default:
				missing = append(missing, p)
				continue
			}
			chosen[p] = v
		}
		if len(missing) > 0 {
			return h.form(c, fiber.StatusUnprocessableEntity, s, secret, chosen, missing)
		}
		a = domain.Advance{To: domain.StatusCompleted, Outcomes: outcomes}
		if errored != nil {
			// The first product that could not be checked (in the session's order) fails it.
			a = domain.Advance{To: domain.StatusFailed, Failure: &domain.FailParams{Product: *errored}}
		}
	}
	done, err := h.svc.FinishHostedPage(c.UserContext(), fiberx.Identity(c), id, secret, a)
	if err != nil {
		return h.fail(c, err)
	}
	if u := done.RedirectURL(); u != "" {
		hostedpage.SetHeaders(c, hostedpage.NoContent)
		c.Set(fiber.HeaderLocation, u)
		return c.SendStatus(fiber.StatusSeeOther)
	}
	return render(c, h.pages, fiber.StatusOK, pageDone, view{TestMode: true, Status: string(done.Status())}, false, "")
}

// form renders the test-mode page, with the choices already made and the products left
// without one (missing) marked as errors.
func (h handlers) form(c *fiber.Ctx, status int, s *domain.Session, secret string, chosen map[domain.Product]string, missing []domain.Product) error {
	v := view{TestMode: true, Action: Prefix + s.ID(), Secret: secret, Expires: expires(s)}
	var formTo string
	if u := s.RedirectURL(); u != "" {
		formTo, v.ReturnHost = origin(u)
	}
	for _, p := range s.Products() {
		info := products[p]
		pv := productView{Product: string(p), ID: "outcome-" + string(p), Name: info.name, Lower: strings.ToLower(info.name), About: info.about}
		for _, ch := range choices {
			pv.Choices = append(pv.Choices, choiceView{
				ID: pv.ID + "-" + ch.value, Field: fieldOutcome + "[" + string(p) + "]", Value: ch.value,
				Label: ch.label, Hint: ch.hint, Checked: chosen[p] == ch.value,
			})
		}
		for _, m := range missing {
			if m == p {
				pv.Error = "Choose how the " + pv.Lower + " check turns out."
				v.Errors = append(v.Errors, fieldError{Target: pv.Choices[0].ID, Message: pv.Error})
			}
		}
		v.Products = append(v.Products, pv)
	}
	return render(c, h.pages, status, pageVerify, v, true, formTo)
}

// live renders the live-mode page: nothing can be done here.
func (h handlers) live(c *fiber.Ctx, status int, s *domain.Session) error {
	v := view{Expires: expires(s)}
	if u := s.RedirectURL(); u != "" {
		v.ReturnURL = u
		_, v.ReturnHost = origin(u)
	}
	return render(c, h.pages, status, pageLive, v, false, "")
}

// fail answers an error of the application: the same "not found" page for every secret that
// does not open the page, the error page (logged) for anything else.
func (h handlers) fail(c *fiber.Ctx, err error) error {
	switch {
	case errors.Is(err, app.ErrHostedPageClosed):
		return render(c, h.pages, fiber.StatusNotFound, pageNotFound, view{}, false, "")
	case errors.Is(err, app.ErrHostedLive):
		// The handler shows a live session its page before submitting; this is only the
		// application's own refusal, said the same way.
		return render(c, h.pages, fiber.StatusConflict, pageLive, view{}, false, "")
	}
	h.log.ErrorContext(c.UserContext(), "hosted page", "error", err.Error(), "request_id", fiberx.RequestID(c), "path", c.Path())
	return render(c, h.pages, fiber.StatusInternalServerError, pageError, view{RequestID: fiberx.RequestID(c)}, false, "")
}

// expires is the session's expires_at as the page says it.
func expires(s *domain.Session) string {
	return s.ExpiresAt().UTC().Format("2 January 2006 at 15:04 UTC")
}
