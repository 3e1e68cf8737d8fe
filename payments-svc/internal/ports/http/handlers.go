// Package http is payments-svc's public API — payment agreements, payment requests and the
// test helper that advances a request's retry: Fiber handlers that decode the request, call
// the application and encode the answer (after a change, the rendering its events made of the
// object: fiberx.Object). Its renderers are also the objects of the events (run.go's emitters). The business rules live in domain and app.
package http

import (
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/fiberx"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/request"

	"rentalplatform/payments-svc/internal/app"
	"rentalplatform/payments-svc/internal/domain"
)

const (
	agreementsPath = "/v1/payment_agreements"
	requestsPath   = "/v1/payment_requests"
	bulkPath       = requestsPath + "/bulk"
	advancePath    = "/v1/test_helpers/payment_requests/:id/advance"
)

type handlers struct{ svc *app.Service }

// Register adds the routes to r.
func Register(r fiber.Router, svc *app.Service) {
	h := handlers{svc: svc}
	// Lists read their query parameters (refusing the ones they do not take); every other
	// operation takes none, and a request that sends one is refused by name.
	r.Post(agreementsPath, request.NoQuery(h.createAgreement))
	r.Get(agreementsPath, h.listAgreements)
	r.Get(agreementsPath+"/:id", request.NoQuery(h.getAgreement))
	r.Post(agreementsPath+"/:id/cancel", request.NoQuery(h.cancelAgreement))
	r.Post(requestsPath, request.NoQuery(h.createRequest))
	r.Post(bulkPath, request.NoQuery(h.createRequests))
	r.Get(requestsPath, h.listRequests)
	r.Get(requestsPath+"/:id", request.NoQuery(h.getRequest))
	r.Post(requestsPath+"/:id/cancel", request.NoQuery(h.cancelRequest))
	r.Post(advancePath, request.NoQuery(h.advanceRequest))
}

// Bodies: pointers tell "absent" from "empty"; unknown parameters are refused by name.
type agreementParams struct {
	Tenant         *tenantParams     `json:"tenant"`
	PaymentMethods []methodParams    `json:"payment_methods"`
	Acceptance     *acceptance       `json:"acceptance"`
	Metadata       map[string]string `json:"metadata"`
}

type tenantParams struct {
	Name  *string `json:"name"`
	Email *string `json:"email"`
}

type methodParams struct {
	Type      *string `json:"type"`
	Token     *string `json:"token"`
	Preferred *bool   `json:"preferred"`
}

type acceptance struct {
	AcceptedAt *int64  `json:"accepted_at"`
	IPAddress  *string `json:"ip_address"`
	UserAgent  *string `json:"user_agent"`
}

type requestParams struct {
	PaymentAgreement *string           `json:"payment_agreement"`
	Amount           *int64            `json:"amount"`
	Currency         *string           `json:"currency"`
	Description      *string           `json:"description"`
	Metadata         map[string]string `json:"metadata"`
}

func (p requestParams) input() app.CreateRequest {
	return app.CreateRequest{Agreement: p.PaymentAgreement, Amount: p.Amount, Currency: p.Currency, Description: p.Description, Metadata: p.Metadata}
}

type bulkParams struct {
	Requests []requestParams `json:"requests"`
}

// noParams is the body of the operations that take none.
type noParams struct{}

func caller(c *fiber.Ctx) app.Caller { return fiberx.Identity(c) }

// pathID copies the :id parameter out of Fiber's reused request buffer.
func pathID(c *fiber.Ctx) string { return strings.Clone(c.Params("id")) }

func (h handlers) createAgreement(c *fiber.Ctx) error {
	var p agreementParams
	if err := request.DecodeJSON(c, &p); err != nil {
		return err
	}
	in := app.CreateAgreement{Metadata: p.Metadata}
	if p.Tenant != nil {
		in.Tenant = &app.TenantInput{Name: p.Tenant.Name, Email: p.Tenant.Email}
	}
	if p.PaymentMethods != nil {
		in.Methods = make([]domain.MethodParams, len(p.PaymentMethods))
		for i, m := range p.PaymentMethods {
			in.Methods[i] = domain.MethodParams{Type: m.Type, Token: m.Token, Preferred: m.Preferred}
		}
	}
	if p.Acceptance != nil {
		in.Acceptance = &domain.AcceptanceParams{AcceptedAt: p.Acceptance.AcceptedAt, IPAddress: p.Acceptance.IPAddress, UserAgent: p.Acceptance.UserAgent}
	}
	a, err := h.svc.CreateAgreement(c.UserContext(), caller(c), in)
	if err != nil {
		return err
	}
	return fiberx.Object(c, a, renderAgreement)
}

func (h handlers) getAgreement(c *fiber.Ctx) error {
	a, err := h.svc.GetAgreement(c.UserContext(), caller(c), pathID(c))
	if err != nil {
		return err
	}
	return c.JSON(renderAgreement(a))
}

func (h handlers) cancelAgreement(c *fiber.Ctx) error {
	id := pathID(c)
	if err := request.DecodeJSON(c, &noParams{}); err != nil {
		return err
	}
	a, err := h.svc.CancelAgreement(c.UserContext(), caller(c), id)
	if err != nil {
		return err
	}
	return fiberx.Object(c, a, renderAgreement)
}

