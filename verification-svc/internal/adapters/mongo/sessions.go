// Package mongo stores verification sessions in MongoDB: one document per session in
// "verification_sessions", keyed by its id, holding its report once it has one (so the
// completion and its report are one write) and its outbox of events not yet published.
package mongo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/libs/docstore"
	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/events"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/outbox"

	"rentalplatform/verification-svc/internal/domain"
)

// Collection is the name of the sessions collection.
const Collection = "verification_sessions"

// Sessions implements domain.Repository.
type Sessions struct {
	docs     *docstore.Collection[document]
	sessions *docstore.Aggregates[document, *domain.Session]
}

var _ domain.Repository = (*Sessions)(nil)

// cacheSize bounds the sessions the process keeps as it last wrote them, for the writes that
// follow a write soon (the outbox's clear of a new session's event, a test-mode session moved
// along): they start from that copy instead of reading the store (docstore Options.Cache). API
// reads always read the store.
const cacheSize = 8192

// NewSessions returns the session store of db. emitter renders the events sessions raise,
// which are stored with them and which relay publishes; nil stores none (tests that do not
// look at events).
func NewSessions(db *docstore.DB, relay *outbox.Relay, emitter events.Renderer[*domain.Session]) *Sessions {
	docs := docstore.NewCollection[document](db, Collection, docstore.Options{
		Indexes:  SessionIndexes(),
		NotFound: domain.SessionNotFound,
		Conflict: domainerr.LockTimeout("verification session"),
		Outbox:   relay,
		Cache:    cacheSize,
		// Clients create them: a create retried with its Idempotency-Key stores none.
		IdempotentCreates: true,
	})
	return &Sessions{docs: docs, sessions: &docstore.Aggregates[document, *domain.Session]{
		Docs: docs, NotFound: domain.SessionNotFound,
		Of: document.session, Set: (*document).set, Events: emitter,
	}}
}

// expirable are the statuses the expiry sweep looks for.
var expirable = bson.A{string(domain.StatusCreated), string(domain.StatusPending)}

// SessionIndexes back every query: the list (account and mode, each filter and both together, then
// _id for the newest-first order) and the expiry sweep (status, then expires_at). Reads by id
// use the _id index.
func SessionIndexes() []mongo.IndexModel {
	return []mongo.IndexModel{
		docstore.ListIndex("account_livemode_id"),
		docstore.ListIndex("account_livemode_status_id", "status"),
		docstore.ListIndex("account_livemode_applicant_email_id", "applicant_email"),
		docstore.ListIndex("account_livemode_status_applicant_email_id", "status", "applicant_email"),
		docstore.Index("status_expires_at", "status", "expires_at"),
	}
}

// EnsureIndexes declares the indexes the queries need.
func (r *Sessions) EnsureIndexes(ctx context.Context) error {
	return r.docs.EnsureIndexes(ctx)
}

// document is the stored form. created is Unix seconds (the API's unit); expires_at is a date,
// which the expiry sweep compares. applicant_email is the applicant's email in lower case, for
// the applicant_email filter, which ignores case.
type document struct {
	docstore.Meta      `bson:",inline"`
	Account            string            `bson:"account"`
	Livemode           bool              `bson:"livemode"`
	Status             string            `bson:"status"`
	Applicant          applicantDoc      `bson:"applicant"`
	ApplicantEmail     string            `bson:"applicant_email"`
	Products           []string          `bson:"products"`
	RedirectURL        string            `bson:"redirect_url,omitempty"`
	WebhookURL         string            `bson:"webhook_url,omitempty"`
	ClientSecret       string            `bson:"client_secret"`
	WebhookSecret      string            `bson:"webhook_secret,omitempty"`
	Metadata           docstore.Metadata `bson:"metadata"`
	Created            int64             `bson:"created"`
	ExpiresAt          time.Time         `bson:"expires_at"`
	CancellationReason string            `bson:"cancellation_reason,omitempty"`
	LastError          *lastErrorDoc     `bson:"last_error,omitempty"`
	Attempts           []attemptDoc      `bson:"attempts"`
	Report             *reportDoc        `bson:"report,omitempty"`
	RedactedAt         *time.Time        `bson:"redacted_at,omitempty"`
}

type applicantDoc struct {
	FirstName   string      `bson:"first_name"`
	LastName    string      `bson:"last_name"`
	Email       string      `bson:"email"`
	DateOfBirth string      `bson:"date_of_birth,omitempty"`
	Phone       string      `bson:"phone,omitempty"`
	Address     *addressDoc `bson:"address,omitempty"`
}

