// Package domain holds collections' aggregate, the collection case (a debt submitted for
// recovery, its lifecycle and the debt payments that lower what is left to recover), and the
// records of the files attached to a case, with the rules of what a file may contain. It
// imports no framework.
package domain

import (
	"maps"
	"slices"
	"strings"
	"time"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtype"
	"rentalplatform/libs/validate"
)

// Limits on what a client may store on a case.
const (
	// MaxAmount bounds amount_to_recover (and so every payment): 12 digits of the smallest
	// unit is beyond any rent debt and far inside int64 and JSON's exact integers.
	MaxAmount           int64 = 999_999_999_999
	MaxNameLen                = 200
	MaxLine1Len               = 200
	MaxCityLen                = 100
	MaxPostalCodeLen          = 20
	MaxReferenceLen           = 100 // creditor_reference and a payment's reference
	MaxPayments               = 1000
	earliestDate              = "1900-01-01"
	futureDateTolerance       = 24 * time.Hour // a date "today" somewhere east of UTC
)

// Status is where a case is in its lifecycle.
type Status string

// Statuses. A case is created active; pending_verification and needs_details are reserved for
// the collection partner's review, which no API move enters yet.
const (
	StatusPendingVerification Status = "pending_verification"
	StatusNeedsDetails        Status = "needs_details"
	StatusActive              Status = "active"
	StatusPaused              Status = "paused"
	StatusClosed              Status = "closed"
)

// Statuses lists every status, in lifecycle order.
var Statuses = []Status{StatusPendingVerification, StatusNeedsDetails, StatusActive, StatusPaused, StatusClosed}

// CloseCode says why a case was closed.
type CloseCode string

// Close codes.
const (
	ClosePaidInFull    CloseCode = "paid_in_full"
	CloseSettled       CloseCode = "settled"
	CloseUncollectible CloseCode = "uncollectible"
	CloseWithdrawn     CloseCode = "withdrawn"
	CloseDisputed      CloseCode = "disputed"
	CloseDuplicate     CloseCode = "duplicate"
)

// CloseCodes lists every close code.
var CloseCodes = []CloseCode{ClosePaidInFull, CloseSettled, CloseUncollectible, CloseWithdrawn, CloseDisputed, CloseDuplicate}

// DebtorType is a company or a private person.
type DebtorType string

// Debtor types.
const (
	DebtorCompany DebtorType = "company"
	DebtorPrivate DebtorType = "private"
)

// DebtorTypes lists every debtor type.
var DebtorTypes = []DebtorType{DebtorCompany, DebtorPrivate}

// Address is a postal address.
type Address struct {
	Line1, City, PostalCode, Country string
}

// Debtor is who owes the debt. ContactPerson is shown (spec §2.2) but not taken on create, so
// it is empty until the partner supplies one.
type Debtor struct {
	Type          DebtorType
	Name          string
	ContactPerson string
	Email         string // "" when not given
	Phone         string // "" when not given
	Address       Address
	Country       string
}

// Partner is the collection partner a case is submitted to (from configuration).
type Partner struct {
	Name, Email, Phone, Site string
}

// Payment is one debt payment recorded against a case.
type Payment struct {
	ID        string
	Amount    int64
	PaidAt    time.Time // a date: midnight UTC
	Reference string    // "" when not given
	Created   time.Time
	// Key is the Idempotency-Key of the request that recorded it ("" without one): a retry of
	// that request finds the payment recorded instead of recording another. Not shown.
	Key string
}

// Case is a debt submitted for recovery.
type Case struct {
	id                string
	account           string
	livemode          bool
	reference         string
	status            Status
	closeCode         CloseCode
	amountToRecover   int64
	remainder         int64
	currency          string
	debtor            Debtor
	partner           Partner
	creditorReference string
	dueDate           time.Time
	metadata          map[string]string
	created           time.Time
	payments          []Payment

	// Recorder keeps the events the case's changes raised until the store renders them.
	events.Recorder
}

// DebtorParams is the debtor as the client gives it; nil: not sent.
type DebtorParams struct {
	Type    *string
	Name    *string
	Email   *string
	Phone   *string
	Address *AddressParams
	Country *string
}

// AddressParams is the address as the client gives it.
type AddressParams struct {
	Line1, City, PostalCode, Country *string
}

