package mongostore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// FerretDB v1.24's SQLite backend creates a database, a collection and an index in steps that
// each commit on their own, and it opens every file of its directory on start. A process killed
// between two steps (kill -9, a power cut, a launcher stopped while a service creates its first
// collections) leaves a state FerretDB cannot start on or cannot mend itself:
//
//   - a database file without FerretDB's metadata table (killed between creating the file and
//     the table): every later start fails with "no such table: _ferretdb_collections";
//   - a collection recorded without its _id index (killed before the index was recorded): _id
//     is no longer unique in it, and FerretDB never adds the index;
//   - a collection table not recorded (killed before its row was written): creating that
//     collection again fails for ever with "table already exists";
//   - an index created but not recorded: creating it again fails for ever with "index already
//     exists".
//
// repairDatabases mends each of these before FerretDB opens the files. Everything it removes is
// empty or unreachable through FerretDB: a collection is only written to once its creation has
// finished, and an index holds no data of its own. A state it cannot explain (a half-created
// collection that holds documents) is left alone and named in the error log.
func repairDatabases(ctx context.Context, dir string, log *slog.Logger) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.sqlite"))
	if err != nil {
		return err
	}
	for _, f := range files {
		mends, err := repairDatabase(ctx, f)
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(f), err)
		}
		for _, m := range mends {
			log.Warn("mongostore: mended what an interrupted FerretDB left", "file", filepath.Base(f), "mend", m)
		}
	}
	return nil
}

// ferretMetadataTable is FerretDB's table of a database's collections and their indexes.
const ferretMetadataTable = "_ferretdb_collections"

// ferretSettings is the part of FerretDB's collection settings (the metadata table's settings
// column, JSON) the repair reads and, for a missing index, recreates.
type ferretSettings struct {
	Indexes []struct {
		Name string `json:"name"`
		Key  []struct {
			Field      string `json:"field"`
			Descending bool   `json:"descending"`
		} `json:"key"`
		Unique bool `json:"unique"`
	} `json:"indexes"`
}

