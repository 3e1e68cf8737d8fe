package http

import (
	"bytes"
	"encoding/json"
	"time"

	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtype"
	"rentalplatform/libs/ids"

	"rentalplatform/verification-svc/internal/domain"
)

// sessionJSON is the verification_session object (spec §2.1, and what this API adds:
// cancellation_reason, last_error, attempts, redaction, webhook_secret). client_secret and
// webhook_secret are shown by create and retrieve only: never in lists or events.
type sessionJSON struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	Status             domain.Status     `json:"status"`
	Applicant          applicantJSON     `json:"applicant"`
	Products           []domain.Product  `json:"products"`
	RedirectURL        *string           `json:"redirect_url"`
	WebhookURL         *string           `json:"webhook_url"`
	ClientSecret       string            `json:"client_secret,omitempty"`
	WebhookSecret      string            `json:"webhook_secret,omitempty"`
	Report             *string           `json:"report"`
	Metadata           map[string]string `json:"metadata"`
	ExpiresAt          int64             `json:"expires_at"`
	Created            int64             `json:"created"`
	Livemode           bool              `json:"livemode"`
	CancellationReason *string           `json:"cancellation_reason"`
	LastError          *lastErrorJSON    `json:"last_error"`
	Attempts           []attemptJSON     `json:"attempts"`
	Redaction          *redactionJSON    `json:"redaction"`
}

type applicantJSON struct {
	FirstName   string       `json:"first_name"`
	LastName    string       `json:"last_name"`
	Email       string       `json:"email"`
	DateOfBirth *string      `json:"date_of_birth"`
	Phone       *string      `json:"phone"`
	Address     *addressJSON `json:"address"`
}

type addressJSON struct {
	Line1      string  `json:"line1"`
	Line2      *string `json:"line2"`
	City       string  `json:"city"`
	State      *string `json:"state"`
	PostalCode string  `json:"postal_code"`
	Country    string  `json:"country"`
}

type lastErrorJSON struct {
	Code    domain.ErrorCode `json:"code"`
	Reason  string           `json:"reason"`
	Product *domain.Product  `json:"product"`
}

type attemptJSON struct {
	StartedAt int64          `json:"started_at"`
	EndedAt   *int64         `json:"ended_at"`
	Outcome   *domain.Status `json:"outcome"`
	LastError *lastErrorJSON `json:"last_error"`
}

type redactionJSON struct {
	Status     string `json:"status"`
	RedactedAt int64  `json:"redacted_at"`
}

// SessionObject renders a session as lists and events show it: without its secrets.
func SessionObject(s *domain.Session) any { return renderSession(s, false) }

// ReportObject renders a session's report, the object of verification_report.created.
func ReportObject(s *domain.Session) any { return renderReport(s) }

// SessionEvents renders the events sessions raise, their objects as this port answers them:
// the session without its secrets, and for verification_report.created the session's report.
// A session's own webhook_url routes its events (Session.EventDestination).
func SessionEvents(gen *ids.Generator, now func() time.Time) *events.Emitter[*domain.Session] {
	return &events.Emitter[*domain.Session]{IDs: gen, Now: now, Object: SessionObject,
		Parts: map[string]func(*domain.Session, any) any{
			eventtype.VerificationReportCreated: func(s *domain.Session, _ any) any { return renderReport(s) },
		}}
}

func optional[T ~string](v T) *T {
	if v == "" {
		return nil
	}
	return &v
}

func renderLastError(e *domain.LastError) *lastErrorJSON {
	if e == nil {
		return nil
	}
	return &lastErrorJSON{Code: e.Code, Reason: e.Reason, Product: optional(e.Product)}
}

func renderSession(s *domain.Session, withSecrets bool) sessionJSON {
	a := s.Applicant()
	out := sessionJSON{
		ID: s.ID(), Object: domain.ObjectSession, Status: s.Status(),
		Applicant: applicantJSON{FirstName: a.FirstName, LastName: a.LastName, Email: a.Email,
			DateOfBirth: optional(a.DateOfBirth), Phone: optional(a.Phone)},
		Products: s.Products(), RedirectURL: optional(s.RedirectURL()), WebhookURL: optional(s.WebhookURL()),
		Metadata: s.Metadata(), ExpiresAt: s.ExpiresAt().Unix(), Created: s.Created().Unix(), Livemode: s.Livemode(),
		CancellationReason: (*string)(optional(s.CancellationReason())), LastError: renderLastError(s.LastError()),
		Attempts: []attemptJSON{},
	}
	if ad := a.Address; ad != nil {
		out.Applicant.Address = &addressJSON{Line1: ad.Line1, Line2: optional(ad.Line2), City: ad.City,
			State: optional(ad.State), PostalCode: ad.PostalCode, Country: ad.Country}
	}
	if r := s.Report(); r != nil {
		out.Report = &r.ID
	}
	for _, at := range s.Attempts() {
		j := attemptJSON{StartedAt: at.StartedAt.Unix(), Outcome: optional(at.Outcome), LastError: renderLastError(at.Error)}
		if !at.EndedAt.IsZero() {
			end := at.EndedAt.Unix()
			j.EndedAt = &end
		}
		out.Attempts = append(out.Attempts, j)
	}
	if t := s.RedactedAt(); !t.IsZero() {
		out.Redaction = &redactionJSON{Status: "redacted", RedactedAt: t.Unix()}
	}
	if withSecrets {
		out.ClientSecret, out.WebhookSecret = s.ClientSecret(), s.WebhookSecret()
	}
	return out
}

// reportJSON is the verification_report object.
type reportJSON struct {
	ID                  string         `json:"id"`
	Object              string         `json:"object"`
	VerificationSession string         `json:"verification_session"`
	Livemode            bool           `json:"livemode"`
	Created             int64          `json:"created"`
	Products            productResults `json:"products"`
}

type resultJSON struct {
	Status  domain.ResultStatus `json:"status"`
	Reasons []string            `json:"reasons"`
}

// productResults renders as an object keyed by product, in the session's order of products
// (a Go map would sort the keys).
type productResults []domain.ProductResult

func (p productResults) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, r := range p {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(string(r.Product))
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(resultJSON{Status: r.Status, Reasons: r.Reasons})
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func renderReport(s *domain.Session) reportJSON {
	r := s.Report()
	return reportJSON{ID: r.ID, Object: domain.ObjectReport, VerificationSession: s.ID(), Livemode: s.Livemode(),
		Created: r.Created.Unix(), Products: productResults(r.Products)}
}