type addressDoc struct {
	Line1      string `bson:"line1"`
	Line2      string `bson:"line2,omitempty"`
	City       string `bson:"city"`
	State      string `bson:"state,omitempty"`
	PostalCode string `bson:"postal_code"`
	Country    string `bson:"country"`
}

type lastErrorDoc struct {
	Code    string `bson:"code"`
	Reason  string `bson:"reason"`
	Product string `bson:"product,omitempty"`
}

type attemptDoc struct {
	StartedAt time.Time     `bson:"started_at"`
	EndedAt   *time.Time    `bson:"ended_at,omitempty"`
	Outcome   string        `bson:"outcome,omitempty"`
	Error     *lastErrorDoc `bson:"error,omitempty"`
}

type reportDoc struct {
	ID       string      `bson:"id"`
	Created  int64       `bson:"created"`
	Products []resultDoc `bson:"products"`
}

type resultDoc struct {
	Product string   `bson:"product"`
	Status  string   `bson:"status"`
	Reasons []string `bson:"reasons"`
}

func lastErrorOf(e *domain.LastError) *lastErrorDoc {
	if e == nil {
		return nil
	}
	return &lastErrorDoc{Code: string(e.Code), Reason: e.Reason, Product: string(e.Product)}
}

func (e *lastErrorDoc) domain() *domain.LastError {
	if e == nil {
		return nil
	}
	return &domain.LastError{Code: domain.ErrorCode(e.Code), Reason: e.Reason, Product: domain.Product(e.Product)}
}

// set stores the session's state in d, keeping d's Meta (the store's; the events the session
// raised go into its outbox through docstore.Aggregates).
func (d *document) set(s *domain.Session) {
	st := s.State()
	a := st.Applicant
	*d = document{
		Meta:    d.Meta,
		Account: st.Account, Livemode: st.Livemode, Status: string(st.Status),
		Applicant: applicantDoc{FirstName: a.FirstName, LastName: a.LastName, Email: a.Email,
			DateOfBirth: a.DateOfBirth, Phone: a.Phone},
		ApplicantEmail: strings.ToLower(a.Email),
		RedirectURL:    st.RedirectURL, WebhookURL: st.WebhookURL,
		ClientSecret: st.ClientSecret, WebhookSecret: st.WebhookSecret,
		Metadata: docstore.MetadataOf(st.Metadata), Created: st.Created.Unix(), ExpiresAt: st.ExpiresAt.UTC(),
		CancellationReason: string(st.CancellationReason), LastError: lastErrorOf(st.LastError),
		Attempts: make([]attemptDoc, len(st.Attempts)), RedactedAt: docstore.TimePtr(st.RedactedAt),
	}
	d.ID = st.ID
	if ad := a.Address; ad != nil {
		d.Applicant.Address = &addressDoc{Line1: ad.Line1, Line2: ad.Line2, City: ad.City, State: ad.State,
			PostalCode: ad.PostalCode, Country: ad.Country}
	}
	for _, p := range st.Products {
		d.Products = append(d.Products, string(p))
	}
	for i, at := range st.Attempts {
		d.Attempts[i] = attemptDoc{StartedAt: at.StartedAt.UTC(), EndedAt: docstore.TimePtr(at.EndedAt),
			Outcome: string(at.Outcome), Error: lastErrorOf(at.Error)}
	}
	if r := st.Report; r != nil {
		d.Report = &reportDoc{ID: r.ID, Created: r.Created.Unix(), Products: make([]resultDoc, len(r.Products))}
		for i, p := range r.Products {
			d.Report.Products[i] = resultDoc{Product: string(p.Product), Status: string(p.Status), Reasons: p.Reasons}
		}
	}
}

