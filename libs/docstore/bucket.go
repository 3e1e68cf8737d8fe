package docstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// BlobChunkSize is the chunk size of a Bucket's blobs (the GridFS driver's default, 255 KiB).
const BlobChunkSize = 255 << 10

// chunksPerWrite is how many chunks one insert carries, and so how much of a blob an upload
// holds. One: measured with 4 (about 1 MiB per insert) collections-svc peaked at 52 MiB
// resident for a 25 MiB upload and 176 MiB for twenty concurrent 5 MiB ones, with 1 at 39 and
// 79 MiB, at the same MiB/s (make bench, collections).
const chunksPerWrite = 1

// ErrBlobMissing is the error of a read or delete of a blob that is not stored (or not
// committed yet).
var ErrBlobMissing = errors.New("docstore: no such blob")

// Bucket is a streamed blob store in GridFS: each blob's bytes under an id of the caller's, in
// the layout of the GridFS specification (a files document with length, chunkSize, uploadDate,
// filename and metadata; chunks with files_id, n and data), so the driver's GridFSBucket and
// any GridFS tool read and delete them.
//
// It writes and reads the chunks itself rather than through the driver's upload and download
// streams, for two measured reasons (docs/api.md, Files): the driver's upload stream holds a
// 16 MiB buffer per upload and sends it as one insert, which made collections-svc's resident
// memory peak at 177 MiB for one 25 MiB upload and 713 MiB for twenty concurrent 5 MiB ones;
// and its download stream finds chunks by {files_id} sorted by n, which the embedded store
// evaluates over every chunk of every file. Here a chunk's _id is "<blob id>.<n>" (zero-padded,
// so they sort by n), written one chunk per insert, and read one chunk at a time by _id (the
// primary key on every store).
type Bucket struct {
	name          string
	files, chunks *mongo.Collection
}

// Bucket returns the blob store called name: collections "<name>.files" and "<name>.chunks",
// in one database (see DB.Collection for where that is).
func (d *DB) Bucket(name string) *Bucket {
	home := d.home(name, name+".files")
	return &Bucket{name: name, files: home.Collection(name + ".files"), chunks: home.Collection(name + ".chunks")}
}

// Name is the bucket's name, the prefix of its two collections.
func (b *Bucket) Name() string { return b.name }

// Database is the database that holds the bucket's two collections: for GridFS tools, and
// the driver's GridFSBucket.
func (b *Bucket) Database() *mongo.Database { return b.files.Database() }

// EnsureIndexes declares the indexes the GridFS specification gives a bucket (the driver
// creates the same on its first write), so the driver and GridFS tools find chunks by file:
// one per command, since the embedded store fails a createIndexes naming several indexes that
// all exist.
func (b *Bucket) EnsureIndexes(ctx context.Context) error {
	if _, err := b.files.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys: bson.D{{Key: "filename", Value: int32(1)}, {Key: "uploadDate", Value: int32(1)}},
	}); err != nil {
		return fmt.Errorf("gridfs %s indexes: %w", b.name, err)
	}
	if _, err := b.chunks.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: "files_id", Value: int32(1)}, {Key: "n", Value: int32(1)}},
		Options: options.Index().SetUnique(true),
	}); err != nil {
		return fmt.Errorf("gridfs %s indexes: %w", b.name, err)
	}
	return nil
}

// chunkID is the _id of a blob's chunk n.
func chunkID(blob string, n int32) string { return fmt.Sprintf("%s.%06d", blob, n) }

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

// Create starts storing blob id, with its filename and metadata (stored beside it, for whoever
// looks at the store). Nothing is readable before the upload's Commit; Abort drops what was
// written. The upload writes under ctx.
func (b *Bucket) Create(ctx context.Context, id, filename string, metadata bson.D) *Upload {
	return &Upload{b: b, ctx: ctx, file: gridFile{ID: id, ChunkSize: BlobChunkSize, Filename: filename, Metadata: metadata},
		mem: make([]byte, chunksPerWrite*BlobChunkSize)}
}

