// Package domain holds payments' aggregates and their rules: payment agreements (a tenant's
// payment methods, in the order they are charged) and payment requests (one amount collected
// against an agreement, with the attempt state machine and retry schedule of the collection
// engine). It imports no framework.
package domain

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtype"
	"rentalplatform/libs/validate"
)

// Limits on what a client may store on an agreement.
const (
	MinMethods        = 1
	MaxMethods        = 5
	MaxNameLen        = 200
	MaxTokenLen       = 255
	MaxUserAgentLen   = 1000
	AcceptanceMaxSkew = 5 * time.Minute // accepted_at may be this far in the future (clock skew)
)

// AgreementStatus says whether requests may be made against an agreement.
type AgreementStatus string

// Agreement statuses.
const (
	AgreementActive    AgreementStatus = "active"
	AgreementCancelled AgreementStatus = "cancelled"
)

// MethodType is the kind of a payment method.
type MethodType string

// Method types.
const (
	MethodCard         MethodType = "card"
	MethodSEPADebit    MethodType = "sepa_debit"
	MethodBACSDebit    MethodType = "bacs_debit"
	MethodACHDebit     MethodType = "ach_debit"
	MethodBankTransfer MethodType = "bank_transfer"
)

// MethodTypes lists the types a method may have.
var MethodTypes = []MethodType{MethodCard, MethodSEPADebit, MethodBACSDebit, MethodACHDebit, MethodBankTransfer}

// MethodStatus says whether a method is still charged.
type MethodStatus string

// Method statuses: a method fails for good after a hard decline, and later attempts skip it.
const (
	MethodActive MethodStatus = "active"
	MethodFailed MethodStatus = "failed"
)

// Method is one payment method of an agreement.
type Method struct {
	ID        string
	Type      MethodType
	Token     string // the processor's token; never shown whole
	Preferred bool
	Status    MethodStatus
	// FailureCode is the processor's code of the decline that failed the method.
	FailureCode string
}

// Last4 is what the API shows of the token.
func (m Method) Last4() string {
	if len(m.Token) <= 4 {
		return m.Token
	}
	return m.Token[len(m.Token)-4:]
}

// Tenant is who pays.
type Tenant struct {
	Name  string
	Email string
}

// Acceptance is the evidence that the tenant accepted the agreement, as a mandate carries it.
type Acceptance struct {
	AcceptedAt time.Time
	IPAddress  string // "" when not given
	UserAgent  string // "" when not given
}

// Agreement is a tenant's standing permission to be charged, with the methods to charge in
// order: the preferred one first, then the others in the order given.
type Agreement struct {
	id          string
	account     string
	livemode    bool
	status      AgreementStatus
	tenant      Tenant
	methods     []Method
	acceptance  *Acceptance
	metadata    map[string]string
	created     time.Time
	cancelledAt time.Time
	// cascading: the agreement was cancelled and its open requests may not all be cancelled
	// yet; the engine finishes the job (a crash between the two writes only delays it).
	cascading bool

	// Recorder keeps the events the agreement's changes raised until the store renders them.
	events.Recorder
}

// MethodParams is one method as the client gives it.
type MethodParams struct {
	ID        string // assigned by the application
	Type      *string
	Token     *string
	Preferred *bool
}

// AcceptanceParams is the acceptance evidence as the client gives it.
type AcceptanceParams struct {
	AcceptedAt *int64
	IPAddress  *string
	UserAgent  *string
}

// NewAgreementParams is everything needed to create an agreement.
type NewAgreementParams struct {
	ID       string
	Account  string
	Livemode bool
	Created  time.Time

	TenantGiven bool
	TenantName  *string
	TenantEmail *string
	// Methods: nil when not sent.
	Methods    []MethodParams
	Acceptance *AcceptanceParams
	Metadata   map[string]string
}

// NewAgreement validates p and returns an active agreement (payment_agreement.created).
func NewAgreement(p NewAgreementParams) (*Agreement, error) {
	tenant, err := newTenant(p)
	if err != nil {
		return nil, err
	}
	methods, err := newMethods(p.Methods)
	if err != nil {
		return nil, err
	}
	var acc *Acceptance
	if p.Acceptance != nil {
		if acc, err = newAcceptance(*p.Acceptance, p.Created); err != nil {
			return nil, err
		}
	}
	md, err := validate.NewMetadata("metadata", p.Metadata)
	if err != nil {
		return nil, err
	}
	a := &Agreement{
		id: p.ID, account: p.Account, livemode: p.Livemode, status: AgreementActive,
		tenant: tenant, methods: methods, acceptance: acc, metadata: md,
		created: p.Created.UTC().Truncate(time.Second),
	}
	a.Raise(eventtype.PaymentAgreementCreated)
	return a, nil
}

