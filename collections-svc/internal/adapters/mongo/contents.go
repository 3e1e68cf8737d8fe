package mongo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/collections-svc/internal/app"
	"rentalplatform/collections-svc/internal/domain"
)

// ContentsBucket is the GridFS bucket of case file contents: collections
// "case_file_contents.files" and "case_file_contents.chunks".
const ContentsBucket = "case_file_contents"

// ChunkSize is the GridFS chunk size (the driver's default, 255 KiB).
const ChunkSize = 255 << 10

// chunksPerWrite is how many chunks one insert carries, and so how much of a file the writer
// holds. One: measured with 4 (about 1 MiB per insert) the service peaked at 52 MiB resident
// for a 25 MiB upload and 176 MiB for twenty concurrent 5 MiB ones, with 1 at 39 and 79 MiB,
// at the same MiB/s (make bench, collections).
const chunksPerWrite = 1

// Contents implements app.Contents in GridFS: each file's bytes under its case file id, in the
// layout of the GridFS specification (a files document with length, chunkSize, uploadDate,
// filename and metadata; chunks with files_id, n and data), so the driver's GridFSBucket and
// any GridFS tool read and delete them.
//
// It writes and reads the chunks itself rather than through the driver's upload and download
// streams, for two measured reasons (docs/api.md, Files): the driver's upload stream holds a
// 16 MiB buffer per upload and sends it as one insert, which made collections-svc's resident
// memory peak at 177 MiB for one 25 MiB upload and 713 MiB for twenty concurrent 5 MiB ones;
// and its download stream finds chunks by {files_id} sorted by n, which the embedded store
// evaluates over every chunk of every file. Here a chunk's _id is "<file id>.<n>" (zero-padded,
// so they sort by n), written one chunk per insert, and read one chunk at a time by _id (the
// primary key on every store).
type Contents struct {
	files, chunks *mongo.Collection
}

var _ app.Contents = (*Contents)(nil)

// NewContents returns the content store of db.
func NewContents(db *mongo.Database) *Contents {
	return &Contents{files: db.Collection(ContentsBucket + ".files"), chunks: db.Collection(ContentsBucket + ".chunks")}
}

// ContentIndexes are the indexes the GridFS specification gives a bucket (the driver creates
// the same on its first write), so the driver and GridFS tools find chunks by file.
func ContentIndexes() (files, chunks mongo.IndexModel) {
	return mongo.IndexModel{Keys: bson.D{{Key: "filename", Value: int32(1)}, {Key: "uploadDate", Value: int32(1)}}},
		mongo.IndexModel{Keys: bson.D{{Key: "files_id", Value: int32(1)}, {Key: "n", Value: int32(1)}}, Options: options.Index().SetUnique(true)}
}

// EnsureIndexes declares ContentIndexes (one per command: the embedded store fails a
// createIndexes naming several indexes that all exist).
func (c *Contents) EnsureIndexes(ctx context.Context) error {
	files, chunks := ContentIndexes()
	if _, err := c.files.Indexes().CreateOne(ctx, files); err != nil {
		return fmt.Errorf("gridfs indexes: %w", err)
	}
	if _, err := c.chunks.Indexes().CreateOne(ctx, chunks); err != nil {
		return fmt.Errorf("gridfs indexes: %w", err)
	}
	return nil
}

// chunkID is the _id of a file's chunk n.
func chunkID(file string, n int32) string { return fmt.Sprintf("%s.%06d", file, n) }

type gridChunk struct {
	ID     string `bson:"_id"`
	FileID string `bson:"files_id"`
	N      int32  `bson:"n"`
	Data   []byte `bson:"data"`
}

type gridFile struct {
	ID         string    `bson:"_id"`
	Length     int64     `bson:"length"`
	ChunkSize  int32     `bson:"chunkSize"`
	UploadDate time.Time `bson:"uploadDate"`
	Filename   string    `bson:"filename"`
	Metadata   bson.D    `bson:"metadata"`
}

// Create implements app.Contents. Nothing is readable before Commit writes the files document.
func (c *Contents) Create(ctx context.Context, id string, meta app.ContentMeta) (app.ContentWriter, error) {
	return &upload{c: c, ctx: ctx, file: gridFile{ID: id, ChunkSize: ChunkSize, Filename: meta.Filename, Metadata: bson.D{
		{Key: "account", Value: meta.Account}, {Key: "livemode", Value: meta.Livemode},
		{Key: "collection_case", Value: meta.Case}, {Key: "content_type", Value: meta.ContentType},
	}}, mem: make([]byte, chunksPerWrite*ChunkSize)}, nil
}

// upload writes one file's chunks as its bytes arrive.
type upload struct {
	c       *Contents
	ctx     context.Context
	file    gridFile
	mem     []byte // the buffer: chunksPerWrite chunks
	buf     []byte // bytes not yet written, at the start of mem
	written int32  // chunks written
	done    bool
}

