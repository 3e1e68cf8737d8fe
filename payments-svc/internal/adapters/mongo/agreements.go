// Package mongo stores payment agreements and payment requests in MongoDB, one document per
// aggregate keyed by its id ("payment_agreements", "payment_requests"), each with its outbox of
// events not yet published: the mapping and the queries; every read and write by id, and the
// events each change raised, are docstore.Aggregates'.
package mongo

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/libs/docstore"
	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/events"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/outbox"

	"rentalplatform/payments-svc/internal/domain"
)

// Collection names.
const (
	AgreementsCollection = "payment_agreements"
	RequestsCollection   = "payment_requests"
)

// Agreements implements domain.AgreementRepository.
type Agreements struct {
	docs       *docstore.Collection[agreementDoc]
	agreements *docstore.Aggregates[agreementDoc, *domain.Agreement]
}

var _ domain.AgreementRepository = (*Agreements)(nil)

// NewAgreements returns the agreement store of db: emitter renders the events agreements raise
// (nil stores none), relay publishes them.
func NewAgreements(db *docstore.DB, relay *outbox.Relay, emitter events.Renderer[*domain.Agreement]) *Agreements {
	docs := docstore.NewCollection[agreementDoc](db, AgreementsCollection, docstore.Options{
		Indexes:  AgreementIndexes(),
		NotFound: domain.AgreementNotFound,
		Conflict: domainerr.LockTimeout("payment agreement"),
		Outbox:   relay,
		Cache:    agreementCache,
		// Clients create agreements: a create retried with its Idempotency-Key stores none.
		IdempotentCreates: true,
	})
	return &Agreements{docs: docs, agreements: &docstore.Aggregates[agreementDoc, *domain.Agreement]{
		Docs: docs, NotFound: domain.AgreementNotFound, Of: agreementDoc.agreement, Set: (*agreementDoc).set,
		Events: emitter, Cached: true,
	}}
}

// agreementCache is how many agreements the process keeps as it last read or wrote them: every
// attempt and every create reads its agreement, and on the embedded store the copy answers
// (docstore Current: the Aggregates are Cached).
const agreementCache = 10000

// AgreementIndexes are the indexes the agreement queries rely on: lists by account and mode
// (and status), newest first; the reconciler's unfinished cascades.
func AgreementIndexes() []mongo.IndexModel {
	cascading := docstore.Index("cascading", "cascading")
	cascading.Options.SetSparse(true)
	return []mongo.IndexModel{
		docstore.ListIndex("account_livemode_id"),
		docstore.ListIndex("account_livemode_status_id", "status"),
		cascading,
	}
}

// EnsureIndexes declares AgreementIndexes.
func (r *Agreements) EnsureIndexes(ctx context.Context) error {
	return r.docs.EnsureIndexes(ctx)
}

// agreementDoc is the stored form; created is Unix seconds (the API's unit and docstore's
// created filters'). The method tokens are stored whole: they are the processor's references,
// and the API shows only their last four characters.
type agreementDoc struct {
	docstore.Meta `bson:",inline"`
	Account       string            `bson:"account"`
	Livemode      bool              `bson:"livemode"`
	Status        string            `bson:"status"`
	TenantName    string            `bson:"tenant_name"`
	TenantEmail   string            `bson:"tenant_email"`
	Methods       []methodDoc       `bson:"payment_methods"`
	Acceptance    *acceptanceDoc    `bson:"acceptance,omitempty"`
	Metadata      docstore.Metadata `bson:"metadata"`
	Created       int64             `bson:"created"`
	CancelledAt   *time.Time        `bson:"cancelled_at,omitempty"`
	Cascading     bool              `bson:"cascading,omitempty"`
}

type methodDoc struct {
	ID          string `bson:"id"`
	Type        string `bson:"type"`
	Token       string `bson:"token"`
	Preferred   bool   `bson:"preferred"`
	Status      string `bson:"status"`
	FailureCode string `bson:"failure_code,omitempty"`
}

type acceptanceDoc struct {
	AcceptedAt time.Time `bson:"accepted_at"`
	IPAddress  string    `bson:"ip_address,omitempty"`
	UserAgent  string    `bson:"user_agent,omitempty"`
}

// OwnedBy implements docstore.Owned.
func (d agreementDoc) OwnedBy(account string, livemode bool) bool {
	return d.Account == account && d.Livemode == livemode
}

