// Package mongo stores collection cases and the records of their files in MongoDB, one
// document per aggregate keyed by its id ("collection_cases", "case_files"), each with its
// outbox of events not yet published (kept by libs/docstore), and the files' bytes in GridFS
// (bucket "case_file_contents").
package mongo

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"rentalplatform/libs/docstore"
	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/events"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/outbox"

	"rentalplatform/collections-svc/internal/domain"
)

// Collection names.
const (
	CasesCollection = "collection_cases"
	FilesCollection = "case_files"
)

// caseDocCache bounds the case documents a process keeps as last read or written
// (docstore.Options.Cache; each leaves after two minutes).
const caseDocCache = 4096

// Cases implements domain.CaseRepository.
type Cases struct {
	docs  *docstore.Collection[caseDoc]
	cases *docstore.Aggregates[caseDoc, *domain.Case]
}

var _ domain.CaseRepository = (*Cases)(nil)

// NewCases returns the case store of db: emitter renders the events cases raise, relay
// publishes them.
func NewCases(db *docstore.DB, relay *outbox.Relay, emitter events.Renderer[*domain.Case]) *Cases {
	docs := docstore.NewCollection[caseDoc](db, CasesCollection, docstore.Options{
		Indexes:  CaseIndexes(),
		NotFound: domain.CaseNotFound,
		Conflict: domainerr.LockTimeout("collection case"),
		Outbox:   relay,
		// A case's changes start from the stored document, and a list page fetches the cases
		// its filter found: kept here, neither reads the store again for a recent case (on
		// the embedded store each read is a find that decodes the stored JSON, 7 ms of the
		// store's CPU per page of the filtered list before).
		Cache: caseDocCache,
		// Clients create them: a create retried with its Idempotency-Key stores none.
		IdempotentCreates: true,
	})
	return &Cases{docs: docs, cases: &docstore.Aggregates[caseDoc, *domain.Case]{
		Docs: docs, NotFound: domain.CaseNotFound, Of: caseDoc.aggregate, Set: (*caseDoc).set, Events: emitter,
	}}
}

// CaseIndexes are the indexes the case queries rely on. References are unique per account and
// mode (the index decides between concurrent creates). Every list is by account and mode,
// newest first (_id descending); each filter has an index with its field between the two, so a
// list with one filter reads only matching cases in order, and a list with several is served
// by the most selective one (MongoDB's planner picks it) with the others checked on its
// candidates. created bounds are a range on created: the created index finds the matches,
// but its order is (created, _id), not the list's _id order, so MongoDB sorts those matches
// (the limit + 1 newest kept, a top-k sort) unless the planner prefers walking
// account_livemode_id newest first and checking created on each, which it does for recent
// windows. Either is bounded by the window's size; docs/api.md says so.
func CaseIndexes() []mongo.IndexModel {
	reference := docstore.Index("account_livemode_reference", "account", "livemode", "reference")
	reference.Options.SetUnique(true)
	return []mongo.IndexModel{
		reference,
		docstore.ListIndex("account_livemode_id"),
		docstore.ListIndex("account_livemode_status_id", "status"),
		docstore.ListIndex("account_livemode_debtor_country_id", "debtor.country"),
		docstore.ListIndex("account_livemode_debtor_type_id", "debtor.type"),
		docstore.ListIndex("account_livemode_creditor_reference_id", "creditor_reference"),
		docstore.ListIndex("account_livemode_created_id", "created"),
	}
}

// EnsureIndexes declares CaseIndexes.
func (r *Cases) EnsureIndexes(ctx context.Context) error {
	return r.docs.EnsureIndexes(ctx)
}

// caseDoc is the stored form; created is Unix seconds (the API's unit and docstore's created
// filters'), due_date and paid_at are dates at midnight UTC.
type caseDoc struct {
	docstore.Meta     `bson:",inline"`
	Account           string            `bson:"account"`
	Livemode          bool              `bson:"livemode"`
	Reference         string            `bson:"reference"`
	Status            string            `bson:"status"`
	CloseCode         string            `bson:"close_code,omitempty"`
	AmountToRecover   int64             `bson:"amount_to_recover"`
	Remainder         int64             `bson:"remainder"`
	Currency          string            `bson:"currency"`
	Debtor            debtorDoc         `bson:"debtor"`
	Partner           partnerDoc        `bson:"collection_partner"`
	CreditorReference string            `bson:"creditor_reference,omitempty"`
	DueDate           time.Time         `bson:"due_date"`
	Metadata          docstore.Metadata `bson:"metadata"`
	Created           int64             `bson:"created"`
	Payments          []paymentDoc      `bson:"payments,omitempty"`
}

type debtorDoc struct {
	Type          string     `bson:"type"`
	Name          string     `bson:"name"`
	ContactPerson string     `bson:"contact_person,omitempty"`
	Email         string     `bson:"email,omitempty"`
	Phone         string     `bson:"phone,omitempty"`
	Address       addressDoc `bson:"address"`
	Country       string     `bson:"country"`
}

type addressDoc struct {
	Line1      string `bson:"line1"`
	City       string `bson:"city"`
	PostalCode string `bson:"postal_code"`
	Country    string `bson:"country"`
}

// partnerDoc is the partner the case was submitted to, kept with the case: a later change of
// configuration does not move existing cases.
type partnerDoc struct {
	Name  string `bson:"name"`
	Email string `bson:"email"`
	Phone string `bson:"phone"`
	Site  string `bson:"site"`
}

type paymentDoc struct {
	ID        string    `bson:"id"`
	Amount    int64     `bson:"amount"`
	PaidAt    time.Time `bson:"paid_at"`
	Reference string    `bson:"reference,omitempty"`
	Created   int64     `bson:"created"`
	Key       string    `bson:"key,omitempty"` // the Idempotency-Key that recorded it
}

