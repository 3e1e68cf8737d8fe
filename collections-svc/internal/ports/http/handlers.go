// Package http is collections-svc's public API — collection cases, their lifecycle, debt
// payments and files: Fiber handlers that decode the request, call the application and encode
// the answer. The business rules live in domain and app.
package http

import (
	"context"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/fiberx"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/request"
	"rentalplatform/libs/validate"

	"rentalplatform/collections-svc/internal/app"
	"rentalplatform/collections-svc/internal/domain"
)

const casesPath = "/v1/collection_cases"

type handlers struct{ svc *app.Service }

// Register adds the routes to r.
func Register(r fiber.Router, svc *app.Service) {
	h := handlers{svc: svc}
	// Lists read their query parameters (refusing the ones they do not take); every other
	// operation takes none, and a request that sends one is refused by name.
	r.Post(casesPath, request.NoQuery(h.createCase))
	r.Get(casesPath, h.listCases)
	r.Get(casesPath+"/ref/:reference", request.NoQuery(h.getCaseByReference))
	r.Get(casesPath+"/:id", request.NoQuery(h.getCase))
	r.Post(casesPath+"/:id/pause", request.NoQuery(lifecycle(svc.PauseCase)))
	r.Post(casesPath+"/:id/resume", request.NoQuery(lifecycle(svc.ResumeCase)))
	r.Post(casesPath+"/:id/close", request.NoQuery(h.closeCase))
	r.Post(casesPath+"/:id/payments", request.NoQuery(h.recordPayment))
	r.Get(casesPath+"/:id/payments", h.listPayments)
	r.Post(casesPath+"/:id/files", h.uploadFile) // refuses a query itself, after reading the upload to its end
	r.Get(casesPath+"/:id/files", h.listFiles)
	r.Get(casesPath+"/:id/files/:file_id/content", request.NoQuery(h.fileContent))
}

// IsUpload tells the runtime which requests get their body as a stream (the file upload);
// every other body is read whole under the JSON limit.
func IsUpload(c *fiber.Ctx) bool {
	if c.Method() != fiber.MethodPost {
		return false
	}
	rest, ok := strings.CutPrefix(c.Path(), casesPath+"/")
	if !ok {
		return false
	}
	id, tail, _ := strings.Cut(rest, "/")
	return id != "" && tail == "files"
}

// Bodies: pointers tell "absent" from "empty"; unknown parameters are refused by name (so
// debtor.contact_person, shown on the object, is refused on create).
type caseParams struct {
	AmountToRecover   *int64            `json:"amount_to_recover"`
	Currency          *string           `json:"currency"`
	Debtor            *debtorParams     `json:"debtor"`
	DueDate           *string           `json:"due_date"`
	CreditorReference *string           `json:"creditor_reference"`
	Metadata          map[string]string `json:"metadata"`
}

type debtorParams struct {
	Type    *string        `json:"type"`
	Name    *string        `json:"name"`
	Email   *string        `json:"email"`
	Phone   *string        `json:"phone"`
	Address *addressParams `json:"address"`
	Country *string        `json:"country"`
}

type addressParams struct {
	Line1      *string `json:"line1"`
	City       *string `json:"city"`
	PostalCode *string `json:"postal_code"`
	Country    *string `json:"country"`
}

type closeParams struct {
	CloseCode *string `json:"close_code"`
}

type paymentParams struct {
	Amount    *int64  `json:"amount"`
	PaidAt    *string `json:"paid_at"`
	Reference *string `json:"reference"`
}

// noParams is the body of the operations that take none.
type noParams struct{}

func caller(c *fiber.Ctx) app.Caller { return fiberx.Identity(c) }

// param copies a path parameter out of Fiber's reused request buffer.
func param(c *fiber.Ctx, name string) string { return strings.Clone(c.Params(name)) }

func (h handlers) createCase(c *fiber.Ctx) error {
	var p caseParams
	if err := request.DecodeJSON(c, &p); err != nil {
		return err
	}
	in := app.CreateCase{AmountToRecover: p.AmountToRecover, Currency: p.Currency, DueDate: p.DueDate,
		CreditorReference: p.CreditorReference, Metadata: p.Metadata}
	if d := p.Debtor; d != nil {
		in.Debtor = &domain.DebtorParams{Type: d.Type, Name: d.Name, Email: d.Email, Phone: d.Phone, Country: d.Country}
		if a := d.Address; a != nil {
			in.Debtor.Address = &domain.AddressParams{Line1: a.Line1, City: a.City, PostalCode: a.PostalCode, Country: a.Country}
		}
	}
	cs, err := h.svc.CreateCase(c.UserContext(), caller(c), in)
	if err != nil {
		return err
	}
	return fiberx.Object(c, cs, renderCase)
}

