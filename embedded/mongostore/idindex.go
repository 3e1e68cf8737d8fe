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

// FerretDB v1.24's SQLite backend stores each collection as a table of JSON documents. Its
// unique _id index is on the expression `_ferretdb_sjson->"_id"`, but it finds, updates and
// deletes a document by _id with `WHERE _ferretdb_sjson->'$._id' = ?`. SQLite uses an
// expression index only for the very same expression, so every one of those scanned the whole
// table, and a collection that grows got slower to write with every document (figures in
// docs/architecture.md, "What the embedded store costs").
//
// The store therefore rebuilds each collection's _id index, under FerretDB's own name for it, on
// the expression FerretDB's statements use. The two expressions give the same value for every
// document, so _id is exactly as unique as before, and FerretDB, which names the index only in
// its metadata (listIndexes, collStats) and knows a duplicate by SQLite's error code, sees no
// difference. An earlier version added a second index beside FerretDB's instead
// (`<table>__rental_id_path`); every write then maintained two _id indexes, each parsing the
// document's JSON again, which made an update cost about 1.7 times as much (docs/architecture.md).
// The start's repair drops that index (repair.go): the directory's lock keeps any other version
// off the files while this one runs, so the start is the only time it can be found. The rebuild
// is one SQLite transaction, so no write ever finds the table without its unique _id index, and
// it waits for FerretDB to have created the index (a collection's creation), so FerretDB never
// finds the name taken. New collections are rebuilt within idIndexInterval; until then they are
// small. A version of this package from before the rebuild, started on the same files, finds
// the index it expects by name and adds its own beside it again, which the next start of this
// version drops again.
const (
	// ferretIDIndexSuffix is the name FerretDB gives a table's _id index: the table, "_", and
	// the MongoDB index name "_id_".
	ferretIDIndexSuffix = "__id_"
	// legacyIDIndexSuffix names the index an earlier version added beside FerretDB's.
	legacyIDIndexSuffix = "__rental_id_path"
	// idPath is the expression FerretDB's statements find a document by.
	idPath          = `_ferretdb_sjson->'$._id'`
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
	objs, err := sqliteObjects(ctx, db)
	if err != nil {
		return err
	}
	// The _id indexes FerretDB created, still on its own expression. Tables of FerretDB's own
	// metadata start with "_ferretdb_" and have no such index.
	for _, o := range objs {
		if o.typ != "index" || o.name != o.table+ferretIDIndexSuffix || strings.Contains(o.sql, idPath) {
			continue
		}
		if err := rebuildIDIndex(ctx, db, o.table); err != nil {
			return fmt.Errorf("index %s: %w", o.table, err)
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

// rebuildIDIndex replaces table's _id index with one on idPath, in one transaction.
func rebuildIDIndex(ctx context.Context, db *sql.DB, table string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // a no-op once committed
	name := quote(table + ferretIDIndexSuffix)
	for _, q := range []string{
		"DROP INDEX " + name,
		fmt.Sprintf("CREATE UNIQUE INDEX %s ON %s (%s)", name, quote(table), idPath),
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			if strings.Contains(err.Error(), "no such index") || strings.Contains(err.Error(), "no such table") {
				return nil // dropped with its collection meanwhile
			}
			return err
		}
	}
	return tx.Commit()
}

func quote(ident string) string { return `"` + strings.ReplaceAll(ident, `"`, `""`) + `"` }