// Upload writes one blob's chunks as its bytes arrive.
type Upload struct {
	b       *Bucket
	ctx     context.Context
	file    gridFile
	mem     []byte // the buffer: chunksPerWrite chunks
	buf     []byte // bytes not yet written, at the start of mem
	written int32  // chunks written
	done    bool
}

func (u *Upload) Write(p []byte) (int, error) {
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
func (u *Upload) flush(final bool) error {
	var docs []any
	for len(u.buf) >= BlobChunkSize || (final && len(u.buf) > 0) {
		k := min(len(u.buf), BlobChunkSize)
		docs = append(docs, gridChunk{ID: chunkID(u.file.ID, u.written), FileID: u.file.ID, N: u.written, Data: u.buf[:k]})
		u.buf = u.buf[k:]
		u.written++
		u.file.Length += int64(k)
	}
	if len(docs) > 0 {
		if _, err := u.b.chunks.InsertMany(u.ctx, docs); err != nil {
			return fmt.Errorf("gridfs: write chunks of %s: %w", u.file.ID, err)
		}
	}
	// What is left (less than a chunk) moves to the front of the buffer, which is reused.
	u.buf = u.mem[:copy(u.mem, u.buf)]
	return nil
}

// Commit makes the blob complete and readable.
func (u *Upload) Commit() error {
	if u.done {
		return errors.New("gridfs: upload ended already")
	}
	if err := u.flush(true); err != nil {
		return err
	}
	u.file.UploadDate = time.Now().UTC().Truncate(time.Millisecond)
	if _, err := u.b.files.InsertOne(u.ctx, u.file); err != nil {
		return fmt.Errorf("gridfs: complete %s: %w", u.file.ID, err)
	}
	u.done = true
	return nil
}

// Abort drops everything written, even once the upload's ctx has ended.
func (u *Upload) Abort() error {
	if u.done {
		return nil
	}
	u.done = true
	return u.b.deleteChunks(context.WithoutCancel(u.ctx), u.file.ID, u.written)
}

// deleteChunks removes chunks 0 to n-1 of a blob, each by _id.
func (b *Bucket) deleteChunks(ctx context.Context, blob string, n int32) error {
	for i := range n {
		if _, err := b.chunks.DeleteOne(ctx, bson.D{{Key: "_id", Value: chunkID(blob, i)}}); err != nil {
			return fmt.Errorf("gridfs: delete chunks of %s: %w", blob, err)
		}
	}
	return nil
}

func (b *Bucket) stat(ctx context.Context, id string) (gridFile, int32, error) {
	var f gridFile
	err := b.files.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&f)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return f, 0, fmt.Errorf("gridfs: %s: %w", id, ErrBlobMissing)
	}
	if err != nil {
		return f, 0, fmt.Errorf("gridfs: read %s: %w", id, err)
	}
	if f.ChunkSize <= 0 {
		return f, 0, fmt.Errorf("gridfs: %s has chunkSize %d", id, f.ChunkSize)
	}
	return f, int32((f.Length + int64(f.ChunkSize) - 1) / int64(f.ChunkSize)), nil
}

// Open returns a committed blob's content and its length (ErrBlobMissing when there is none).
// The reader must be closed; ctx bounds the whole read.
func (b *Bucket) Open(ctx context.Context, id string) (io.ReadCloser, int64, error) {
	f, chunks, err := b.stat(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	return &download{b: b, ctx: ctx, file: f, chunks: chunks}, f.Length, nil
}

// download reads a blob's chunks in order, one at a time, each checked against the files
// document's sizes.
type download struct {
	b      *Bucket
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
		if err := d.b.chunks.FindOne(d.ctx, bson.D{{Key: "_id", Value: chunkID(d.file.ID, d.next)}}).Decode(&ch); err != nil {
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

// Delete removes a committed blob: the files document first (the content stops being
// readable), then its chunks. A blob that is not there is deleted already.
func (b *Bucket) Delete(ctx context.Context, id string) error {
	_, chunks, err := b.stat(ctx, id)
	if errors.Is(err, ErrBlobMissing) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := b.files.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
		return fmt.Errorf("gridfs: delete %s: %w", id, err)
	}
	return b.deleteChunks(ctx, id, chunks)
}