// OwnedBy implements docstore.Owned.
func (d caseDoc) OwnedBy(account string, livemode bool) bool {
	return d.Account == account && d.Livemode == livemode
}

func (d *caseDoc) set(c *domain.Case) {
	s := c.State()
	d.ID, d.Account, d.Livemode, d.Reference = s.ID, s.Account, s.Livemode, s.Reference
	d.Status, d.CloseCode = string(s.Status), string(s.CloseCode)
	d.AmountToRecover, d.Remainder, d.Currency = s.AmountToRecover, s.Remainder, s.Currency
	db := s.Debtor
	d.Debtor = debtorDoc{Type: string(db.Type), Name: db.Name, ContactPerson: db.ContactPerson, Email: db.Email, Phone: db.Phone,
		Address: addressDoc{Line1: db.Address.Line1, City: db.Address.City, PostalCode: db.Address.PostalCode, Country: db.Address.Country},
		Country: db.Country}
	d.Partner = partnerDoc{Name: s.Partner.Name, Email: s.Partner.Email, Phone: s.Partner.Phone, Site: s.Partner.Site}
	d.CreditorReference, d.DueDate = s.CreditorReference, s.DueDate.UTC()
	d.Metadata, d.Created = docstore.MetadataOf(s.Metadata), s.Created.Unix()
	d.Payments = make([]paymentDoc, len(s.Payments))
	for i, p := range s.Payments {
		d.Payments[i] = paymentDoc{ID: p.ID, Amount: p.Amount, PaidAt: p.PaidAt.UTC(), Reference: p.Reference, Created: p.Created.Unix(), Key: p.Key}
	}
}

func (d caseDoc) aggregate() *domain.Case {
	db := d.Debtor
	payments := make([]domain.Payment, len(d.Payments))
	for i, p := range d.Payments {
		payments[i] = domain.Payment{ID: p.ID, Amount: p.Amount, PaidAt: p.PaidAt.UTC(), Reference: p.Reference, Created: time.Unix(p.Created, 0).UTC(), Key: p.Key}
	}
	return domain.RehydrateCase(domain.CaseState{
		ID: d.ID, Account: d.Account, Livemode: d.Livemode, Reference: d.Reference,
		Status: domain.Status(d.Status), CloseCode: domain.CloseCode(d.CloseCode),
		AmountToRecover: d.AmountToRecover, Remainder: d.Remainder, Currency: d.Currency,
		Debtor: domain.Debtor{Type: domain.DebtorType(db.Type), Name: db.Name, ContactPerson: db.ContactPerson, Email: db.Email, Phone: db.Phone,
			Address: domain.Address{Line1: db.Address.Line1, City: db.Address.City, PostalCode: db.Address.PostalCode, Country: db.Address.Country},
			Country: db.Country},
		Partner:           domain.Partner{Name: d.Partner.Name, Email: d.Partner.Email, Phone: d.Partner.Phone, Site: d.Partner.Site},
		CreditorReference: d.CreditorReference, DueDate: d.DueDate, Metadata: d.Metadata.Map(),
		Created: time.Unix(d.Created, 0), Payments: payments,
	})
}

// Create implements domain.CaseRepository: a false Insert means the unique reference index
// refused it (the id is new).
func (r *Cases) Create(ctx context.Context, c *domain.Case) (*domain.Case, error) {
	ins, err := r.cases.InsertOnce(ctx, []*domain.Case{c})
	if err != nil {
		return nil, fmt.Errorf("insert collection case: %w", err)
	}
	if !ins[0].New && !ins[0].Replay {
		return nil, domain.ErrReferenceTaken
	}
	return ins[0].Stored, nil
}

// Get implements domain.CaseRepository.
func (r *Cases) Get(ctx context.Context, id, account string, livemode bool) (*domain.Case, error) {
	return r.cases.Get(ctx, id, account, livemode)
}

// GetByReference implements domain.CaseRepository (the unique index's query).
func (r *Cases) GetByReference(ctx context.Context, reference, account string, livemode bool) (*domain.Case, error) {
	d, found, err := r.docs.FindOne(ctx, bson.D{{Key: "account", Value: account}, {Key: "livemode", Value: livemode}, {Key: "reference", Value: reference}})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, domain.ReferenceNotFound(reference)
	}
	return d.aggregate(), nil
}

// Update implements domain.CaseRepository.
func (r *Cases) Update(ctx context.Context, id, account string, livemode bool, fn func(*domain.Case) error) (*domain.Case, error) {
	return r.cases.Update(ctx, id, account, livemode, fn)
}

// List implements domain.CaseRepository.
func (r *Cases) List(ctx context.Context, account string, livemode bool, f domain.CaseFilter, p listing.Params) ([]*domain.Case, bool, error) {
	filter := bson.D{{Key: "account", Value: account}, {Key: "livemode", Value: livemode}}
	for _, c := range []struct{ field, value string }{
		{"status", string(f.Status)},
		{"debtor.country", f.DebtorCountry},
		{"debtor.type", string(f.DebtorType)},
		{"creditor_reference", f.CreditorReference},
	} {
		if c.value != "" {
			filter = append(filter, bson.E{Key: c.field, Value: c.value})
		}
	}
	docs, hasMore, err := r.docs.Page(ctx, filter, p)
	if err != nil {
		return nil, false, err
	}
	out := make([]*domain.Case, len(docs))
	for i, d := range docs {
		out[i] = d.aggregate()
	}
	return out, hasMore, nil
}