// repairDatabase mends one database file and says what it did.
func repairDatabase(ctx context.Context, file string) (mends []string, err error) {
	u := url.URL{Scheme: "file", Path: file, RawQuery: "_pragma=busy_timeout(10000)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, db.Close()) }()

	var tables, indexes []sqliteObject
	objs, err := sqliteObjects(ctx, db)
	if err != nil {
		return nil, err
	}
	hasMetadata := false
	for _, o := range objs {
		switch {
		case o.typ == "table" && o.name == ferretMetadataTable:
			hasMetadata = true
		case o.typ == "table" && !strings.HasPrefix(o.name, "_ferretdb_") && !strings.HasPrefix(o.name, "sqlite_"):
			tables = append(tables, o)
		case o.typ == "index" && o.sql != "": // SQLite's own indexes (UNIQUE columns) have no SQL
			indexes = append(indexes, o)
		}
	}
	if !hasMetadata {
		if len(tables) > 0 {
			return nil, fmt.Errorf("holds %d tables but no FerretDB metadata table %s: not a database FerretDB left, not touched", len(tables), ferretMetadataTable)
		}
		if err := db.Close(); err != nil {
			return nil, err
		}
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			if err := os.Remove(file + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
		return []string{"removed a database file FerretDB created but never set up (it held nothing)"}, nil
	}

	type collection struct {
		name, table string
		settings    ferretSettings
	}
	var colls []collection
	rows, err := db.QueryContext(ctx, fmt.Sprintf("SELECT name, table_name, settings FROM %s", quote(ferretMetadataTable)))
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var c collection
		var settings string
		if err := rows.Scan(&c.name, &c.table, &settings); err != nil {
			rows.Close()
			return nil, err
		}
		if err := json.Unmarshal([]byte(settings), &c.settings); err != nil {
			rows.Close()
			return nil, fmt.Errorf("collection %q: settings: %w", c.name, err)
		}
		colls = append(colls, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}

	exists := func(list []sqliteObject, name string) bool {
		for _, o := range list {
			if o.name == name {
				return true
			}
		}
		return false
	}
	recorded := map[string]bool{} // collection tables in the metadata
	dropped := map[string]bool{}  // tables of collections removed below
	wanted := map[string]bool{}   // the SQLite indexes the metadata records
	var recreate []string         // recorded indexes SQLite lacks, as FerretDB creates them
	for _, c := range colls {
		hasID := false
		for _, ix := range c.settings.Indexes {
			hasID = hasID || ix.Name == "_id_"
		}
		if !hasID {
			// Recorded, but its creation did not finish (the _id index comes last).
			if err := dropEmptyTable(ctx, db, c.table, exists(tables, c.table)); err != nil {
				return nil, fmt.Errorf("collection %q has no _id index: %w", c.name, err)
			}
			if _, err := db.ExecContext(ctx, fmt.Sprintf("DELETE FROM %s WHERE table_name = ?", quote(ferretMetadataTable)), c.table); err != nil {
				return nil, err
			}
			mends = append(mends, fmt.Sprintf("removed collection %q, whose creation did not finish (it held nothing)", c.name))
			dropped[c.table] = true
			continue
		}
		recorded[c.table] = true
		for _, ix := range c.settings.Indexes {
			name := c.table + "_" + ix.Name
			wanted[name] = true
			if exists(indexes, name) {
				continue
			}
			// The DDL FerretDB's indexesCreate runs, quoted as it quotes.
			cols := make([]string, len(ix.Key))
			for i, k := range ix.Key {
				fields := strings.Split(k.Field, ".")
				for j, f := range fields {
					fields[j] = fmt.Sprintf("%q", f)
				}
				cols[i] = "_ferretdb_sjson->" + strings.Join(fields, "->")
				if k.Descending {
					cols[i] += " DESC"
				}
			}
			unique := ""
			if ix.Unique {
				unique = "UNIQUE "
			}
			recreate = append(recreate, fmt.Sprintf("CREATE %sINDEX %q ON %q (%s)", unique, name, c.table, strings.Join(cols, ", ")))
		}
	}
	for _, t := range tables {
		if recorded[t.name] || dropped[t.name] {
			continue
		}
		if err := dropEmptyTable(ctx, db, t.name, true); err != nil {
			return nil, fmt.Errorf("table %q is not recorded as a collection: %w", t.name, err)
		}
		mends = append(mends, fmt.Sprintf("dropped table %q of a collection whose creation did not finish (it held nothing)", t.name))
	}
	for _, ix := range indexes {
		if !recorded[ix.table] || wanted[ix.name] {
			continue
		}
		if _, err := db.ExecContext(ctx, fmt.Sprintf("DROP INDEX %s", quote(ix.name))); err != nil {
			return nil, err
		}
		if ix.name == ix.table+legacyIDIndexSuffix {
			continue // the second _id index an earlier version kept, which the rebuilt one replaces (idindex.go): no mend
		}
		mends = append(mends, fmt.Sprintf("dropped index %q, created but never recorded", ix.name))
	}
	for _, q := range recreate {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("%s: %w", q, err)
		}
		mends = append(mends, "created an index recorded but missing: "+q)
	}
	return mends, nil
}

// sqliteObject is a row of sqlite_master.
type sqliteObject struct{ typ, name, table, sql string }

func sqliteObjects(ctx context.Context, db *sql.DB) ([]sqliteObject, error) {
	rows, err := db.QueryContext(ctx, `SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []sqliteObject
	for rows.Next() {
		var o sqliteObject
		if err := rows.Scan(&o.typ, &o.name, &o.table, &o.sql); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// dropEmptyTable drops table if it holds no row, and refuses to touch it if it holds any. A
// table that does not exist (exists false) holds none and is left as it is.
func dropEmptyTable(ctx context.Context, db *sql.DB, table string, exists bool) error {
	if !exists {
		return nil
	}
	var one int
	err := db.QueryRowContext(ctx, fmt.Sprintf("SELECT 1 FROM %s LIMIT 1", quote(table))).Scan(&one)
	switch {
	case err == nil:
		return errors.New("it holds documents: not touched")
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	_, err = db.ExecContext(ctx, fmt.Sprintf("DROP TABLE %s", quote(table)))
	return err
}