func (h handlers) listAgreements(c *fiber.Ctx) error {
	q, err := request.Query(c)
	if err != nil {
		return err
	}
	p, err := listing.Parse(q, listing.Spec{IDPrefix: ids.PaymentAgreement, Created: true, Filters: []string{"status"}})
	if err != nil {
		return err
	}
	var f domain.AgreementFilter
	if v, ok := q["status"]; ok {
		s := domain.AgreementStatus(v[0])
		if s != domain.AgreementActive && s != domain.AgreementCancelled {
			return domainerr.InvalidParam("status", "Invalid status: must be 'active' or 'cancelled', got '%s'.", v[0])
		}
		f.Status = s
	}
	page, hasMore, err := h.svc.ListAgreements(c.UserContext(), caller(c), f, p)
	if err != nil {
		return err
	}
	data := make([]agreementJSON, len(page))
	for i, a := range page {
		data[i] = renderAgreement(a)
	}
	return c.JSON(listing.New(agreementsPath, caller(c).Livemode, data, hasMore))
}

func (h handlers) createRequest(c *fiber.Ctx) error {
	var p requestParams
	if err := request.DecodeJSON(c, &p); err != nil {
		return err
	}
	r, err := h.svc.CreateRequest(c.UserContext(), caller(c), p.input())
	if err != nil {
		return err
	}
	return fiberx.Object(c, r, renderRequest)
}

// bulkJSON is the answer of a bulk create: a List object (spec §4.3: object, data,
// total_created) whose page is always whole: has_more is false.
type bulkJSON struct {
	Object       string        `json:"object"`
	Data         []requestJSON `json:"data"`
	HasMore      bool          `json:"has_more"`
	TotalCreated int           `json:"total_created"`
	URL          string        `json:"url"`
	Livemode     bool          `json:"livemode"`
}

func (h handlers) createRequests(c *fiber.Ctx) error {
	var p bulkParams
	if err := request.DecodeJSON(c, &p); err != nil {
		return err
	}
	var in []app.CreateRequest
	if p.Requests != nil {
		in = make([]app.CreateRequest, len(p.Requests))
		for i, r := range p.Requests {
			in[i] = r.input()
		}
	}
	rs, err := h.svc.CreateRequests(c.UserContext(), caller(c), in)
	if err != nil {
		return err
	}
	out := bulkJSON{Object: "list", Data: make([]requestJSON, len(rs)), TotalCreated: len(rs), URL: bulkPath, Livemode: caller(c).Livemode}
	for i, r := range rs {
		out.Data[i] = renderRequest(r)
	}
	return c.JSON(out)
}

func (h handlers) getRequest(c *fiber.Ctx) error {
	r, err := h.svc.GetRequest(c.UserContext(), caller(c), pathID(c))
	if err != nil {
		return err
	}
	return c.JSON(renderRequest(r))
}

func (h handlers) cancelRequest(c *fiber.Ctx) error {
	id := pathID(c)
	if err := request.DecodeJSON(c, &noParams{}); err != nil {
		return err
	}
	r, err := h.svc.CancelRequest(c.UserContext(), caller(c), id)
	if err != nil {
		return err
	}
	return fiberx.Object(c, r, renderRequest)
}

func (h handlers) advanceRequest(c *fiber.Ctx) error {
	id := pathID(c)
	if err := request.DecodeJSON(c, &noParams{}); err != nil {
		return err
	}
	r, err := h.svc.AdvanceRequest(c.UserContext(), caller(c), id)
	if err != nil {
		return err
	}
	return fiberx.Object(c, r, renderRequest)
}

func (h handlers) listRequests(c *fiber.Ctx) error {
	q, err := request.Query(c)
	if err != nil {
		return err
	}
	p, err := listing.Parse(q, listing.Spec{IDPrefix: ids.PaymentRequest, Created: true, Filters: []string{"payment_agreement", "status"}})
	if err != nil {
		return err
	}
	var f domain.RequestFilter
	if v, ok := q["payment_agreement"]; ok {
		if !ids.Valid(ids.PaymentAgreement, v[0]) {
			return domainerr.InvalidParam("payment_agreement", "Invalid payment_agreement: expected a payment agreement id (pa_…), got '%s'.", v[0])
		}
		f.Agreement = v[0]
	}
	if v, ok := q["status"]; ok {
		if !slices.Contains(domain.Statuses, domain.Status(v[0])) {
			return domainerr.InvalidParam("status", "Invalid status: must be one of pending, processing, succeeded, failed, cancelled; got '%s'.", v[0])
		}
		f.Status = domain.Status(v[0])
	}
	page, hasMore, err := h.svc.ListRequests(c.UserContext(), caller(c), f, p)
	if err != nil {
		return err
	}
	data := make([]requestJSON, len(page))
	for i, r := range page {
		data[i] = renderRequest(r)
	}
	return c.JSON(listing.New(requestsPath, caller(c).Livemode, data, hasMore))
}