func (d *agreementDoc) set(a *domain.Agreement) {
	s := a.State()
	d.ID, d.Account, d.Livemode, d.Status = s.ID, s.Account, s.Livemode, string(s.Status)
	d.TenantName, d.TenantEmail = s.Tenant.Name, s.Tenant.Email
	d.Methods = make([]methodDoc, len(s.Methods))
	for i, m := range s.Methods {
		d.Methods[i] = methodDoc{ID: m.ID, Type: string(m.Type), Token: m.Token, Preferred: m.Preferred, Status: string(m.Status), FailureCode: m.FailureCode}
	}
	d.Acceptance = nil
	if s.Acceptance != nil {
		d.Acceptance = &acceptanceDoc{AcceptedAt: s.Acceptance.AcceptedAt.UTC(), IPAddress: s.Acceptance.IPAddress, UserAgent: s.Acceptance.UserAgent}
	}
	d.Metadata, d.Created = docstore.MetadataOf(s.Metadata), s.Created.Unix()
	d.CancelledAt, d.Cascading = docstore.TimePtr(s.CancelledAt), s.Cascading
}

// agreement returns the agreement d holds, sharing no memory with it.
func (d agreementDoc) agreement() *domain.Agreement {
	methods := make([]domain.Method, len(d.Methods))
	for i, m := range d.Methods {
		methods[i] = domain.Method{ID: m.ID, Type: domain.MethodType(m.Type), Token: m.Token, Preferred: m.Preferred,
			Status: domain.MethodStatus(m.Status), FailureCode: m.FailureCode}
	}
	var acc *domain.Acceptance
	if d.Acceptance != nil {
		acc = &domain.Acceptance{AcceptedAt: d.Acceptance.AcceptedAt.UTC(), IPAddress: d.Acceptance.IPAddress, UserAgent: d.Acceptance.UserAgent}
	}
	return domain.RehydrateAgreement(domain.AgreementState{
		ID: d.ID, Account: d.Account, Livemode: d.Livemode, Status: domain.AgreementStatus(d.Status),
		Tenant: domain.Tenant{Name: d.TenantName, Email: d.TenantEmail}, Methods: methods, Acceptance: acc,
		Metadata: d.Metadata.Map(), Created: time.Unix(d.Created, 0), CancelledAt: docstore.TimeOf(d.CancelledAt),
		Cascading: d.Cascading,
	})
}

// Create implements domain.AgreementRepository.
func (r *Agreements) Create(ctx context.Context, a *domain.Agreement) (*domain.Agreement, error) {
	ins, err := r.agreements.InsertOnce(ctx, []*domain.Agreement{a})
	if err != nil {
		return nil, fmt.Errorf("insert payment agreement: %w", err)
	}
	if !ins[0].New && !ins[0].Replay {
		return nil, fmt.Errorf("insert payment agreement: %s is stored already", a.ID())
	}
	return ins[0].Stored, nil
}

// Get implements domain.AgreementRepository.
func (r *Agreements) Get(ctx context.Context, id, account string, livemode bool) (*domain.Agreement, error) {
	return r.agreements.Get(ctx, id, account, livemode)
}

// Load implements domain.AgreementRepository.
func (r *Agreements) Load(ctx context.Context, id string) (*domain.Agreement, error) {
	return r.agreements.Load(ctx, id)
}

// Update implements domain.AgreementRepository.
func (r *Agreements) Update(ctx context.Context, id, account string, livemode bool, fn func(*domain.Agreement) error) (*domain.Agreement, error) {
	return r.agreements.Update(ctx, id, account, livemode, fn)
}

// UpdateAny implements domain.AgreementRepository.
func (r *Agreements) UpdateAny(ctx context.Context, id string, fn func(*domain.Agreement) error) (*domain.Agreement, error) {
	return r.agreements.UpdateAny(ctx, id, fn)
}

// List implements domain.AgreementRepository.
func (r *Agreements) List(ctx context.Context, account string, livemode bool, f domain.AgreementFilter, p listing.Params) ([]*domain.Agreement, bool, error) {
	filter := bson.D{{Key: "account", Value: account}, {Key: "livemode", Value: livemode}}
	if f.Status != "" {
		filter = append(filter, bson.E{Key: "status", Value: string(f.Status)})
	}
	docs, hasMore, err := r.docs.Page(ctx, filter, p)
	if err != nil {
		return nil, false, err
	}
	out := make([]*domain.Agreement, len(docs))
	for i, d := range docs {
		out[i] = d.agreement()
	}
	return out, hasMore, nil
}

// Cascading implements domain.AgreementRepository.
func (r *Agreements) Cascading(ctx context.Context, limit int) ([]*domain.Agreement, error) {
	docs, err := r.docs.Find(ctx, bson.D{{Key: "cascading", Value: true}}, options.Find().SetLimit(int64(limit)))
	if err != nil {
		return nil, err
	}
	out := make([]*domain.Agreement, len(docs))
	for i, d := range docs {
		out[i] = d.agreement()
	}
	return out, nil
}