func newTenant(p NewAgreementParams) (Tenant, error) {
	if !p.TenantGiven {
		return Tenant{}, domainerr.Missing("tenant")
	}
	if p.TenantName == nil {
		return Tenant{}, domainerr.Missing("tenant.name")
	}
	name := validate.TrimSpace(*p.TenantName, false)
	if name == "" {
		return Tenant{}, invalid("tenant.name", "Invalid tenant.name: must not be empty or blank.")
	}
	if err := validate.Text("tenant.name", name, MaxNameLen, false); err != nil {
		return Tenant{}, err
	}
	if p.TenantEmail == nil {
		return Tenant{}, domainerr.Missing("tenant.email")
	}
	if err := validate.Email("tenant.email", *p.TenantEmail); err != nil {
		return Tenant{}, err
	}
	return Tenant{Name: name, Email: *p.TenantEmail}, nil
}

func newMethods(in []MethodParams) ([]Method, error) {
	if in == nil {
		return nil, domainerr.Missing("payment_methods")
	}
	if len(in) < MinMethods || len(in) > MaxMethods {
		return nil, invalid("payment_methods", "Invalid payment_methods: an agreement has %d to %d payment methods, got %d.", MinMethods, MaxMethods, len(in))
	}
	out := make([]Method, 0, len(in))
	preferred := -1
	for i, m := range in {
		param := fmt.Sprintf("payment_methods[%d]", i)
		if m.Type == nil {
			return nil, domainerr.Missing(param + ".type")
		}
		if !slices.Contains(MethodTypes, MethodType(*m.Type)) {
			return nil, invalid(param+".type", "Invalid %s.type: must be one of %s, got '%s'.", param, joinTypes(), *m.Type)
		}
		if m.Token == nil {
			return nil, domainerr.Missing(param + ".token")
		}
		if *m.Token == "" || len(*m.Token) > MaxTokenLen || strings.ContainsFunc(*m.Token, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
			return nil, invalid(param+".token", "Invalid %s.token: must be 1 to %d printable ASCII characters without spaces.", param, MaxTokenLen)
		}
		pref := m.Preferred != nil && *m.Preferred
		if pref {
			if preferred >= 0 {
				return nil, invalid(param+".preferred", "Invalid %s.preferred: exactly one payment method is preferred, and payment_methods[%d] already is.", param, preferred)
			}
			preferred = i
		}
		out = append(out, Method{ID: m.ID, Type: MethodType(*m.Type), Token: *m.Token, Preferred: pref, Status: MethodActive})
	}
	if preferred < 0 {
		return nil, invalid("payment_methods", "Invalid payment_methods: exactly one payment method must have preferred: true.")
	}
	// The preferred method is charged first; the others keep the order given.
	p := out[preferred]
	out = append([]Method{p}, slices.Delete(out, preferred, preferred+1)...)
	return out, nil
}

func joinTypes() string {
	s := make([]string, len(MethodTypes))
	for i, t := range MethodTypes {
		s[i] = "'" + string(t) + "'"
	}
	return strings.Join(s, ", ")
}

func newAcceptance(p AcceptanceParams, now time.Time) (*Acceptance, error) {
	if p.AcceptedAt == nil {
		return nil, domainerr.Missing("acceptance.accepted_at")
	}
	at := time.Unix(*p.AcceptedAt, 0).UTC()
	if *p.AcceptedAt <= 0 || at.After(now.Add(AcceptanceMaxSkew)) {
		return nil, invalid("acceptance.accepted_at", "Invalid acceptance.accepted_at: must be a Unix timestamp in the past.")
	}
	a := &Acceptance{AcceptedAt: at}
	if p.IPAddress != nil {
		ip, err := netip.ParseAddr(*p.IPAddress)
		if err != nil || ip.Zone() != "" {
			return nil, invalid("acceptance.ip_address", "Invalid acceptance.ip_address: must be an IPv4 or IPv6 address, got '%s'.", *p.IPAddress)
		}
		a.IPAddress = ip.String()
	}
	if p.UserAgent != nil {
		ua := *p.UserAgent
		if ua == "" {
			return nil, invalid("acceptance.user_agent", "Invalid acceptance.user_agent: must not be empty.")
		}
		if err := validate.Text("acceptance.user_agent", ua, MaxUserAgentLen, false); err != nil {
			return nil, err
		}
		a.UserAgent = ua
	}
	return a, nil
}

