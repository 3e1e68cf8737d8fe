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

// requestCache is how many requests the process keeps as it last wrote them: an attempt reads
// its request, claims it and records it, and each write starts from the copy kept.
const requestCache = 20000

// Requests implements domain.RequestRepository.
type Requests struct {
	docs     *docstore.Collection[requestDoc]
	requests *docstore.Aggregates[requestDoc, *domain.Request]
}

var _ domain.RequestRepository = (*Requests)(nil)

// NewRequests returns the request store of db: emitter renders the events requests raise (nil
// stores none), relay publishes them.
func NewRequests(db *docstore.DB, relay *outbox.Relay, emitter events.Renderer[*domain.Request]) *Requests {
	docs := docstore.NewCollection[requestDoc](db, RequestsCollection, docstore.Options{
		Indexes:  RequestIndexes(),
		NotFound: domain.RequestNotFound,
		Conflict: domainerr.LockTimeout("payment request"),
		Outbox:   relay,
		Cache:    requestCache,
		// Clients create requests: a create retried with its Idempotency-Key stores none.
		IdempotentCreates: true,
	})
	return &Requests{docs: docs, requests: &docstore.Aggregates[requestDoc, *domain.Request]{
		Docs: docs, NotFound: domain.RequestNotFound, Of: requestDoc.request, Set: (*requestDoc).set,
		Events: emitter, Cached: true,
	}}
}

// RequestIndexes are the indexes the request queries rely on: lists by account and mode, alone
// or with the agreement or status filters (or both), newest first; an agreement's open
// requests (its cancellation's cascade); the reconciler's overdue attempts, stale claims and
// full pass.
func RequestIndexes() []mongo.IndexModel {
	return []mongo.IndexModel{
		docstore.ListIndex("account_livemode_id"),
		docstore.ListIndex("account_livemode_agreement_id", "payment_agreement"),
		docstore.ListIndex("account_livemode_status_id", "status"),
		docstore.ListIndex("account_livemode_agreement_status_id", "payment_agreement", "status"),
		docstore.Index("agreement_status", "payment_agreement", "status"),
		docstore.Index("status_due_at", "status", "due_at"),
		docstore.Index("status_claim_at", "status", "claim.at"),
		docstore.Index("status_id", "status", "_id"),
	}
}

// EnsureIndexes declares RequestIndexes.
func (r *Requests) EnsureIndexes(ctx context.Context) error {
	return r.docs.EnsureIndexes(ctx)
}

// requestDoc is the stored form. due_at and claim are the engine's: when the next attempt is
// due, and the attempt charging the request now.
type requestDoc struct {
	docstore.Meta `bson:",inline"`
	Account       string                  `bson:"account"`
	Livemode      bool                    `bson:"livemode"`
	Agreement     string                  `bson:"payment_agreement"`
	Amount        int64                   `bson:"amount"`
	Currency      string                  `bson:"currency"`
	Description   string                  `bson:"description,omitempty"`
	Metadata      docstore.Metadata       `bson:"metadata"`
	Created       int64                   `bson:"created"`
	Status        string                  `bson:"status"`
	MethodUsed    string                  `bson:"payment_method_used,omitempty"`
	FailureReason string                  `bson:"failure_reason,omitempty"`
	Attempts      int                     `bson:"attempts"`
	NextRetryAt   *time.Time              `bson:"next_retry_at,omitempty"`
	StopReason    string                  `bson:"retry_stop_reason,omitempty"`
	Tries         docstore.Packed[tryDoc] `bson:"attempt_log"`
	CancelledAt   *time.Time              `bson:"cancelled_at,omitempty"`
	NextAttempt   int                     `bson:"next_attempt,omitempty"`
	DueAt         *time.Time              `bson:"due_at,omitempty"`
	Claim         *claimDoc               `bson:"claim,omitempty"`
}

// tryDoc is one charge. Charges recorded before charges had ids have none stored: the domain
// derives theirs (domain.ChargeID), and the next write of the request stores it.
type tryDoc struct {
	ID          string    `bson:"id,omitempty"`
	Attempt     int       `bson:"attempt"`
	Method      string    `bson:"payment_method"`
	Succeeded   bool      `bson:"succeeded"`
	FailureCode string    `bson:"failure_code,omitempty"`
	At          time.Time `bson:"at"`
}

