package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"time"

	"rentalplatform/libs/events"
	"rentalplatform/libs/ids"

	"rentalplatform/collections-svc/internal/domain"
)

// copyBuf is the size of the pieces a file is read and stored in.
const copyBuf = 32 << 10

// Upload is one file being attached to a case. The HTTP port drives it part by part as the
// multipart body arrives: BeginUpload, then File for the file part and the fields in any order,
// then Commit, or Abort (or AbortLater) whenever it gives up. The file's bytes go to the
// content store as they are read; only the first SniffLen bytes are held at once, to learn the
// file's type.
type Upload struct {
	s      *Service
	caller Caller
	c      *domain.Case
	id     string

	w           ContentWriter // nil until the file part arrives
	filename    string
	size        int64
	contentType string
	digest      string
}

// BeginUpload starts an upload to the caller's case. Closed cases take files too: evidence can
// arrive after the case ended.
func (s *Service) BeginUpload(ctx context.Context, caller Caller, caseID string) (*Upload, error) {
	c, err := s.GetCase(ctx, caller, caseID)
	if err != nil {
		return nil, err
	}
	return &Upload{s: s, caller: caller, c: c, id: s.IDs.New(ids.File)}, nil
}

// ReadError wraps an error met reading the client's upload (not storing it), so the port can
// answer it as the client's fault.
type ReadError struct{ Err error }

func (e *ReadError) Error() string { return "reading the upload: " + e.Err.Error() }
func (e *ReadError) Unwrap() error { return e.Err }

// File reads the file from r and stores it: its type is sniffed from its first bytes
// (FileTypeUnsupported when it is none of the accepted ones, before anything is stored), it is
// hashed as it passes, a text file is checked to be text throughout, and more than
// domain.MaxFileSize bytes is FileTooLarge. Errors reading r come back as *ReadError.
func (u *Upload) File(ctx context.Context, filename string, r io.Reader) error {
	head := make([]byte, domain.SniffLen)
	n, err := io.ReadFull(r, head)
	whole := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	if err != nil && !whole {
		return &ReadError{err}
	}
	head = head[:n]
	typ, err := domain.Sniff(head, filename, whole)
	if err != nil {
		return err
	}
	u.filename, u.contentType = domain.CleanFilename(filename), typ
	w, err := u.s.Contents.Create(ctx, u.id, ContentMeta{Account: u.c.Account(), Livemode: u.c.Livemode(), Case: u.c.ID(),
		Filename: u.filename, ContentType: typ})
	if err != nil {
		return err
	}
	u.w = w
	h := sha256.New()
	var text *domain.TextCheck
	sinks := []io.Writer{h, w}
	if domain.IsText(typ) {
		text = &domain.TextCheck{}
		sinks = append(sinks, text)
	}
	out := &counter{w: io.MultiWriter(sinks...)}
	if _, err := out.Write(head); err != nil {
		return err
	}
	if !whole {
		if err := u.copyRest(out, r, head[:min(len(head), copyBuf)]); err != nil {
			return err
		}
	}
	if text != nil {
		if err := text.Close(); err != nil {
			return err
		}
	}
	u.size, u.digest = out.n, hexSum(h)
	return nil
}

// copyRest copies the rest of the file from r to out, reusing buf, and stops at the first
// byte past the size limit.
func (u *Upload) copyRest(out *counter, r io.Reader, buf []byte) error {
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if out.n+int64(n) > domain.MaxFileSize {
				return domain.FileTooLarge()
			}
			if _, werr := out.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return &ReadError{err}
		}
	}
}

// FileFields are the client's fields of an upload; nil: not sent.
type FileFields struct {
	DocumentType *string
	Description  *string
}

// HasFile reports whether the file part was stored.
func (u *Upload) HasFile() bool { return u.w != nil }

// Commit checks the fields, completes the stored content and records the file with its
// case_file.created event. On error the content is dropped and nothing is recorded.
func (u *Upload) Commit(ctx context.Context, in FileFields) (*domain.File, error) {
	f, err := domain.NewFile(domain.NewFileParams{
		ID: u.id, Account: u.c.Account(), Livemode: u.c.Livemode(), Case: u.c.ID(), Created: u.s.Now(),
		Filename: u.filename, Size: u.size, ContentType: u.contentType, SHA256: u.digest,
		DocumentType: in.DocumentType, Description: in.Description,
	})
	if err != nil {
		return nil, err
	}
	w := u.w
	if err := w.Commit(); err != nil {
		return nil, err
	}
	u.w = nil // committed: Abort no longer drops it; a failed record below deletes it
	stored, err := u.s.Files.Create(events.CausedBy(ctx, u.caller), f)
	if err != nil || stored.ID() != f.ID() {
		// Not recorded, or an upload retried under its Idempotency-Key, answered with the file
		// the first recorded: the content just streamed is nobody's.
		if derr := u.s.Contents.Delete(context.WithoutCancel(ctx), f.ID()); derr != nil {
			u.s.Log.WarnContext(ctx, "deleting the content of a file whose record was not stored", "file", f.ID(), "error", derr.Error())
		}
	}
	if err != nil {
		return nil, err
	}
	return stored, nil
}

// Abort drops whatever was stored of the file. It is safe to call after Commit (it does
// nothing then) and more than once.
func (u *Upload) Abort(ctx context.Context) {
	if u.w == nil {
		return
	}
	if err := u.w.Abort(); err != nil {
		u.s.Log.WarnContext(ctx, "dropping an upload's content", "file", u.id, "error", err.Error())
	}
	u.w = nil
}

// AbortLater is Abort in the background, for a refusal whose answer should not wait for the
// stored chunks to be deleted (a refused 25 MiB upload has a hundred; on a loaded machine the
// deletes took longer than the gateway waits for an answer). Shutdown waits for it (Drain).
func (u *Upload) AbortLater(ctx context.Context) {
	if u.w == nil {
		return
	}
	u.s.cleanups.Go(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		u.Abort(ctx)
	})
}

// cleanupTimeout bounds dropping one refused upload's content.
const cleanupTimeout = 2 * time.Minute

// Drain waits until the refused uploads' content dropped in the background is gone, or ctx
// ends (shutdown, before the store closes). Content not dropped by then stays behind as
// unreferenced chunks, as after a crash (docs/api.md, Files): that is logged, and does not
// fail the shutdown.
func (s *Service) Drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.cleanups.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.Log.WarnContext(ctx, "shutting down before every refused upload's content was dropped; its chunks stay unreferenced")
	}
	return nil
}

// counter counts what passes to w.
type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }
