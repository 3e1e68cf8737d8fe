package app

import (
	"context"
	"io"
)

// Contents stores the bytes of case files, under the file's id.
type Contents interface {
	// Create starts storing a new file's content; nothing is visible until the writer's
	// Commit, and Abort drops what was written.
	Create(ctx context.Context, id string, meta ContentMeta) (ContentWriter, error)
	// Open returns the content of a committed file and its length. The reader must be
	// closed; ctx bounds the whole read.
	Open(ctx context.Context, id string) (io.ReadCloser, int64, error)
	// Delete removes a committed file's content (an upload whose record could not be stored).
	Delete(ctx context.Context, id string) error
}

// ContentMeta is stored beside a file's bytes, so an operator looking at the store knows whose
// they are.
type ContentMeta struct {
	Account     string
	Livemode    bool
	Case        string
	Filename    string
	ContentType string
}

// ContentWriter receives a file's bytes as they arrive.
type ContentWriter interface {
	io.Writer
	// Commit makes the content complete and readable.
	Commit() error
	// Abort drops everything written.
	Abort() error
}