// NewCaseParams is everything needed to create a case.
type NewCaseParams struct {
	ID        string
	Account   string
	Livemode  bool
	Reference string
	Partner   Partner
	Created   time.Time

	AmountToRecover   *int64
	Currency          *string
	Debtor            *DebtorParams
	DueDate           *string
	CreditorReference *string
	Metadata          map[string]string
}

// NewCase validates p and returns an active case whose remainder is the whole amount. Every
// error names the dotted parameter at fault.
func NewCase(p NewCaseParams) (*Case, error) {
	if p.AmountToRecover == nil {
		return nil, domainerr.Missing("amount_to_recover")
	}
	if err := checkAmount("amount_to_recover", *p.AmountToRecover); err != nil {
		return nil, err
	}
	if p.Currency == nil {
		return nil, domainerr.Missing("currency")
	}
	currency, err := validate.Currency("currency", *p.Currency)
	if err != nil {
		return nil, err
	}
	debtor, err := newDebtor(p.Debtor)
	if err != nil {
		return nil, err
	}
	if p.DueDate == nil {
		return nil, domainerr.Missing("due_date")
	}
	due, err := pastDate("due_date", *p.DueDate, p.Created)
	if err != nil {
		return nil, err
	}
	var creditorRef string
	if p.CreditorReference != nil {
		if creditorRef, err = CallerReference("creditor_reference", *p.CreditorReference); err != nil {
			return nil, err
		}
	}
	md, err := validate.NewMetadata("metadata", p.Metadata)
	if err != nil {
		return nil, err
	}
	c := &Case{
		id: p.ID, account: p.Account, livemode: p.Livemode, reference: p.Reference,
		status: StatusActive, amountToRecover: *p.AmountToRecover, remainder: *p.AmountToRecover,
		currency: currency, debtor: debtor, partner: p.Partner, creditorReference: creditorRef,
		dueDate: due, metadata: md, created: p.Created.UTC().Truncate(time.Second),
	}
	c.Raise(eventtype.CollectionCaseCreated)
	return c, nil
}

func checkAmount(param string, n int64) error {
	if n <= 0 || n > MaxAmount {
		return invalid(param, "Invalid %s: must be a positive integer in the currency's smallest unit, at most %d; got %d.", param, MaxAmount, n)
	}
	return nil
}

func newDebtor(p *DebtorParams) (Debtor, error) {
	if p == nil {
		return Debtor{}, domainerr.Missing("debtor")
	}
	if p.Type == nil {
		return Debtor{}, domainerr.Missing("debtor.type")
	}
	if !slices.Contains(DebtorTypes, DebtorType(*p.Type)) {
		return Debtor{}, invalid("debtor.type", "Invalid debtor.type: must be 'company' or 'private', got '%s'.", validate.Shown(*p.Type))
	}
	d := Debtor{Type: DebtorType(*p.Type)}
	var err error
	if d.Name, err = text("debtor.name", p.Name, MaxNameLen); err != nil {
		return Debtor{}, err
	}
	if p.Email != nil {
		if err := validate.Email("debtor.email", *p.Email); err != nil {
			return Debtor{}, err
		}
		d.Email = *p.Email
	}
	if p.Phone != nil {
		if err := validate.Phone("debtor.phone", *p.Phone); err != nil {
			return Debtor{}, err
		}
		d.Phone = *p.Phone
	}
	if p.Address == nil {
		return Debtor{}, domainerr.Missing("debtor.address")
	}
	a := p.Address
	if d.Address.Line1, err = text("debtor.address.line1", a.Line1, MaxLine1Len); err != nil {
		return Debtor{}, err
	}
	if d.Address.City, err = text("debtor.address.city", a.City, MaxCityLen); err != nil {
		return Debtor{}, err
	}
	if d.Address.PostalCode, err = text("debtor.address.postal_code", a.PostalCode, MaxPostalCodeLen); err != nil {
		return Debtor{}, err
	}
	if a.Country == nil {
		return Debtor{}, domainerr.Missing("debtor.address.country")
	}
	if d.Address.Country, err = validate.Country("debtor.address.country", *a.Country); err != nil {
		return Debtor{}, err
	}
	if p.Country == nil {
		return Debtor{}, domainerr.Missing("debtor.country")
	}
	if d.Country, err = validate.Country("debtor.country", *p.Country); err != nil {
		return Debtor{}, err
	}
	return d, nil
}

