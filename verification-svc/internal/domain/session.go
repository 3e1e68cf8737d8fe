package domain

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtype"
	"rentalplatform/libs/validate"
)

// DefaultTTL is a session's lifetime when the service is not configured otherwise (spec §8).
const DefaultTTL = 7 * 24 * time.Hour

// Status is where a session stands.
type Status string

// Session statuses: the spec's six, and canceled, which only cancel reaches.
const (
	StatusCreated    Status = "created"
	StatusPending    Status = "pending"
	StatusProcessing Status = "processing"
	StatusCompleted  Status = "completed"
	StatusFailed     Status = "failed"
	StatusExpired    Status = "expired"
	StatusCanceled   Status = "canceled"
)

// AllStatuses lists every status, in lifecycle order.
var AllStatuses = []Status{StatusCreated, StatusPending, StatusProcessing, StatusCompleted, StatusFailed, StatusExpired, StatusCanceled}

// ParseStatus returns the status named s; param names the parameter it came in.
func ParseStatus(param, s string) (Status, error) {
	if slices.Contains(AllStatuses, Status(s)) {
		return Status(s), nil
	}
	return "", invalid(param, "Invalid %s: '%s' is not a status; use one of created, pending, processing, completed, failed, expired, canceled.",
		param, validate.Shown(s))
}

// Running reports whether a session in this status may still move on by itself: it has not
// reached an outcome.
func (s Status) Running() bool {
	return s == StatusCreated || s == StatusPending || s == StatusProcessing
}

// CancellationReason says why a session was canceled.
type CancellationReason string

// Cancellation reasons (the spec leaves the set open).
const (
	CancelRequestedByApplicant CancellationReason = "requested_by_applicant"
	CancelDuplicate            CancellationReason = "duplicate"
	CancelFraudulent           CancellationReason = "fraudulent"
	CancelAbandoned            CancellationReason = "abandoned"
	CancelOther                CancellationReason = "other"
)

var cancellationReasons = []CancellationReason{CancelRequestedByApplicant, CancelDuplicate, CancelFraudulent, CancelAbandoned, CancelOther}

// ParseCancellationReason returns the reason named s.
func ParseCancellationReason(s string) (CancellationReason, error) {
	if slices.Contains(cancellationReasons, CancellationReason(s)) {
		return CancellationReason(s), nil
	}
	return "", invalid("cancellation_reason",
		"Invalid cancellation_reason: '%s' is not a reason; use one of requested_by_applicant, duplicate, fraudulent, abandoned, other.",
		validate.Shown(s))
}

// Attempt is one run of the applicant through the verification: it starts when the applicant
// starts (pending) and ends with the session's outcome. Outcome is "" while it runs.
type Attempt struct {
	StartedAt time.Time
	EndedAt   time.Time
	Outcome   Status // completed, failed, expired or canceled
	Error     *LastError
}

// Session is one verification of one applicant. Its fields change only through its methods.
type Session struct {
	id            string
	account       string
	livemode      bool
	status        Status
	applicant     Applicant
	products      []Product
	redirectURL   string
	webhookURL    string
	clientSecret  string
	webhookSecret string
	metadata      map[string]string
	created       time.Time
	expiresAt     time.Time

	cancellationReason CancellationReason
	lastError          *LastError
	attempts           []Attempt
	report             *Report
	redactedAt         time.Time

	// Recorder keeps the events of the transitions made since the session was loaded or
	// created, for the repository to store with it (rendered by the service's events.Emitter).
	events.Recorder
}

// NewParams is a new session: the client's input (Applicant to Metadata) and what the
// application assigns.
type NewParams struct {
	ID       string
	Account  string
	Livemode bool
	Created  time.Time
	TTL      time.Duration
	// ClientSecret is always issued; WebhookSecret signs deliveries to the webhook_url and is
	// used only when one is given.
	ClientSecret  string
	WebhookSecret string

	Applicant   *ApplicantParams // nil: not sent
	Products    []string         // nil: not sent
	RedirectURL *string
	WebhookURL  *string
	// CheckWebhookHost, when set, is the application's guard against a webhook_url on an
	// internal address, given the host of the parsed URL (so that nobody parses it again); its
	// error is returned as it is.
	CheckWebhookHost func(host string) error
	// Metadata: a key whose value is "" is not stored.
	Metadata map[string]string
}