func (h handlers) getCase(c *fiber.Ctx) error {
	cs, err := h.svc.GetCase(c.UserContext(), caller(c), param(c, "id"))
	if err != nil {
		return err
	}
	return c.JSON(renderCase(cs))
}

func (h handlers) getCaseByReference(c *fiber.Ctx) error {
	cs, err := h.svc.GetCaseByReference(c.UserContext(), caller(c), param(c, "reference"))
	if err != nil {
		return err
	}
	return c.JSON(renderCase(cs))
}

// lifecycle answers a move that takes no parameters (pause, resume).
func lifecycle(move func(context.Context, app.Caller, string) (*domain.Case, error)) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id := param(c, "id")
		if err := request.DecodeJSON(c, &noParams{}); err != nil {
			return err
		}
		cs, err := move(c.UserContext(), caller(c), id)
		if err != nil {
			return err
		}
		return fiberx.Object(c, cs, renderCase)
	}
}

func (h handlers) closeCase(c *fiber.Ctx) error {
	id := param(c, "id")
	var p closeParams
	if err := request.DecodeJSON(c, &p); err != nil {
		return err
	}
	cs, err := h.svc.CloseCase(c.UserContext(), caller(c), id, p.CloseCode)
	if err != nil {
		return err
	}
	return fiberx.Object(c, cs, renderCase)
}

func (h handlers) recordPayment(c *fiber.Ctx) error {
	id := param(c, "id")
	var p paymentParams
	if err := request.DecodeJSON(c, &p); err != nil {
		return err
	}
	pay, cs, err := h.svc.RecordPayment(c.UserContext(), caller(c), id, app.RecordPayment{Amount: p.Amount, PaidAt: p.PaidAt, Reference: p.Reference})
	if err != nil {
		return err
	}
	return c.JSON(renderPayment(cs, pay))
}

func (h handlers) listPayments(c *fiber.Ctx) error {
	id := param(c, "id")
	q, err := request.Query(c)
	if err != nil {
		return err
	}
	p, err := listing.Parse(q, listing.Spec{IDPrefix: ids.DebtPayment, Created: true})
	if err != nil {
		return err
	}
	page, hasMore, cs, err := h.svc.ListPayments(c.UserContext(), caller(c), id, p)
	if err != nil {
		return err
	}
	data := make([]paymentJSON, len(page))
	for i, pay := range page {
		data[i] = renderPayment(cs, pay)
	}
	return c.JSON(listing.New(casesPath+"/"+id+"/payments", caller(c).Livemode, data, hasMore))
}

// caseFilters are the list's own query parameters.
var caseFilters = []string{"status", "debtor_country", "debtor_type", "creditor_reference"}

func (h handlers) listCases(c *fiber.Ctx) error {
	q, err := request.Query(c)
	if err != nil {
		return err
	}
	p, err := listing.Parse(q, listing.Spec{IDPrefix: ids.CollectionCase, Created: true, Filters: caseFilters})
	if err != nil {
		return err
	}
	f, err := parseCaseFilter(q.Get)
	if err != nil {
		return err
	}
	page, hasMore, err := h.svc.ListCases(c.UserContext(), caller(c), f, p)
	if err != nil {
		return err
	}
	data := make([]caseJSON, len(page))
	for i, cs := range page {
		data[i] = renderCase(cs)
	}
	return c.JSON(listing.New(casesPath, caller(c).Livemode, data, hasMore))
}

// parseCaseFilter reads the list filters; get returns "" for a parameter not given (listing.Parse
// has refused empty and repeated ones).
func parseCaseFilter(get func(string) string) (domain.CaseFilter, error) {
	var f domain.CaseFilter
	if v := get("status"); v != "" {
		if !slices.Contains(domain.Statuses, domain.Status(v)) {
			return f, domainerr.InvalidParam("status", "Invalid status: must be one of pending_verification, needs_details, active, paused, closed; got '%s'.", validate.Shown(v))
		}
		f.Status = domain.Status(v)
	}
	if v := get("debtor_country"); v != "" {
		country, err := validate.Country("debtor_country", v)
		if err != nil {
			return f, err
		}
		f.DebtorCountry = country
	}
	if v := get("debtor_type"); v != "" {
		if !slices.Contains(domain.DebtorTypes, domain.DebtorType(v)) {
			return f, domainerr.InvalidParam("debtor_type", "Invalid debtor_type: must be 'company' or 'private', got '%s'.", validate.Shown(v))
		}
		f.DebtorType = domain.DebtorType(v)
	}
	if v := get("creditor_reference"); v != "" {
		// Checked and trimmed as it is stored (domain.NewCase): a blank value is refused
		// rather than read as no filter.
		ref, err := domain.CallerReference("creditor_reference", v)
		if err != nil {
			return f, err
		}
		f.CreditorReference = ref
	}
	return f, nil
}