// text checks a required single-line free-text field: trimmed, not blank, and then
// validate.Text's rules with max characters.
func text(param string, s *string, max int) (string, error) {
	if s == nil {
		return "", domainerr.Missing(param)
	}
	v := validate.TrimSpace(*s, false)
	if v == "" {
		return "", invalid(param, "Invalid %s: must not be empty or blank.", param)
	}
	if err := validate.Text(param, v, max, false); err != nil {
		return "", err
	}
	return v, nil
}

// CallerReference checks a reference the caller keeps (a creditor_reference, a debt payment's
// reference), as given or as a list filter: trimmed, 1 to MaxReferenceLen characters, no
// control characters.
func CallerReference(param, s string) (string, error) { return text(param, &s, MaxReferenceLen) }

// pastDate reads a YYYY-MM-DD date that has happened by now (a day's grace for time zones
// ahead of UTC), no earlier than 1900: a due date or the day a debtor paid.
func pastDate(param, s string, now time.Time) (time.Time, error) {
	d, err := validate.Date(param, s)
	if err != nil {
		return time.Time{}, err
	}
	if d.After(now.Add(futureDateTolerance)) {
		return time.Time{}, invalid(param, "Invalid %s: '%s' is in the future.", param, s)
	}
	if s < earliestDate {
		return time.Time{}, invalid(param, "Invalid %s: '%s' is before %s.", param, s, earliestDate)
	}
	return d, nil
}

// Pause stops collection activity: active → paused.
func (c *Case) Pause() error {
	if c.status != StatusActive {
		return domainerr.InvalidState("Only an active collection case can be paused; this one is %s.", c.status)
	}
	c.status = StatusPaused
	c.RaiseUpdate(eventtype.CollectionCaseUpdated)
	return nil
}

// Resume restarts collection activity: paused → active.
func (c *Case) Resume() error {
	if c.status != StatusPaused {
		return domainerr.InvalidState("Only a paused collection case can be resumed; this one is %s.", c.status)
	}
	c.status = StatusActive
	c.RaiseUpdate(eventtype.CollectionCaseUpdated)
	return nil
}

// ParseCloseCode checks a close_code parameter.
func ParseCloseCode(param string, s *string) (CloseCode, error) {
	if s == nil {
		return "", domainerr.Missing(param)
	}
	if !slices.Contains(CloseCodes, CloseCode(*s)) {
		return "", invalid(param, "Invalid %s: must be one of %s; got '%s'.", param, joinCodes(), validate.Shown(*s))
	}
	return CloseCode(*s), nil
}

