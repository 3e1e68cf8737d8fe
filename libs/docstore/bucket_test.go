package docstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/docstore"
)

// TestBucket: the GridFS layout on this store: bytes up and back, intact, across several
// chunks and writes of every size; nothing readable before Commit; Abort and Delete leave
// nothing; and the driver's own GridFSBucket reads and deletes what was written.
func TestBucket(t *testing.T) {
	db, err := docstore.Open(t.Context(), testkit.MongoDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	b := db.Bucket("blobs")
	ctx := t.Context()
	for range 2 { // at every start
		if err := b.EnsureIndexes(ctx); err != nil {
			t.Fatal(err)
		}
	}
	put := func(id string, body []byte, piece int) {
		t.Helper()
		w := b.Create(ctx, id, "x.pdf", bson.D{{Key: "owner", Value: "acct_1"}})
		for off := 0; off < len(body); off += piece {
			if _, err := w.Write(body[off:min(off+piece, len(body))]); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := b.Open(ctx, id); !errors.Is(err, docstore.ErrBlobMissing) {
			t.Fatalf("%s readable before Commit: %v", id, err)
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	get := func(id string) []byte {
		t.Helper()
		r, n, err := b.Open(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		got, err := io.ReadAll(r)
		if err != nil || int64(len(got)) != n {
			t.Fatalf("%s: read %d of %d: %v", id, len(got), n, err)
		}
		return got
	}
	driver := b.Database().GridFSBucket(options.GridFSBucket().SetName(b.Name()))
	const chunk = docstore.BlobChunkSize
	for i, size := range []int{0, 1, chunk, chunk + 1, 4*chunk - 1, 4 * chunk, 3<<20 + 12345} {
		body := make([]byte, size)
		_, _ = rand.Read(body)
		id := fmt.Sprintf("blob_%d", i)
		put(id, body, []int{1000, 100_000, 7 << 20}[i%3])
		if got := get(id); !bytes.Equal(got, body) {
			t.Fatalf("%d bytes: read back differs", size)
		}
		var viaDriver bytes.Buffer
		if _, err := driver.DownloadToStream(ctx, id, &viaDriver); err != nil || !bytes.Equal(viaDriver.Bytes(), body) {
			t.Fatalf("%d bytes: the driver's bucket reads %d bytes, equal %v: %v", size, viaDriver.Len(), bytes.Equal(viaDriver.Bytes(), body), err)
		}
	}
	if err := driver.Delete(ctx, "blob_6"); err != nil {
		t.Fatalf("the driver's bucket deletes a blob: %v", err)
	}
	aborted := b.Create(ctx, "blob_aborted", "y.pdf", nil)
	_, _ = aborted.Write(make([]byte, 2<<20))
	if err := aborted.Abort(); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if err := b.Delete(ctx, fmt.Sprintf("blob_%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Delete(ctx, "blob_never"); err != nil {
		t.Fatalf("deleting what is not there: %v", err)
	}
	for _, coll := range []string{".chunks", ".files"} {
		n, err := b.Database().Collection(b.Name()+coll).CountDocuments(context.WithoutCancel(ctx), bson.D{})
		if err != nil || n != 0 {
			t.Fatalf("%d documents left in %s after Abort and Delete: %v", n, coll, err)
		}
	}
	if _, _, err := b.Open(ctx, "blob_1"); !errors.Is(err, docstore.ErrBlobMissing) {
		t.Fatalf("deleted content: %v", err)
	}
}