type claimDoc struct {
	Attempt int       `bson:"attempt"`
	Token   string    `bson:"token"`
	At      time.Time `bson:"at"`
}

// OwnedBy implements docstore.Owned.
func (d requestDoc) OwnedBy(account string, livemode bool) bool {
	return d.Account == account && d.Livemode == livemode
}

func (d *requestDoc) set(r *domain.Request) {
	s := r.State()
	d.ID, d.Account, d.Livemode, d.Agreement = s.ID, s.Account, s.Livemode, s.Agreement
	d.Amount, d.Currency, d.Description = s.Amount, s.Currency, s.Description
	d.Metadata, d.Created = docstore.MetadataOf(s.Metadata), s.Created.Unix()
	d.Status, d.MethodUsed, d.FailureReason, d.Attempts = string(s.Status), s.MethodUsed, s.FailureReason, s.Attempts
	d.NextRetryAt, d.StopReason, d.CancelledAt = docstore.TimePtr(s.NextRetryAt), string(s.StopReason), docstore.TimePtr(s.CancelledAt)
	d.Tries = make([]tryDoc, len(s.Tries))
	for i, t := range s.Tries {
		d.Tries[i] = tryDoc{ID: t.ID, Attempt: t.Attempt, Method: t.Method, Succeeded: t.Succeeded, FailureCode: t.FailureCode, At: t.At.UTC()}
	}
	d.NextAttempt, d.DueAt, d.Claim = s.NextAttempt, docstore.TimePtr(s.DueAt), nil
	if s.Claim != nil {
		d.Claim = &claimDoc{Attempt: s.Claim.Attempt, Token: s.Claim.Token, At: s.Claim.At.UTC()}
	}
}

// request returns the request d holds, sharing no memory with it.
func (d requestDoc) request() *domain.Request {
	tries := make([]domain.Try, len(d.Tries))
	for i, t := range d.Tries {
		tries[i] = domain.Try{ID: t.ID, Attempt: t.Attempt, Method: t.Method, Succeeded: t.Succeeded, FailureCode: t.FailureCode, At: t.At.UTC()}
	}
	var claim *domain.Claim
	if d.Claim != nil {
		claim = &domain.Claim{Attempt: d.Claim.Attempt, Token: d.Claim.Token, At: d.Claim.At.UTC()}
	}
	return domain.RehydrateRequest(domain.RequestState{
		ID: d.ID, Account: d.Account, Livemode: d.Livemode, Agreement: d.Agreement, Amount: d.Amount,
		Currency: d.Currency, Description: d.Description, Metadata: d.Metadata.Map(), Created: time.Unix(d.Created, 0),
		Status: domain.Status(d.Status), MethodUsed: d.MethodUsed, FailureReason: d.FailureReason, Attempts: d.Attempts,
		NextRetryAt: docstore.TimeOf(d.NextRetryAt), StopReason: domain.StopReason(d.StopReason), Tries: tries,
		CancelledAt: docstore.TimeOf(d.CancelledAt), NextAttempt: d.NextAttempt, DueAt: docstore.TimeOf(d.DueAt), Claim: claim,
	})
}

func requests(docs []requestDoc) []*domain.Request {
	out := make([]*domain.Request, len(docs))
	for i, d := range docs {
		out[i] = d.request()
	}
	return out
}

// Create implements domain.RequestRepository: one insert command for all of them.
func (r *Requests) Create(ctx context.Context, rs []*domain.Request) ([]*domain.Request, error) {
	ins, err := r.requests.InsertOnce(ctx, rs)
	if err != nil {
		return nil, fmt.Errorf("insert payment requests: %w", err)
	}
	out := make([]*domain.Request, len(ins))
	for i, in := range ins {
		if !in.New && !in.Replay {
			return nil, fmt.Errorf("insert payment requests: %s is stored already", rs[i].ID())
		}
		out[i] = in.Stored
	}
	return out, nil
}

// Get implements domain.RequestRepository.
func (r *Requests) Get(ctx context.Context, id, account string, livemode bool) (*domain.Request, error) {
	return r.requests.Get(ctx, id, account, livemode)
}