func joinCodes() string {
	s := make([]string, len(CloseCodes))
	for i, c := range CloseCodes {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// Close ends the case with a resolution: active or paused → closed.
func (c *Case) Close(code CloseCode) error {
	if c.status != StatusActive && c.status != StatusPaused {
		return domainerr.InvalidState("Only an active or paused collection case can be closed; this one is %s.", c.status)
	}
	c.status = StatusClosed
	c.closeCode = code
	c.RaiseUpdate(eventtype.CollectionCaseUpdated)
	c.Raise(eventtype.CollectionCaseClosed)
	return nil
}

// PaymentParams is a debt payment as the client gives it; nil: not sent.
type PaymentParams struct {
	ID        string // assigned by the application
	Key       string // the request's Idempotency-Key, "" without one
	Created   time.Time
	Amount    *int64
	PaidAt    *string
	Reference *string
}

// RecordPayment records a payment the debtor made and lowers the remainder by it; a payment
// that clears the remainder closes the case as paid_in_full. A payment above the remainder is
// refused, and so is any payment once the case is closed or before it is active.
//
// A payment recorded before under the same Idempotency-Key is answered as it is, recording
// nothing and raising nothing, whatever the case's state since (the first may have closed it):
// a request retried after an answer that was lost (a 502 or 504) records its payment once.
func (c *Case) RecordPayment(p PaymentParams) (Payment, error) {
	if p.Key != "" {
		for _, pay := range c.payments {
			if pay.Key == p.Key {
				return pay, nil
			}
		}
	}
	if c.status != StatusActive && c.status != StatusPaused {
		return Payment{}, domainerr.InvalidState("Payments can only be recorded on an active or paused collection case; this one is %s.", c.status)
	}
	if p.Amount == nil {
		return Payment{}, domainerr.Missing("amount")
	}
	if err := checkAmount("amount", *p.Amount); err != nil {
		return Payment{}, err
	}
	if *p.Amount > c.remainder {
		return Payment{}, domainerr.New(domainerr.Invalid, CodePaymentTooLarge, "amount",
			"Invalid amount: %d is more than the case's remainder, %d.", *p.Amount, c.remainder)
	}
	if p.PaidAt == nil {
		return Payment{}, domainerr.Missing("paid_at")
	}
	paidAt, err := pastDate("paid_at", *p.PaidAt, p.Created)
	if err != nil {
		return Payment{}, err
	}
	pay := Payment{ID: p.ID, Amount: *p.Amount, PaidAt: paidAt, Created: p.Created.UTC().Truncate(time.Second), Key: p.Key}
	if p.Reference != nil {
		if pay.Reference, err = CallerReference("reference", *p.Reference); err != nil {
			return Payment{}, err
		}
	}
	if len(c.payments) >= MaxPayments {
		return Payment{}, domainerr.New(domainerr.Invalid, CodePaymentLimit, "",
			"This collection case holds %d payments, the most one case records.", MaxPayments)
	}
	c.payments = append(c.payments, pay)
	c.remainder -= pay.Amount
	c.RaisePart(eventtype.DebtPaymentCreated, pay)
	c.RaiseUpdate(eventtype.CollectionCaseUpdated)
	if c.remainder == 0 {
		c.status = StatusClosed
		c.closeCode = ClosePaidInFull
		c.Raise(eventtype.CollectionCaseClosed)
	}
	return pay, nil
}

// Owned reports whether the case belongs to the account in the mode.
func (c *Case) Owned(account string, livemode bool) bool {
	return c.account == account && c.livemode == livemode
}

// Accessors.
func (c *Case) ID() string                  { return c.id }
func (c *Case) Account() string             { return c.account }
func (c *Case) Livemode() bool              { return c.livemode }
func (c *Case) Reference() string           { return c.reference }
func (c *Case) Status() Status              { return c.status }
func (c *Case) CloseCode() CloseCode        { return c.closeCode }
func (c *Case) AmountToRecover() int64      { return c.amountToRecover }
func (c *Case) Remainder() int64            { return c.remainder }
func (c *Case) Currency() string            { return c.currency }
func (c *Case) Debtor() Debtor              { return c.debtor }
func (c *Case) Partner() Partner            { return c.partner }
func (c *Case) CreditorReference() string   { return c.creditorReference }
func (c *Case) DueDate() time.Time          { return c.dueDate }
func (c *Case) Metadata() map[string]string { return maps.Clone(c.metadata) }
func (c *Case) Created() time.Time          { return c.created }
func (c *Case) Payments() []Payment         { return slices.Clone(c.payments) }

// CaseState is every field of a case, for the repository.
type CaseState struct {
	ID                string
	Account           string
	Livemode          bool
	Reference         string
	Status            Status
	CloseCode         CloseCode
	AmountToRecover   int64
	Remainder         int64
	Currency          string
	Debtor            Debtor
	Partner           Partner
	CreditorReference string
	DueDate           time.Time
	Metadata          map[string]string
	Created           time.Time
	Payments          []Payment
}

// State returns the case's fields.
func (c *Case) State() CaseState {
	return CaseState{
		ID: c.id, Account: c.account, Livemode: c.livemode, Reference: c.reference, Status: c.status,
		CloseCode: c.closeCode, AmountToRecover: c.amountToRecover, Remainder: c.remainder, Currency: c.currency,
		Debtor: c.debtor, Partner: c.partner, CreditorReference: c.creditorReference, DueDate: c.dueDate,
		Metadata: maps.Clone(c.metadata), Created: c.created, Payments: slices.Clone(c.payments),
	}
}

// RehydrateCase rebuilds a stored case; it is not a constructor and checks nothing.
func RehydrateCase(s CaseState) *Case {
	return &Case{
		id: s.ID, account: s.Account, livemode: s.Livemode, reference: s.Reference, status: s.Status,
		closeCode: s.CloseCode, amountToRecover: s.AmountToRecover, remainder: s.Remainder, currency: s.Currency,
		debtor: s.Debtor, partner: s.Partner, creditorReference: s.CreditorReference, dueDate: s.DueDate.UTC(),
		metadata: s.Metadata, created: s.Created.UTC(), payments: s.Payments,
	}
}