// New validates the client's input and returns a created session, which raises
// verification_session.created. The first rule broken is an Invalid *domainerr.Error naming
// its dotted parameter, in the order of the parameters in the spec.
func New(p NewParams) (*Session, error) {
	if p.ID == "" || p.Account == "" || p.ClientSecret == "" || p.Created.IsZero() || p.TTL <= 0 {
		return nil, fmt.Errorf("domain.New: id, account, client secret, created and ttl are required")
	}
	created := p.Created.Truncate(time.Second).UTC()
	applicant, err := newApplicant(p.Applicant, created)
	if err != nil {
		return nil, err
	}
	products, err := parseProducts(p.Products)
	if err != nil {
		return nil, err
	}
	s := &Session{
		id: p.ID, account: p.Account, livemode: p.Livemode, status: StatusCreated,
		applicant: applicant, products: products, clientSecret: p.ClientSecret,
		// The API shows Unix seconds; keeping only those makes a stored session read back
		// equal to the one created, and expires_at exactly created + the lifetime.
		created: created, expiresAt: created.Add(p.TTL.Truncate(time.Second)),
	}
	// Both URLs are stored in the normal form of the API's one URL parser.
	if p.RedirectURL != nil {
		u, err := validate.ParseHTTPSURL("redirect_url", *p.RedirectURL, MaxURLLen)
		if err != nil {
			return nil, err
		}
		s.redirectURL = u.String()
	}
	if p.WebhookURL != nil {
		u, err := validate.ParseHTTPSURL("webhook_url", *p.WebhookURL, MaxURLLen)
		if err != nil {
			return nil, err
		}
		if p.CheckWebhookHost != nil {
			if err := p.CheckWebhookHost(u.Hostname()); err != nil {
				return nil, err
			}
		}
		if p.WebhookSecret == "" {
			return nil, fmt.Errorf("domain.New: a webhook_url needs a webhook secret")
		}
		s.webhookURL, s.webhookSecret = u.String(), p.WebhookSecret
	}
	if err := validate.Metadata("metadata", p.Metadata); err != nil {
		return nil, err
	}
	s.metadata = map[string]string{}
	for k, v := range p.Metadata {
		if v != "" {
			s.metadata[k] = v
		}
	}
	s.Raise(eventtype.VerificationSessionCreated)
	return s, nil
}

var (
	_ events.Aggregate = (*Session)(nil)
	_ events.Routed    = (*Session)(nil)
)

// EventDestination implements events.Routed: a session with a webhook_url sends its events
// there, signed with its webhook secret, instead of to the account's webhook endpoints
// (docs/events.md); nil for one without.
func (s *Session) EventDestination() *events.Destination {
	if s.webhookURL == "" {
		return nil
	}
	return &events.Destination{URL: s.webhookURL, Secret: s.webhookSecret}
}

// Start records that the applicant started: created → pending, and a new attempt.
func (s *Session) Start(now time.Time) error {
	if s.status != StatusCreated {
		return s.refuse(StatusPending)
	}
	s.status = StatusPending
	s.attempts = append(s.attempts, Attempt{StartedAt: now.UTC()})
	s.Raise(eventtype.VerificationSessionPending)
	return nil
}

// Process records that the checks started running: pending → processing.
func (s *Session) Process() error {
	if s.status != StatusPending {
		return s.refuse(StatusProcessing)
	}
	s.status = StatusProcessing
	s.Raise(eventtype.VerificationSessionProcessing)
	return nil
}

// Complete records the checks' results: processing → completed, with its report (every
// product passed unless outcomes says otherwise). It raises verification_report.created, then
// verification_session.completed, so the report exists before the session points at it.
func (s *Session) Complete(now time.Time, outcomes map[Product]ResultStatus) error {
	if s.status != StatusProcessing {
		return s.refuse(StatusCompleted)
	}
	if err := s.checkOutcomes(outcomes); err != nil {
		return err
	}
	r := &Report{ID: ReportID(s.id), Created: now.Truncate(time.Second).UTC()}
	for _, p := range s.products {
		res := ProductResult{Product: p, Status: ResultPassed, Reasons: []string{}}
		if outcomes[p] == ResultFailed {
			res.Status, res.Reasons = ResultFailed, []string{failureReasons[productFailure[p]]}
		}
		r.Products = append(r.Products, res)
	}
	s.status, s.report = StatusCompleted, r
	s.endAttempt(now, StatusCompleted, nil)
	// The report is the session's: the Emitter's part renderer renders it from the session.
	s.RaisePart(eventtype.VerificationReportCreated, nil)
	s.Raise(eventtype.VerificationSessionCompleted)
	return nil
}

