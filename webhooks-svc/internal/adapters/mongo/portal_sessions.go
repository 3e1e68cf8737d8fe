package mongo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"rentalplatform/libs/docstore"

	"rentalplatform/webhooks-svc/internal/domain"
)

// PortalSessionsCollection is the name of the webhook portal sessions' collection.
const PortalSessionsCollection = "webhook_portal_sessions"

// PortalSessions implements domain.PortalSessionRepository: one document per session, keyed by
// its id, written once. Sessions raise no events.
type PortalSessions struct {
	docs *docstore.Collection[portalDoc]
}

var _ domain.PortalSessionRepository = (*PortalSessions)(nil)

// NewPortalSessions returns the portal session store of db.
func NewPortalSessions(db *docstore.DB) *PortalSessions {
	return &PortalSessions{docs: docstore.NewCollection[portalDoc](db, PortalSessionsCollection, docstore.Options{
		Indexes:  PortalSessionIndexes(),
		NotFound: domain.PortalSessionNotFound,
	})}
}

// PortalSessionIndexes is the purge's index. Sessions are read by _id alone.
func PortalSessionIndexes() []mongo.IndexModel {
	return []mongo.IndexModel{docstore.Index("expires_at", "expires_at")}
}

// EnsureIndexes declares the indexes, and where the store has TTL indexes one that removes a
// session at its expires_at (the periodic purge removes them where not).
func (r *PortalSessions) EnsureIndexes(ctx context.Context) error {
	if err := r.docs.EnsureIndexes(ctx); err != nil {
		return err
	}
	_, err := r.docs.EnsureTTL(ctx, "expires_at_ttl", "expires_at", 0)
	return err
}

// portalDoc is a stored session: the hash of its token, never the token.
type portalDoc struct {
	docstore.Meta `bson:",inline"`
	Account       string    `bson:"account"`
	Livemode      bool      `bson:"livemode"`
	Endpoint      string    `bson:"endpoint,omitempty"`
	Access        string    `bson:"access"`
	ReturnURL     string    `bson:"return_url,omitempty"`
	TokenHash     string    `bson:"token_sha256"`
	Created       time.Time `bson:"created"`
	ExpiresAt     time.Time `bson:"expires_at"`
}

// Create implements domain.PortalSessionRepository.
func (r *PortalSessions) Create(ctx context.Context, s *domain.PortalSession) error {
	st := s.State()
	created, err := r.docs.Insert(ctx, portalDoc{
		Meta: docstore.Meta{ID: st.ID}, Account: st.Account, Livemode: st.Livemode, Endpoint: st.Endpoint,
		Access: string(st.Access), ReturnURL: st.ReturnURL, TokenHash: st.TokenHash,
		Created: st.Created.UTC(), ExpiresAt: st.ExpiresAt.UTC(),
	})
	if err != nil {
		return err
	}
	if !created {
		return fmt.Errorf("webhook portal session %s: id taken", st.ID)
	}
	return nil
}

// Load implements domain.PortalSessionRepository.
func (r *PortalSessions) Load(ctx context.Context, id string) (*domain.PortalSession, error) {
	d, err := r.docs.Get(ctx, id)
	if err != nil {
		if errors.Is(err, domain.ErrPortalSessionNotFound) {
			return nil, domain.PortalSessionNotFound(id)
		}
		return nil, err
	}
	return domain.RehydratePortalSession(domain.PortalSessionState{
		ID: d.ID, Account: d.Account, Livemode: d.Livemode, Endpoint: d.Endpoint, Access: domain.PortalAccess(d.Access),
		ReturnURL: d.ReturnURL, TokenHash: d.TokenHash, Created: d.Created, ExpiresAt: d.ExpiresAt,
	}), nil
}

// Purge implements domain.PortalSessionRepository.
func (r *PortalSessions) Purge(ctx context.Context, before time.Time) (int64, error) {
	n, err := r.docs.DeleteMany(ctx, bson.D{{Key: "expires_at", Value: bson.D{{Key: "$lt", Value: before.UTC()}}}})
	if err != nil {
		return 0, fmt.Errorf("purge webhook portal sessions: %w", err)
	}
	return n, nil
}
