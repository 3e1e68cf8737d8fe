// Package http is verification-svc's public API — verification sessions, their reports and
// the test helper: Fiber handlers that decode the request, call the application and encode
// the answer. The business rules live in domain and app.
package http

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/libs/fiberx"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/request"
	"rentalplatform/libs/validate"

	"rentalplatform/verification-svc/internal/app"
	"rentalplatform/verification-svc/internal/domain"
)

const (
	basePath    = "/v1/verification_sessions"
	reportsPath = "/v1/verification_reports"
	helperPath  = "/v1/test_helpers/verification_sessions"
)

type handlers struct {
	svc *app.Service
}

// Register adds the routes to r.
func Register(r fiber.Router, svc *app.Service) {
	h := handlers{svc: svc}
	// Lists read their query parameters (refusing the ones they do not take); every other
	// operation takes none, and a request that sends one is refused by name.
	r.Post(basePath, request.NoQuery(h.create))
	r.Get(basePath, h.list)
	r.Get(basePath+"/:id", request.NoQuery(h.get))
	r.Post(basePath+"/:id/cancel", request.NoQuery(h.cancel))
	r.Post(basePath+"/:id/redact", request.NoQuery(h.redact))
	r.Get(reportsPath+"/:id", request.NoQuery(h.report))
	r.Post(helperPath+"/:id/advance", request.NoQuery(h.advance))
}

// createParams is the body of POST /v1/verification_sessions. Pointers tell "absent" from
// "empty".
type createParams struct {
	Applicant   *applicantParams  `json:"applicant"`
	Products    []string          `json:"products"`
	RedirectURL *string           `json:"redirect_url"`
	WebhookURL  *string           `json:"webhook_url"`
	Metadata    map[string]string `json:"metadata"`
}

type applicantParams struct {
	FirstName   *string        `json:"first_name"`
	LastName    *string        `json:"last_name"`
	Email       *string        `json:"email"`
	DateOfBirth *string        `json:"date_of_birth"`
	Phone       *string        `json:"phone"`
	Address     *addressParams `json:"address"`
}

type addressParams struct {
	Line1      *string `json:"line1"`
	Line2      *string `json:"line2"`
	City       *string `json:"city"`
	State      *string `json:"state"`
	PostalCode *string `json:"postal_code"`
	Country    *string `json:"country"`
}

// cancelParams is the body of POST /v1/verification_sessions/:id/cancel.
type cancelParams struct {
	CancellationReason *string `json:"cancellation_reason"`
}

// advanceParams is the body of the test helper.
type advanceParams struct {
	Status    *string           `json:"status"`
	Outcomes  map[string]string `json:"outcomes"`
	LastError *struct {
		Code    *string `json:"code"`
		Product *string `json:"product"`
	} `json:"last_error"`
}

func caller(c *fiber.Ctx) app.Caller { return fiberx.Identity(c) }

// pathID copies the :id parameter out of Fiber's reused request buffer.
func pathID(c *fiber.Ctx) string { return strings.Clone(c.Params("id")) }

func (h handlers) create(c *fiber.Ctx) error {
	var p createParams
	if err := request.DecodeJSON(c, &p); err != nil {
		return err
	}
	in := app.CreateSession{Products: p.Products, RedirectURL: p.RedirectURL, WebhookURL: p.WebhookURL, Metadata: p.Metadata}
	if a := p.Applicant; a != nil {
		in.Applicant = &domain.ApplicantParams{FirstName: a.FirstName, LastName: a.LastName, Email: a.Email,
			DateOfBirth: a.DateOfBirth, Phone: a.Phone}
		if ad := a.Address; ad != nil {
			in.Applicant.Address = &domain.AddressParams{Line1: ad.Line1, Line2: ad.Line2, City: ad.City,
				State: ad.State, PostalCode: ad.PostalCode, Country: ad.Country}
		}
	}
	s, err := h.svc.Create(c.UserContext(), caller(c), in)
	if err != nil {
		return err
	}
	// Rendered anew, not the created event's rendering: the answer shows the secrets.
	return c.JSON(renderSession(s, true))
}

func (h handlers) get(c *fiber.Ctx) error {
	s, err := h.svc.Get(c.UserContext(), caller(c), pathID(c))
	if err != nil {
		return err
	}
	return c.JSON(renderSession(s, true))
}

func (h handlers) list(c *fiber.Ctx) error {
	q, err := request.Query(c)
	if err != nil {
		return err
	}
	p, err := listing.Parse(q, listing.Spec{IDPrefix: ids.VerificationSession, Filters: []string{"status", "applicant_email"}})
	if err != nil {
		return err
	}
	var f domain.Filter
	if v, ok := q["status"]; ok {
		if f.Status, err = domain.ParseStatus("status", v[0]); err != nil {
			return err
		}
	}
	if v, ok := q["applicant_email"]; ok {
		if err := validate.Email("applicant_email", v[0]); err != nil {
			return err
		}
		f.ApplicantEmail = v[0]
	}
	page, hasMore, err := h.svc.List(c.UserContext(), caller(c), f, p)
	if err != nil {
		return err
	}
	data := make([]sessionJSON, len(page))
	for i, s := range page {
		data[i] = renderSession(s, false)
	}
	return c.JSON(listing.New(basePath, caller(c).Livemode, data, hasMore))
}

func (h handlers) cancel(c *fiber.Ctx) error {
	id := pathID(c)
	var p cancelParams
	if err := request.DecodeJSON(c, &p); err != nil {
		return err
	}
	s, err := h.svc.Cancel(c.UserContext(), caller(c), id, p.CancellationReason)
	if err != nil {
		return err
	}
	return fiberx.Object(c, s, SessionObject)
}

func (h handlers) redact(c *fiber.Ctx) error {
	id := pathID(c)
	var p struct{}
	if err := request.DecodeJSON(c, &p); err != nil {
		return err
	}
	s, err := h.svc.Redact(c.UserContext(), caller(c), id)
	if err != nil {
		return err
	}
	return fiberx.Object(c, s, SessionObject)
}

func (h handlers) report(c *fiber.Ctx) error {
	s, err := h.svc.GetReport(c.UserContext(), caller(c), pathID(c))
	if err != nil {
		return err
	}
	return c.JSON(renderReport(s))
}

func (h handlers) advance(c *fiber.Ctx) error {
	id := pathID(c)
	if caller(c).Livemode {
		return app.ErrTestModeOnly
	}
	var p advanceParams
	if err := request.DecodeJSON(c, &p); err != nil {
		return err
	}
	var failure *domain.FailureParams
	if p.LastError != nil {
		failure = &domain.FailureParams{Code: p.LastError.Code, Product: p.LastError.Product}
	}
	a, err := domain.ParseAdvance(p.Status, p.Outcomes, failure)
	if err != nil {
		return err
	}
	s, err := h.svc.Advance(c.UserContext(), caller(c), id, a)
	if err != nil {
		return err
	}
	return fiberx.Object(c, s, SessionObject)
}
