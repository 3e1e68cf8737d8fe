package mongo

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"rentalplatform/libs/docstore"
	"rentalplatform/libs/events"
	"rentalplatform/libs/listing"
	"rentalplatform/libs/outbox"

	"rentalplatform/collections-svc/internal/domain"
)

// Files implements domain.FileRepository: the records of case files (their bytes are in
// GridFS, Contents).
type Files struct {
	docs  *docstore.Collection[fileDoc]
	files *docstore.Aggregates[fileDoc, *domain.File]
}

var _ domain.FileRepository = (*Files)(nil)

// NewFiles returns the file record store of db: emitter renders case_file.created, relay
// publishes it.
func NewFiles(db *docstore.DB, relay *outbox.Relay, emitter events.Renderer[*domain.File]) *Files {
	docs := docstore.NewCollection[fileDoc](db, FilesCollection, docstore.Options{
		Indexes:  FileIndexes(),
		NotFound: domain.FileNotFound,
		Outbox:   relay,
		// Clients create them: a create retried with its Idempotency-Key stores none.
		IdempotentCreates: true,
	})
	return &Files{docs: docs, files: &docstore.Aggregates[fileDoc, *domain.File]{
		Docs: docs, NotFound: domain.FileNotFound, Of: fileDoc.file, Set: (*fileDoc).set, Events: emitter,
	}}
}

// FileIndexes back the list of a case's files, newest first.
func FileIndexes() []mongo.IndexModel {
	return []mongo.IndexModel{docstore.ListIndex("account_livemode_case_id", "collection_case")}
}

// EnsureIndexes declares FileIndexes.
func (r *Files) EnsureIndexes(ctx context.Context) error {
	return r.docs.EnsureIndexes(ctx)
}

type fileDoc struct {
	docstore.Meta `bson:",inline"`
	Account       string `bson:"account"`
	Livemode      bool   `bson:"livemode"`
	Case          string `bson:"collection_case"`
	DocumentType  string `bson:"document_type"`
	Description   string `bson:"description,omitempty"`
	Filename      string `bson:"filename"`
	Size          int64  `bson:"size"`
	ContentType   string `bson:"content_type"`
	SHA256        string `bson:"sha256"`
	Created       int64  `bson:"created"`
}

// OwnedBy implements docstore.Owned.
func (d fileDoc) OwnedBy(account string, livemode bool) bool {
	return d.Account == account && d.Livemode == livemode
}

func (d *fileDoc) set(f *domain.File) {
	s := f.State()
	*d = fileDoc{Meta: d.Meta, Account: s.Account, Livemode: s.Livemode, Case: s.Case, DocumentType: string(s.DocumentType),
		Description: s.Description, Filename: s.Filename, Size: s.Size, ContentType: s.ContentType, SHA256: s.SHA256,
		Created: s.Created.Unix()}
	d.ID = s.ID
}

// Create implements domain.FileRepository.
func (r *Files) Create(ctx context.Context, f *domain.File) (*domain.File, error) {
	ins, err := r.files.InsertOnce(ctx, []*domain.File{f})
	if err != nil {
		return nil, fmt.Errorf("insert case file: %w", err)
	}
	if !ins[0].New && !ins[0].Replay {
		return nil, fmt.Errorf("insert case file: %s is stored already", f.ID())
	}
	return ins[0].Stored, nil
}

func (d fileDoc) file() *domain.File {
	return domain.RehydrateFile(domain.FileState{ID: d.ID, Account: d.Account, Livemode: d.Livemode, Case: d.Case,
		DocumentType: domain.DocumentType(d.DocumentType), Description: d.Description, Filename: d.Filename, Size: d.Size,
		ContentType: d.ContentType, SHA256: d.SHA256, Created: time.Unix(d.Created, 0)})
}

// Get implements domain.FileRepository: by _id, with the case and owner checked in code.
func (r *Files) Get(ctx context.Context, id, caseID, account string, livemode bool) (*domain.File, error) {
	d, err := r.docs.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	f := d.file()
	if !f.Owned(caseID, account, livemode) {
		return nil, domain.FileNotFound(id)
	}
	return f, nil
}

// List implements domain.FileRepository.
func (r *Files) List(ctx context.Context, caseID, account string, livemode bool, p listing.Params) ([]*domain.File, bool, error) {
	docs, hasMore, err := r.docs.Page(ctx, bson.D{{Key: "account", Value: account}, {Key: "livemode", Value: livemode}, {Key: "collection_case", Value: caseID}}, p)
	if err != nil {
		return nil, false, err
	}
	out := make([]*domain.File, len(docs))
	for i, d := range docs {
		out[i] = d.file()
	}
	return out, hasMore, nil
}
