package mongostore_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	_ "modernc.org/sqlite"
)

// FerretDB updates and deletes by `_ferretdb_sjson->'$._id'`; the store must index exactly that
// expression on every collection table, including ones created after it started.
func TestUpdatesByIDUseAnIndex(t *testing.T) {
	dir := t.TempDir()
	s := start(t, dir)
	c := connect(t, s.URI())
	coll := c.Database("app").Collection("things")
	if _, err := coll.InsertOne(context.Background(), bson.D{{Key: "_id", Value: "a"}}); err != nil {
		t.Fatal(err)
	}

	file := "file:" + filepath.Join(dir, "app.sqlite")
	deadline := time.Now().Add(5 * time.Second)
	for {
		// A new connection each time, so the plan sees the current schema.
		db, err := sql.Open("sqlite", file)
		if err != nil {
			t.Fatal(err)
		}
		var table string
		if err := db.QueryRow(`SELECT table_name FROM _ferretdb_collections WHERE name = 'things'`).Scan(&table); err != nil {
			t.Fatal(err)
		}
		var plan strings.Builder
		rows, err := db.Query(fmt.Sprintf(`EXPLAIN QUERY PLAN UPDATE %q SET _ferretdb_sjson = ? WHERE _ferretdb_sjson->'$._id' = ?`, table), "{}", `"a"`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id, parent, unused int
			var detail string
			_ = rows.Scan(&id, &parent, &unused, &detail)
			plan.WriteString(detail + "; ")
		}
		rows.Close()
		db.Close()
		if strings.Contains(plan.String(), "USING INDEX "+table+"__rental_id_path") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("updates by _id still scan the table: %s", plan.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