// Cancel stops the agreement (payment_agreement.cancelled, whose previous_attributes are the
// status and cancelled_at it had): no new request may be made against it, and its open
// requests are cancelled (the engine's cascade). It reports false, changing nothing, when the
// agreement is cancelled already.
func (a *Agreement) Cancel(now time.Time) bool {
	if a.status == AgreementCancelled {
		return false
	}
	a.status = AgreementCancelled
	a.cancelledAt = now.UTC().Truncate(time.Second)
	a.cascading = true
	a.RaiseUpdate(eventtype.PaymentAgreementCancelled)
	return true
}

// CascadeDone records that every open request of the cancelled agreement is cancelled.
func (a *Agreement) CascadeDone() { a.cascading = false }

// FailMethods marks the methods of the charges hard-declined failed, each with its charge's
// failure code, so later attempts skip them. When any was still active it raises one
// payment_agreement.updated (previous_attributes: the payment_methods as they were) and
// reports true; otherwise it changes nothing.
func (a *Agreement) FailMethods(hard []Try) bool {
	changed := false
	for _, t := range hard {
		changed = a.failMethod(t.Method, t.FailureCode) || changed
	}
	if changed {
		a.RaiseUpdate(eventtype.PaymentAgreementUpdated)
	}
	return changed
}

// failMethod marks the method failed after a hard decline and reports whether it was active.
func (a *Agreement) failMethod(id, code string) bool {
	for i := range a.methods {
		if a.methods[i].ID == id && a.methods[i].Status == MethodActive {
			a.methods[i].Status = MethodFailed
			a.methods[i].FailureCode = code
			return true
		}
	}
	return false
}

// UsableMethods returns the methods an attempt charges, in order.
func (a *Agreement) UsableMethods() []Method {
	var out []Method
	for _, m := range a.methods {
		if m.Status == MethodActive {
			out = append(out, m)
		}
	}
	return out
}

// Owned reports whether the agreement belongs to the account in the mode.
func (a *Agreement) Owned(account string, livemode bool) bool {
	return a.account == account && a.livemode == livemode
}

// Accessors.
func (a *Agreement) ID() string                  { return a.id }
func (a *Agreement) Account() string             { return a.account }
func (a *Agreement) Livemode() bool              { return a.livemode }
func (a *Agreement) Status() AgreementStatus     { return a.status }
func (a *Agreement) Active() bool                { return a.status == AgreementActive }
func (a *Agreement) Tenant() Tenant              { return a.tenant }
func (a *Agreement) Methods() []Method           { return slices.Clone(a.methods) }
func (a *Agreement) Metadata() map[string]string { return maps.Clone(a.metadata) }
func (a *Agreement) Created() time.Time          { return a.created }
func (a *Agreement) CancelledAt() time.Time      { return a.cancelledAt }
func (a *Agreement) Cascading() bool             { return a.cascading }
func (a *Agreement) AcceptanceEvidence() *Acceptance {
	if a.acceptance == nil {
		return nil
	}
	c := *a.acceptance
	return &c
}

// AgreementState is every field of an agreement, for the repository.
type AgreementState struct {
	ID          string
	Account     string
	Livemode    bool
	Status      AgreementStatus
	Tenant      Tenant
	Methods     []Method
	Acceptance  *Acceptance
	Metadata    map[string]string
	Created     time.Time
	CancelledAt time.Time
	Cascading   bool
}

// State returns the agreement's fields.
func (a *Agreement) State() AgreementState {
	return AgreementState{
		ID: a.id, Account: a.account, Livemode: a.livemode, Status: a.status, Tenant: a.tenant,
		Methods: slices.Clone(a.methods), Acceptance: a.AcceptanceEvidence(), Metadata: maps.Clone(a.metadata),
		Created: a.created, CancelledAt: a.cancelledAt, Cascading: a.cascading,
	}
}

// RehydrateAgreement rebuilds a stored agreement; it is not a constructor and checks nothing.
func RehydrateAgreement(s AgreementState) *Agreement {
	return &Agreement{
		id: s.ID, account: s.Account, livemode: s.Livemode, status: s.Status, tenant: s.Tenant,
		methods: s.Methods, acceptance: s.Acceptance, metadata: s.Metadata, created: s.Created.UTC(),
		cancelledAt: s.CancelledAt.UTC(), cascading: s.Cascading,
	}
}
