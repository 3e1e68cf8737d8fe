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
	"go.mongodb.org/mongo-driver/v2/mongo"
	_ "modernc.org/sqlite"
)

// idPath is the expression FerretDB finds, updates and deletes a document by.
const idPath = `_ferretdb_sjson->'$._id'`

// tableIndexes returns the SQL of every index of table in the database file, by name. A new
// connection each time, so it sees the current schema.
func tableIndexes(t *testing.T, file, table string) map[string]string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+file)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name, coalesce(sql, '') FROM sqlite_master WHERE type = 'index' AND tbl_name = ?`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var name, q string
		if err := rows.Scan(&name, &q); err != nil {
			t.Fatal(err)
		}
		got[name] = q
	}
	return got
}

// updatePlan is SQLite's plan of FerretDB's update by _id.
func updatePlan(t *testing.T, file, table string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+file)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(fmt.Sprintf(`EXPLAIN QUERY PLAN UPDATE %q SET _ferretdb_sjson = ? WHERE %s = ?`, table, idPath), "{}", `"a"`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		_ = rows.Scan(&id, &parent, &unused, &detail)
		plan.WriteString(detail + "; ")
	}
	return plan.String()
}

// waitForIDIndex waits until table's only _id index is FerretDB's, by its name, rebuilt on the
// expression FerretDB's statements use, which SQLite then uses for them.
func waitForIDIndex(t *testing.T, file, table string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ixs := tableIndexes(t, file, table)
		q := ixs[table+"__id_"]
		_, legacy := ixs[table+"__rental_id_path"]
		plan := updatePlan(t, file, table)
		if strings.Contains(q, "UNIQUE") && strings.Contains(q, idPath) && !legacy &&
			strings.Contains(plan, "USING INDEX "+table+"__id_") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the _id index was not rebuilt: indexes %v, update plan %s", ixs, plan)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkIDIndex checks what FerretDB makes of the rebuilt index: _id stays unique, the index is
// listed and measured under its name, and a document is found, updated and deleted by _id.
func checkIDIndex(t *testing.T, coll *mongo.Collection) {
	t.Helper()
	ctx := t.Context()
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "a"}}); !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("a second document with _id a: %v, want a duplicate key error", err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "b"}, {Key: "n", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "b"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 2}}}}); err != nil || res.ModifiedCount != 1 {
		t.Fatalf("update by _id: %+v, %v", res, err)
	}
	var got struct{ N int }
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: "b"}}).Decode(&got); err != nil || got.N != 2 {
		t.Fatalf("find by _id: %+v, %v", got, err)
	}
	if res, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: "b"}}); err != nil || res.DeletedCount != 1 {
		t.Fatalf("delete by _id: %+v, %v", res, err)
	}
	specs, err := coll.Indexes().ListSpecifications(ctx)
	if err != nil || len(specs) != 1 || specs[0].Name != "_id_" {
		t.Fatalf("listIndexes: %+v, %v", specs, err)
	}
	var stats struct {
		Count      int            `bson:"count"`
		IndexSizes map[string]int `bson:"indexSizes"`
	}
	if err := coll.Database().RunCommand(ctx, bson.D{{Key: "collStats", Value: coll.Name()}}).Decode(&stats); err != nil {
		t.Fatalf("collStats: %v", err)
	}
	if _, ok := stats.IndexSizes["_id_"]; !ok || stats.Count != 1 {
		t.Fatalf("collStats: %+v, want one document and the _id_ index", stats)
	}
}

// FerretDB finds, updates and deletes by `_ferretdb_sjson->'$._id'`, but indexes _id on another
// expression; the store must rebuild that index on exactly this one, on every collection table,
// including ones created after it started.
func TestUpdatesByIDUseAnIndex(t *testing.T) {
	dir := t.TempDir()
	s := start(t, dir)
	c := connect(t, s.URI())
	coll := c.Database("app").Collection("things")
	if _, err := coll.InsertOne(t.Context(), bson.D{{Key: "_id", Value: "a"}}); err != nil {
		t.Fatal(err)
	}
	waitForIDIndex(t, filepath.Join(dir, "app.sqlite"), ferretTable("things"))
	checkIDIndex(t, coll)
}

// Files an earlier version kept, with FerretDB's _id index and a second one beside it, get the
// one rebuilt index when the store starts on them; so do files of this version on which the
// earlier one ran since, adding its index beside the rebuilt one again.
func TestIDIndexReplacesTheEarlierPair(t *testing.T) {
	cases := []struct {
		name string
		// idExpr is the expression of the _id index the earlier version found.
		idExpr string
	}{
		{"FerretDB's index and the earlier one beside it", `_ferretdb_sjson->"_id"`},
		{"the rebuilt index and the earlier one beside it", idPath},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := start(t, dir)
			c := connect(t, s.URI())
			if _, err := c.Database("app").Collection("things").InsertOne(t.Context(), bson.D{{Key: "_id", Value: "a"}}); err != nil {
				t.Fatal(err)
			}
			_ = c.Disconnect(context.WithoutCancel(t.Context()))
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			file, table := filepath.Join(dir, "app.sqlite"), ferretTable("things")
			sqliteExec(t, file,
				fmt.Sprintf(`DROP INDEX %q`, table+"__id_"),
				fmt.Sprintf(`CREATE UNIQUE INDEX %q ON %q (%s)`, table+"__id_", table, tc.idExpr),
				fmt.Sprintf(`CREATE INDEX %q ON %q (%s)`, table+"__rental_id_path", table, idPath))

			s = start(t, dir)
			defer s.Close()
			c = connect(t, s.URI())
			defer func() { _ = c.Disconnect(context.WithoutCancel(t.Context())) }()
			waitForIDIndex(t, file, table)
			checkIDIndex(t, c.Database("app").Collection("things"))
		})
	}
}
