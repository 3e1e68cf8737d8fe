// Package mongostore runs FerretDB v1.24 in-process with its SQLite backend:
// a MongoDB wire-protocol server for development (`make run`) and tests on
// machines where MongoDB itself cannot be installed.
//
// It is not a MongoDB: no multi-document transactions, no TTL indexes, no
// change streams, and every filter other than {_id: value} is evaluated in Go
// over the whole collection (see DESIGN.md §6). Services never import this
// package; they only receive the URI.
package mongostore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Options configures Start.
type Options struct {
	// Dir is the directory that holds the SQLite files (one per database).
	// It is created if missing. Required.
	Dir string

	// Addr is the TCP listen address; "127.0.0.1:0" (a free port) if empty.
	Addr string

	// Logger receives FerretDB's logs. If nil, only errors are written to
	// stderr: FerretDB logs every error response it sends (including expected
	// ones such as duplicate-key errors) at WARN with a full document dump.
	Logger *slog.Logger
}

// Store is a running embedded FerretDB.
type Store struct {
	uri string

	cancel context.CancelFunc
	done   chan struct{} // closed when ferretdb.Run has returned
	runErr error         // Run's result; read only after done is closed

	closeOnce sync.Once
	indexed   chan struct{} // closed when maintainDatabases (indexes, checkpoints) has stopped
	listener  net.Listener  // the write gate's, where clients connect
	relayed   chan struct{} // closed when the write gate has closed every connection
	lock      *os.File      // holds the directory's lock (dirlock_unix.go) until Close
}

// newMu serialises ferretdb.New, which writes a process-wide variable
// (version.Get().Package) without synchronisation; unguarded, parallel tests
// that each start a store are a data race. It is the package's only global,
// and it exists only because FerretDB's is one.
var newMu sync.Mutex

// readyTimeout bounds the readiness check when ctx has no deadline of its own.
const readyTimeout = 30 * time.Second