// session is the session d holds. It shares no memory with d (domain.Rehydrate copies what the
// mapping does not make anew): the document as loaded renders an event's "before".
func (d document) session() *domain.Session {
	a := d.Applicant
	st := domain.State{
		ID: d.ID, Account: d.Account, Livemode: d.Livemode, Status: domain.Status(d.Status),
		Applicant: domain.Applicant{FirstName: a.FirstName, LastName: a.LastName, Email: a.Email,
			DateOfBirth: a.DateOfBirth, Phone: a.Phone},
		RedirectURL: d.RedirectURL, WebhookURL: d.WebhookURL,
		ClientSecret: d.ClientSecret, WebhookSecret: d.WebhookSecret,
		Metadata: d.Metadata.Map(), Created: time.Unix(d.Created, 0), ExpiresAt: d.ExpiresAt,
		CancellationReason: domain.CancellationReason(d.CancellationReason), LastError: d.LastError.domain(),
		Attempts: make([]domain.Attempt, len(d.Attempts)), RedactedAt: docstore.TimeOf(d.RedactedAt),
	}
	if ad := a.Address; ad != nil {
		st.Applicant.Address = &domain.Address{Line1: ad.Line1, Line2: ad.Line2, City: ad.City, State: ad.State,
			PostalCode: ad.PostalCode, Country: ad.Country}
	}
	for _, p := range d.Products {
		st.Products = append(st.Products, domain.Product(p))
	}
	for i, at := range d.Attempts {
		st.Attempts[i] = domain.Attempt{StartedAt: at.StartedAt, EndedAt: docstore.TimeOf(at.EndedAt),
			Outcome: domain.Status(at.Outcome), Error: at.Error.domain()}
	}
	if r := d.Report; r != nil {
		st.Report = &domain.Report{ID: r.ID, Created: time.Unix(r.Created, 0).UTC(), Products: make([]domain.ProductResult, len(r.Products))}
		for i, p := range r.Products {
			st.Report.Products[i] = domain.ProductResult{Product: domain.Product(p.Product), Status: domain.ResultStatus(p.Status),
				Reasons: append([]string{}, p.Reasons...)}
		}
	}
	return domain.Rehydrate(st)
}

// OwnedBy implements docstore.Owned.
func (d document) OwnedBy(account string, livemode bool) bool {
	return d.Account == account && d.Livemode == livemode
}

// Create implements domain.Repository.
func (r *Sessions) Create(ctx context.Context, s *domain.Session) (*domain.Session, error) {
	ins, err := r.sessions.InsertOnce(ctx, []*domain.Session{s})
	if err != nil {
		return nil, err
	}
	if !ins[0].New && !ins[0].Replay {
		return nil, fmt.Errorf("insert verification session: %s is stored already", s.ID())
	}
	return ins[0].Stored, nil
}

// Get implements domain.Repository. It reads the store, not the cache: the cache serves the
// writes (Options.Cache).
func (r *Sessions) Get(ctx context.Context, id, account string, livemode bool) (*domain.Session, error) {
	return r.sessions.Get(ctx, id, account, livemode)
}

// Update implements domain.Repository.
func (r *Sessions) Update(ctx context.Context, id, account string, livemode bool, fn func(*domain.Session) error) (*domain.Session, error) {
	return r.sessions.Update(ctx, id, account, livemode, fn)
}

// Load implements domain.Repository.
func (r *Sessions) Load(ctx context.Context, id string) (*domain.Session, error) {
	return r.sessions.Load(ctx, id)
}

// UpdateAny implements domain.Repository.
func (r *Sessions) UpdateAny(ctx context.Context, id string, fn func(*domain.Session) error) (*domain.Session, error) {
	return r.sessions.UpdateAny(ctx, id, fn)
}

// List implements domain.Repository.
func (r *Sessions) List(ctx context.Context, account string, livemode bool, f domain.Filter, p listing.Params) ([]*domain.Session, bool, error) {
	filter := bson.D{{Key: "account", Value: account}, {Key: "livemode", Value: livemode}}
	if f.Status != "" {
		filter = append(filter, bson.E{Key: "status", Value: string(f.Status)})
	}
	if f.ApplicantEmail != "" {
		filter = append(filter, bson.E{Key: "applicant_email", Value: strings.ToLower(f.ApplicantEmail)})
	}
	docs, hasMore, err := r.docs.Page(ctx, filter, p)
	if err != nil {
		return nil, false, err
	}
	out := make([]*domain.Session, len(docs))
	for i, d := range docs {
		out[i] = d.session()
	}
	return out, hasMore, nil
}

// ExpiryDue implements domain.Repository.
func (r *Sessions) ExpiryDue(ctx context.Context, t time.Time, limit int) ([]string, error) {
	docs, err := r.docs.Find(ctx, bson.D{
		{Key: "status", Value: bson.D{{Key: "$in", Value: expirable}}},
		{Key: "expires_at", Value: bson.D{{Key: "$lte", Value: t.UTC()}}},
	}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}).
		SetSort(bson.D{{Key: "expires_at", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, fmt.Errorf("sessions due to expire: %w", err)
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	return ids, nil
}