// checkOutcomes refuses an outcome for a product the session does not run.
func (s *Session) checkOutcomes(outcomes map[Product]ResultStatus) error {
	for _, p := range slices.Sorted(maps.Keys(outcomes)) {
		if !slices.Contains(s.products, p) {
			param := "outcomes[" + string(p) + "]"
			return invalid(param, "Invalid %s: the session does not run the %s check.", param, p)
		}
	}
	return nil
}

// FailParams says why the checks failed; zero fields take the defaults: the code of the
// session's first product's check, and that product for a product's code.
type FailParams struct {
	Code    ErrorCode
	Product Product
}

// Fail records that the checks failed: processing → failed, with last_error.
func (s *Session) Fail(now time.Time, p FailParams) error {
	if s.status != StatusProcessing {
		return s.refuse(StatusFailed)
	}
	if p.Product != "" && !slices.Contains(s.products, p.Product) {
		return invalid("last_error.product", "Invalid last_error.product: the session does not run the %s check.", p.Product)
	}
	switch {
	case p.Code == "":
		if p.Product == "" {
			p.Product = s.products[0]
		}
		p.Code = productFailure[p.Product]
	case p.Product == "":
		// A product's own code names that product when the session runs it.
		for _, prod := range s.products {
			if productFailure[prod] == p.Code {
				p.Product = prod
				break
			}
		}
	}
	e := &LastError{Code: p.Code, Reason: failureReasons[p.Code], Product: p.Product}
	s.status, s.lastError = StatusFailed, e
	s.endAttempt(now, StatusFailed, e)
	s.Raise(eventtype.VerificationSessionFailed)
	return nil
}

// ExpiryDue reports whether the session should expire at now: it is created or pending and its
// expires_at has come.
func (s *Session) ExpiryDue(now time.Time) bool {
	return (s.status == StatusCreated || s.status == StatusPending) && !now.Before(s.expiresAt)
}

// Expire ends a session the applicant did not finish: created or pending → expired, with
// last_error abandoned. The lifetime is the caller's business: the expiry task and sweep
// check ExpiryDue first; the test helper expires at once.
func (s *Session) Expire(now time.Time) error {
	if s.status != StatusCreated && s.status != StatusPending {
		return s.refuse(StatusExpired)
	}
	reason := "The applicant did not start the verification before the session expired."
	if s.status == StatusPending {
		reason = "The applicant started but did not finish the verification before the session expired."
	}
	e := &LastError{Code: ErrorAbandoned, Reason: reason}
	s.status, s.lastError = StatusExpired, e
	s.endAttempt(now, StatusExpired, e)
	s.Raise(eventtype.VerificationSessionExpired)
	return nil
}

// Cancel cancels a session that has not completed, keeping its last_error and attempts (what
// a failed or expired session says about why stays). A canceled session is left as it is
// (changed false); a completed one is refused. reason may be "".
func (s *Session) Cancel(now time.Time, reason CancellationReason) (changed bool, err error) {
	switch s.status {
	case StatusCanceled:
		return false, nil
	case StatusCompleted:
		return false, domainerr.InvalidState("The verification session %s is completed and can no longer be canceled.", s.id)
	}
	s.status, s.cancellationReason = StatusCanceled, reason
	s.endAttempt(now, StatusCanceled, nil)
	s.Raise(eventtype.VerificationSessionCanceled)
	return true, nil
}

// Redact removes the applicant's personal data from a session that has reached its outcome:
// every applicant field becomes Redacted, metadata is emptied and the report's reasons are
// redacted. Redacting again changes nothing (changed false); a running session is refused.
func (s *Session) Redact(now time.Time) (changed bool, err error) {
	if s.status.Running() {
		return false, domainerr.InvalidState("The verification session %s is %s; only completed, failed, expired or canceled sessions can be redacted.",
			s.id, s.status)
	}
	if !s.redactedAt.IsZero() {
		return false, nil
	}
	s.applicant = s.applicant.redacted()
	s.metadata = map[string]string{}
	if s.report != nil {
		for i := range s.report.Products {
			for j := range s.report.Products[i].Reasons {
				s.report.Products[i].Reasons[j] = Redacted
			}
		}
	}
	s.redactedAt = now.Truncate(time.Second).UTC()
	s.Raise(eventtype.VerificationSessionRedacted)
	return true, nil
}

