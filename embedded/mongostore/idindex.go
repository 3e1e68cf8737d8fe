package mongostore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the driver FerretDB itself uses, for the index below
)

// FerretDB v1.24's SQLite backend stores each collection as a table of JSON documents. It
// indexes _id as the expression `_ferretdb_sjson->"_id"`, but updates and deletes documents
// with `WHERE _ferretdb_sjson->'$._id' = ?`. SQLite uses an expression index only for the
// very same expression, so every update and delete by _id scans the whole table, and a
// collection that grows gets slower to write with every document (figures in
// docs/architecture.md, "What the embedded store costs").
//
// The store therefore adds, to every collection table, an index on the expression FerretDB's
// writes use. SQLite drops it with its table; FerretDB's own index metadata is not touched.
// New collections get it within idIndexInterval; until then they are small.
const (
	idIndexSuffix   = "__rental_id_path"
	idIndexInterval = time.Second
)

// maintainDatabases indexes every collection table of every database in dir and checkpoints its
// write-ahead log, now and then every idIndexInterval until ctx ends.
func maintainDatabases(ctx context.Context, dir string, log *slog.Logger) {
	t := time.NewTicker(idIndexInterval)
	defer t.Stop()
	for {
		if err := indexDatabases(ctx, dir); err != nil && ctx.Err() == nil {
			log.Warn("mongostore: indexing _id paths", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func indexDatabases(ctx context.Context, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.sqlite"))
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range files {
		if err := indexDatabase(ctx, f); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", filepath.Base(f), err))
		}
	}
	return errors.Join(errs...)
}

func indexDatabase(ctx context.Context, file string) error {
	u := url.URL{Scheme: "file", Path: file, RawQuery: "_pragma=busy_timeout(10000)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return err
	}
	defer db.Close()
	// Tables of FerretDB's own metadata start with "_ferretdb_"; collection tables do not.
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master
		WHERE type = 'table' AND substr(name, 1, 10) != '_ferretdb_' AND substr(name, 1, 7) != 'sqlite_'
		AND name || ?1 NOT IN (SELECT name FROM sqlite_master WHERE type = 'index')`, idIndexSuffix)
	if err != nil {
		return err
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, tb := range tables {
		q := fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s ON %s (_ferretdb_sjson->'$._id')`, quote(tb+idIndexSuffix), quote(tb))
		if _, err := db.ExecContext(ctx, q); err != nil && !strings.Contains(err.Error(), "no such table") {
			return fmt.Errorf("index %s: %w", tb, err)
		}
	}
	// FerretDB's connections do not checkpoint (wal_autocheckpoint(0), see Start): a commit
	// that crossed SQLite's 1,000-page mark copied the WAL into the database file there and
	// then, holding the write lock, which every other writer waited for. This checkpoint runs
	// beside the writers (PASSIVE: it waits for nobody and nobody waits for it).
	if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

func quote(ident string) string { return `"` + strings.ReplaceAll(ident, `"`, `""`) + `"` }