// Start starts FerretDB and returns once it answers a MongoDB ping on its
// listener, so the URI is usable immediately.
//
// ctx bounds only the start-up; the server runs until Close.
func Start(ctx context.Context, opts Options) (*Store, error) {
	if opts.Dir == "" {
		return nil, errors.New("mongostore: Options.Dir is required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("mongostore: resolve dir %q: %w", opts.Dir, err)
	}
	// FerretDB parses the SQLite URI, then re-serialises the decoded path
	// without escaping it, so with these characters it silently opens files
	// somewhere else (measured: "x#y" writes to "x").
	if strings.ContainsAny(dir, "?#%") {
		return nil, fmt.Errorf("mongostore: dir %q: FerretDB cannot use a path containing '?', '#' or '%%'", dir)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("mongostore: create dir %q: %w", dir, err)
	}

	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started && lock != nil {
			lock.Close()
		}
	}()

	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	handler := slog.Handler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	if opts.Logger != nil {
		handler = opts.Logger.Handler()
	}
	logger := slog.New(newLazyHandler(handler))
	// What the repair mends is worth an operator's notice even where FerretDB's chatter is not.
	repairLog := opts.Logger
	if repairLog == nil {
		repairLog = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if err := repairDatabases(ctx, dir, repairLog); err != nil {
		return nil, fmt.Errorf("mongostore: dir %q: %w", dir, err)
	}

	// FerretDB wants a "file:" URI naming a directory with a trailing slash;
	// net/url escapes what needs it (spaces, for one).
	// synchronous(NORMAL) is SQLite's recommended setting in WAL mode (FerretDB's default
	// journal): the database cannot be corrupted, and a power cut loses at most the last
	// commits instead of every commit waiting for an fsync. That is the right trade for a
	// development store, and it lets one machine carry hundreds of events a second.
	// wal_autocheckpoint(0): the write-ahead log is checkpointed in the background instead
	// (idindex.go), not by whichever write commits the 1,000th page.
	// temp_store(memory): FerretDB runs every write in a transaction, so each insert or update
	// statement keeps a statement journal of the pages it changes. With temp files allowed,
	// SQLite gives that journal 64 KiB chunks, to spill to a file past 64 KiB; modernc's
	// allocator maps a fresh region for such a chunk and unmaps it when the statement ends
	// (its size class is otherwise unused), so every write paid an mmap, a munmap and the
	// kernel's zeroing of the pages: 10 % of the stores' CPU under the delivery bench. In
	// memory the journal takes 1 KiB chunks from the allocator's slabs. It holds the earlier
	// content of the existing pages one statement changes, which stays small: FerretDB updates
	// one document per statement, inserts up to 100 mostly into new pages (never journaled),
	// and deletes outside a transaction, with no statement journal.
	sqliteURL := (&url.URL{Scheme: "file", Path: dir + "/", RawQuery: "_pragma=synchronous(NORMAL)&_pragma=wal_autocheckpoint(0)&_pragma=temp_store(memory)"}).String()

	// Clients reach FerretDB through the write gate (writegate.go), which listens on addr.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mongostore: listen on %q: %w", addr, err)
	}

	newMu.Lock()
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: "127.0.0.1:0"},
		Handler:   "sqlite",
		SQLiteURL: sqliteURL,
		Logger:    logger,
	})
	newMu.Unlock()
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("mongostore: create FerretDB (dir %q, addr %q): %w", dir, addr, err)
	}

	// New already holds the bound socket, but connections are only accepted
	// (and the SQLite backend only released) inside Run, so Run must be
	// started even if the readiness check below fails.
	runCtx, cancel := context.WithCancel(context.Background())
	s := &Store{
		uri:      (&url.URL{Scheme: "mongodb", Host: ln.Addr().String(), Path: "/"}).String(),
		cancel:   cancel,
		done:     make(chan struct{}),
		listener: ln,
		relayed:  make(chan struct{}),
		lock:     lock,
	}
	started = true // from here s.Close releases the lock
	go func() {
		defer close(s.done)
		s.runErr = f.Run(runCtx)
	}()
	upstream, err := url.Parse(f.MongoDBURI())
	if err != nil {
		ln.Close()
		close(s.relayed)
		_ = s.Close()
		return nil, fmt.Errorf("mongostore: FerretDB's address %q: %w", f.MongoDBURI(), err)
	}
	go func() {
		defer close(s.relayed)
		relay(ln, upstream.Host)
	}()

	if err := ping(ctx, s.uri); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("mongostore: FerretDB at %s not ready: %w", s.uri, err)
	}
	s.indexed = make(chan struct{})
	go func() {
		defer close(s.indexed)
		maintainDatabases(runCtx, dir, logger)
	}()
	return s, nil
}

// ping connects with mongo-driver and runs the ping command: a TCP connect
// alone would succeed on the kernel backlog before FerretDB serves requests.
func ping(ctx context.Context, uri string) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, readyTimeout)
		defer cancel()
	}
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	pingErr := client.Ping(ctx, nil)
	// Disconnect before returning so no idle connection keeps Run (and thus
	// Close) waiting for FerretDB's connection drain delay.
	discErr := client.Disconnect(context.WithoutCancel(ctx))
	if pingErr != nil {
		return fmt.Errorf("ping: %w", pingErr)
	}
	if discErr != nil {
		return fmt.Errorf("disconnect: %w", discErr)
	}
	return nil
}

// URI returns the mongodb:// URI of the listener, e.g.
// "mongodb://127.0.0.1:40123/".
func (s *Store) URI() string { return s.uri }

// Close stops the listener and waits until FerretDB has returned from Run, by
// which time the SQLite databases are closed and a new Start on the same
// Dir sees all data. Clients should disconnect first: FerretDB gives still
// open connections up to 3 s to go away before it closes them.
// Close is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		// Clients first: FerretDB's Run waits for its open connections to go away.
		s.listener.Close()
		<-s.relayed
		s.cancel()
		if s.indexed != nil {
			<-s.indexed
		}
		<-s.done
		if s.lock != nil {
			s.lock.Close()
		}
	})
	if s.runErr != nil {
		return fmt.Errorf("mongostore: FerretDB run: %w", s.runErr)
	}
	return nil
}