// endAttempt ends the attempt in progress, if any, with the session's outcome.
func (s *Session) endAttempt(now time.Time, outcome Status, e *LastError) {
	if n := len(s.attempts); n > 0 && s.attempts[n-1].Outcome == "" {
		a := &s.attempts[n-1]
		a.EndedAt, a.Outcome = now.UTC(), outcome
		if e != nil {
			cp := *e
			a.Error = &cp
		}
	}
}

// refuse is the error of a move the lifecycle does not have.
func (s *Session) refuse(to Status) error {
	return domainerr.InvalidState("The verification session %s is %s and cannot move to %s.", s.id, s.status, to)
}

// Advance is a move requested through the test helper (and, later, reported by a verification
// provider): the target status with what it may carry.
type Advance struct {
	To       Status
	Outcomes map[Product]ResultStatus // completed only
	Failure  *FailParams              // failed only
}

// ParseAdvance checks a requested move on its own, before the session is read: a known target
// status, outcomes only for completed (each passed or failed), a failure only for failed
// (a known code). Products are checked against the session by Apply.
func ParseAdvance(status *string, outcomes map[string]string, failure *FailureParams) (Advance, error) {
	if status == nil {
		return Advance{}, domainerr.Missing("status")
	}
	to, err := ParseStatus("status", *status)
	if err != nil {
		return Advance{}, err
	}
	if to == StatusCreated || to == StatusCanceled {
		return Advance{}, invalid("status", "Invalid status: a session can be advanced to pending, processing, completed, failed or expired (cancel it with /cancel).")
	}
	a := Advance{To: to}
	if outcomes != nil {
		if to != StatusCompleted {
			return Advance{}, invalid("outcomes", "Invalid outcomes: only a move to completed takes outcomes.")
		}
		a.Outcomes = map[Product]ResultStatus{}
		for _, k := range slices.Sorted(maps.Keys(outcomes)) {
			param := "outcomes[" + k + "]"
			if !slices.Contains(AllProducts, Product(k)) {
				return Advance{}, invalid(param, "Invalid %s: '%s' is not a product; use one of %s.", param, validate.Shown(k), productNames())
			}
			v := ResultStatus(outcomes[k])
			if v != ResultPassed && v != ResultFailed {
				return Advance{}, invalid(param, "Invalid %s: must be 'passed' or 'failed', got '%s'.", param, validate.Shown(outcomes[k]))
			}
			a.Outcomes[Product(k)] = v
		}
	}
	if failure != nil {
		if to != StatusFailed {
			return Advance{}, invalid("last_error", "Invalid last_error: only a move to failed takes last_error.")
		}
		f := &FailParams{}
		if failure.Code != nil {
			if !slices.Contains(FailureCodes(), ErrorCode(*failure.Code)) {
				return Advance{}, invalid("last_error.code", "Invalid last_error.code: '%s' is not a failure code; use one of document_unverified, identity_mismatch, income_insufficient, credit_check_failed, cash_flow_insufficient, consent_declined.",
					validate.Shown(*failure.Code))
			}
			f.Code = ErrorCode(*failure.Code)
		}
		if failure.Product != nil {
			if !slices.Contains(AllProducts, Product(*failure.Product)) {
				return Advance{}, invalid("last_error.product", "Invalid last_error.product: '%s' is not a product; use one of %s.",
					validate.Shown(*failure.Product), productNames())
			}
			f.Product = Product(*failure.Product)
		}
		a.Failure = f
	}
	return a, nil
}

// FailureParams is last_error as a client sent it to the test helper.
type FailureParams struct {
	Code    *string
	Product *string
}

// Apply makes the move, along the lifecycle's edges only.
func (s *Session) Apply(now time.Time, a Advance) error {
	switch a.To {
	case StatusPending:
		return s.Start(now)
	case StatusProcessing:
		return s.Process()
	case StatusCompleted:
		return s.Complete(now, a.Outcomes)
	case StatusFailed:
		var f FailParams
		if a.Failure != nil {
			f = *a.Failure
		}
		return s.Fail(now, f)
	case StatusExpired:
		return s.Expire(now)
	}
	return s.refuse(a.To)
}

