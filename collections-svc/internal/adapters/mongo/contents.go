package mongo

import (
	"context"
	"errors"
	"fmt"
	"io"

	"go.mongodb.org/mongo-driver/v2/bson"

	"rentalplatform/collections-svc/internal/app"
	"rentalplatform/collections-svc/internal/domain"
	"rentalplatform/libs/docstore"
)

// ContentsBucket is the blob store of case file contents (docstore.Bucket, GridFS): collections
// "case_file_contents.files" and "case_file_contents.chunks".
const ContentsBucket = "case_file_contents"

// Contents implements app.Contents in a docstore.Bucket: each file's bytes under its case file
// id, with whose they are as the blob's metadata.
type Contents struct{ bucket *docstore.Bucket }

var _ app.Contents = (*Contents)(nil)

// NewContents returns the content store of db.
func NewContents(db *docstore.DB) *Contents { return &Contents{bucket: db.Bucket(ContentsBucket)} }

// EnsureIndexes declares the bucket's indexes.
func (c *Contents) EnsureIndexes(ctx context.Context) error { return c.bucket.EnsureIndexes(ctx) }

// Create implements app.Contents.
func (c *Contents) Create(ctx context.Context, id string, meta app.ContentMeta) (app.ContentWriter, error) {
	return c.bucket.Create(ctx, id, meta.Filename, bson.D{
		{Key: "account", Value: meta.Account}, {Key: "livemode", Value: meta.Livemode},
		{Key: "collection_case", Value: meta.Case}, {Key: "content_type", Value: meta.ContentType},
	}), nil
}

// Open implements app.Contents. A record whose content is gone is a missing file: the upload
// stores its content before its record, so only a loss of data gets there.
func (c *Contents) Open(ctx context.Context, id string) (io.ReadCloser, int64, error) {
	r, n, err := c.bucket.Open(ctx, id)
	if errors.Is(err, docstore.ErrBlobMissing) {
		return nil, 0, fmt.Errorf("%v: %w", err, domain.FileNotFound(id))
	}
	return r, n, err
}

// Delete implements app.Contents.
func (c *Contents) Delete(ctx context.Context, id string) error { return c.bucket.Delete(ctx, id) }