// Load implements domain.RequestRepository. It answers from the cache whenever it holds the
// request, on MongoDB too (docstore Cached, rather than Aggregates.Load's Current): the
// engine's writes are conditional on what they read, so a stale copy only costs a retry.
func (r *Requests) Load(ctx context.Context, id string) (*domain.Request, error) {
	d, err := r.docs.Cached(ctx, id)
	if err != nil {
		return nil, err
	}
	return d.request(), nil
}

// Update implements domain.RequestRepository.
func (r *Requests) Update(ctx context.Context, id, account string, livemode bool, fn func(*domain.Request) error) (*domain.Request, error) {
	return r.requests.Update(ctx, id, account, livemode, fn)
}

// Attempt implements domain.RequestRepository (docstore's Bracket): claim and record each
// change the request as loaded from the step's document and store it with the events it
// raised (Aggregates.Put).
func (r *Requests) Attempt(ctx context.Context, id string, claim func(*domain.Request) error,
	charge func(context.Context, *domain.Request) (domain.Charged, error),
	record func(*domain.Request, domain.Charged) error) (*domain.Request, domain.Charged, error) {
	d, c, err := docstore.Bracket(ctx, r.docs, id,
		func(d *requestDoc) error { return r.change(ctx, d, claim) },
		func(ctx context.Context, d requestDoc) (domain.Charged, error) { return charge(ctx, d.request()) },
		func(d *requestDoc, c domain.Charged) error {
			return r.change(ctx, d, func(q *domain.Request) error { return record(q, c) })
		})
	return d.request(), c, err
}

// change applies fn to the request d holds and stores the result in d with the events fn
// raised.
func (r *Requests) change(ctx context.Context, d *requestDoc, fn func(*domain.Request) error) error {
	q := d.request()
	if err := fn(q); err != nil {
		return err
	}
	return r.requests.Put(ctx, d, q)
}

// List implements domain.RequestRepository.
func (r *Requests) List(ctx context.Context, account string, livemode bool, f domain.RequestFilter, p listing.Params) ([]*domain.Request, bool, error) {
	filter := bson.D{{Key: "account", Value: account}, {Key: "livemode", Value: livemode}}
	if f.Agreement != "" {
		filter = append(filter, bson.E{Key: "payment_agreement", Value: f.Agreement})
	}
	if f.Status != "" {
		filter = append(filter, bson.E{Key: "status", Value: string(f.Status)})
	}
	docs, hasMore, err := r.docs.Page(ctx, filter, p)
	if err != nil {
		return nil, false, err
	}
	return requests(docs), hasMore, nil
}

var openStatuses = bson.D{{Key: "$in", Value: bson.A{string(domain.StatusPending), string(domain.StatusProcessing)}}}

// OpenFor implements domain.RequestRepository.
func (r *Requests) OpenFor(ctx context.Context, agreement string) ([]*domain.Request, error) {
	docs, err := r.docs.Find(ctx, bson.D{{Key: "payment_agreement", Value: agreement}, {Key: "status", Value: openStatuses}},
		options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, err
	}
	return requests(docs), nil
}

// Overdue implements domain.RequestRepository.
func (r *Requests) Overdue(ctx context.Context, dueBefore, claimedBefore time.Time, limit int) ([]*domain.Request, error) {
	docs, err := r.docs.Find(ctx, bson.D{
		{Key: "status", Value: openStatuses},
		{Key: "$or", Value: bson.A{
			bson.D{{Key: "claim", Value: nil}, {Key: "due_at", Value: bson.D{{Key: "$lte", Value: dueBefore.UTC()}}}},
			bson.D{{Key: "claim.at", Value: bson.D{{Key: "$lte", Value: claimedBefore.UTC()}}}},
		}},
	}, options.Find().SetSort(bson.D{{Key: "due_at", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, err
	}
	return requests(docs), nil
}

// Open implements domain.RequestRepository.
func (r *Requests) Open(ctx context.Context, after string, limit int) ([]*domain.Request, error) {
	filter := bson.D{{Key: "status", Value: openStatuses}}
	if after != "" {
		filter = append(filter, bson.E{Key: "_id", Value: bson.D{{Key: "$gt", Value: after}}})
	}
	docs, err := r.docs.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, err
	}
	return requests(docs), nil
}