// Accessors. Slices, maps and pointers are copies, so callers cannot change the session
// behind its back.

func (s *Session) ID() string                             { return s.id }
func (s *Session) Account() string                        { return s.account }
func (s *Session) Livemode() bool                         { return s.livemode }
func (s *Session) Status() Status                         { return s.status }
func (s *Session) Applicant() Applicant                   { return s.applicant.clone() }
func (s *Session) Products() []Product                    { return slices.Clone(s.products) }
func (s *Session) RedirectURL() string                    { return s.redirectURL }
func (s *Session) WebhookURL() string                     { return s.webhookURL }
func (s *Session) ClientSecret() string                   { return s.clientSecret }
func (s *Session) WebhookSecret() string                  { return s.webhookSecret }
func (s *Session) Metadata() map[string]string            { return maps.Clone(s.metadata) }
func (s *Session) Created() time.Time                     { return s.created }
func (s *Session) ExpiresAt() time.Time                   { return s.expiresAt }
func (s *Session) CancellationReason() CancellationReason { return s.cancellationReason }
func (s *Session) Report() *Report                        { return s.report.clone() }
func (s *Session) RedactedAt() time.Time                  { return s.redactedAt }

// LastError returns why the session failed or expired, or nil.
func (s *Session) LastError() *LastError {
	if s.lastError == nil {
		return nil
	}
	e := *s.lastError
	return &e
}

// Attempts returns the runs, oldest first.
func (s *Session) Attempts() []Attempt {
	out := make([]Attempt, len(s.attempts))
	for i, a := range s.attempts {
		out[i] = a
		if a.Error != nil {
			e := *a.Error
			out[i].Error = &e
		}
	}
	return out
}

// OwnedBy reports whether the session belongs to account in the given mode.
func (s *Session) OwnedBy(account string, livemode bool) bool {
	return s.account == account && s.livemode == livemode
}

// State is a session's stored form, for repositories.
type State struct {
	ID                 string
	Account            string
	Livemode           bool
	Status             Status
	Applicant          Applicant
	Products           []Product
	RedirectURL        string
	WebhookURL         string
	ClientSecret       string
	WebhookSecret      string
	Metadata           map[string]string
	Created            time.Time
	ExpiresAt          time.Time
	CancellationReason CancellationReason
	LastError          *LastError
	Attempts           []Attempt
	Report             *Report
	RedactedAt         time.Time
}

// Rehydrate rebuilds a session from storage. It is not a constructor: it trusts the state,
// which New and the transitions validated when it was written.
func Rehydrate(st State) *Session {
	s := &Session{
		id: st.ID, account: st.Account, livemode: st.Livemode, status: st.Status,
		applicant: st.Applicant.clone(), products: slices.Clone(st.Products),
		redirectURL: st.RedirectURL, webhookURL: st.WebhookURL,
		clientSecret: st.ClientSecret, webhookSecret: st.WebhookSecret,
		metadata: maps.Clone(st.Metadata), created: st.Created.UTC(), expiresAt: st.ExpiresAt.UTC(),
		cancellationReason: st.CancellationReason, report: st.Report.clone(), redactedAt: st.RedactedAt.UTC(),
	}
	if s.metadata == nil {
		s.metadata = map[string]string{}
	}
	if st.LastError != nil {
		e := *st.LastError
		s.lastError = &e
	}
	s.attempts = (&Session{attempts: st.Attempts}).Attempts()
	return s
}

// State returns the session's stored form.
func (s *Session) State() State {
	return State{
		ID: s.id, Account: s.account, Livemode: s.livemode, Status: s.status,
		Applicant: s.Applicant(), Products: s.Products(), RedirectURL: s.redirectURL, WebhookURL: s.webhookURL,
		ClientSecret: s.clientSecret, WebhookSecret: s.webhookSecret, Metadata: s.Metadata(),
		Created: s.created, ExpiresAt: s.expiresAt, CancellationReason: s.cancellationReason,
		LastError: s.LastError(), Attempts: s.Attempts(), Report: s.Report(), RedactedAt: s.redactedAt,
	}
}