func (u *upload) Write(p []byte) (int, error) {
	if u.done {
		return 0, errors.New("gridfs: write after the upload ended")
	}
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), len(u.mem)-len(u.buf))
		u.buf = append(u.mem[:len(u.buf)], p[:k]...)
		p = p[k:]
		if len(u.buf) == len(u.mem) {
			if err := u.flush(false); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

// flush writes the whole chunks held, and the last partial one when final.
func (u *upload) flush(final bool) error {
	var docs []any
	for len(u.buf) >= ChunkSize || (final && len(u.buf) > 0) {
		k := min(len(u.buf), ChunkSize)
		docs = append(docs, gridChunk{ID: chunkID(u.file.ID, u.written), FileID: u.file.ID, N: u.written, Data: u.buf[:k]})
		u.buf = u.buf[k:]
		u.written++
		u.file.Length += int64(k)
	}
	if len(docs) > 0 {
		if _, err := u.c.chunks.InsertMany(u.ctx, docs); err != nil {
			return fmt.Errorf("gridfs: write chunks of %s: %w", u.file.ID, err)
		}
	}
	// What is left (less than a chunk) moves to the front of the buffer, which is reused.
	u.buf = u.mem[:copy(u.mem, u.buf)]
	return nil
}

func (u *upload) Commit() error {
	if u.done {
		return errors.New("gridfs: upload ended already")
	}
	if err := u.flush(true); err != nil {
		return err
	}
	u.file.UploadDate = time.Now().UTC().Truncate(time.Millisecond)
	if _, err := u.c.files.InsertOne(u.ctx, u.file); err != nil {
		return fmt.Errorf("gridfs: complete %s: %w", u.file.ID, err)
	}
	u.done = true
	return nil
}

func (u *upload) Abort() error {
	if u.done {
		return nil
	}
	u.done = true
	return u.c.deleteChunks(context.WithoutCancel(u.ctx), u.file.ID, u.written)
}

// deleteChunks removes chunks 0 to n-1 of a file, each by _id.
func (c *Contents) deleteChunks(ctx context.Context, file string, n int32) error {
	for i := range n {
		if _, err := c.chunks.DeleteOne(ctx, bson.D{{Key: "_id", Value: chunkID(file, i)}}); err != nil {
			return fmt.Errorf("gridfs: delete chunks of %s: %w", file, err)
		}
	}
	return nil
}

func (c *Contents) stat(ctx context.Context, id string) (gridFile, int32, error) {
	var f gridFile
	err := c.files.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&f)
	if errors.Is(err, mongo.ErrNoDocuments) {
		// A record whose content is gone: the upload stores its content before its record,
		// so only a loss of data gets here; the caller sees the file as missing.
		return f, 0, fmt.Errorf("gridfs: content of %s missing: %w", id, domain.FileNotFound(id))
	}
	if err != nil {
		return f, 0, fmt.Errorf("gridfs: read %s: %w", id, err)
	}
	if f.ChunkSize <= 0 {
		return f, 0, fmt.Errorf("gridfs: %s has chunkSize %d", id, f.ChunkSize)
	}
	return f, int32((f.Length + int64(f.ChunkSize) - 1) / int64(f.ChunkSize)), nil
}

// Open implements app.Contents.
func (c *Contents) Open(ctx context.Context, id string) (io.ReadCloser, int64, error) {
	f, chunks, err := c.stat(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	return &download{c: c, ctx: ctx, file: f, chunks: chunks}, f.Length, nil
}

// download reads a file's chunks in order, one at a time, each checked against the files
// document's sizes.
type download struct {
	c      *Contents
	ctx    context.Context
	file   gridFile
	chunks int32
	next   int32
	buf    []byte
}

func (d *download) Read(p []byte) (int, error) {
	for len(d.buf) == 0 {
		if d.next == d.chunks {
			return 0, io.EOF
		}
		var ch gridChunk
		if err := d.c.chunks.FindOne(d.ctx, bson.D{{Key: "_id", Value: chunkID(d.file.ID, d.next)}}).Decode(&ch); err != nil {
			return 0, fmt.Errorf("gridfs: read chunk %d of %s: %w", d.next, d.file.ID, err)
		}
		want := int64(d.file.ChunkSize)
		if d.next == d.chunks-1 {
			want = d.file.Length - int64(d.next)*int64(d.file.ChunkSize)
		}
		if ch.N != d.next || int64(len(ch.Data)) != want {
			return 0, fmt.Errorf("gridfs: chunk %d of %s has %d bytes, want %d", d.next, d.file.ID, len(ch.Data), want)
		}
		d.buf = ch.Data
		d.next++
	}
	n := copy(p, d.buf)
	d.buf = d.buf[n:]
	return n, nil
}

func (d *download) Close() error { return nil }

// Delete implements app.Contents: the files document first (the content stops being
// readable), then its chunks.
func (c *Contents) Delete(ctx context.Context, id string) error {
	_, chunks, err := c.stat(ctx, id)
	if errors.Is(err, domain.ErrFileNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := c.files.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
		return fmt.Errorf("gridfs: delete %s: %w", id, err)
	}
	return c.deleteChunks(ctx, id, chunks)
}
