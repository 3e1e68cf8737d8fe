package docstore_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"rentalplatform/embedded/testkit"
	"rentalplatform/libs/docstore"
)

// TestCollectionLayout: where the store keeps a collection. On the embedded store each is a
// database of its own, except one the database already held when it was opened, which stays
// there with its documents; on MongoDB every collection is in the database itself.
func TestCollectionLayout(t *testing.T) {
	ctx := t.Context()
	raw := testkit.MongoDatabase(t)
	// Stored by an earlier version, before the database was opened.
	if _, err := raw.Collection("old_accounts").InsertOne(ctx, bson.D{{Key: "_id", Value: "acc_old"}, {Key: "version", Value: int64(1)}, {Key: "balance", Value: 7}}); err != nil {
		t.Fatal(err)
	}
	db, err := docstore.Open(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	embedded := !db.MultiProcess()

	accounts := docstore.NewCollection[account](db, "accounts", docstore.Options{})
	if _, err := accounts.Insert(ctx, account{Meta: docstore.Meta{ID: "acc_1"}, Balance: 1}); err != nil {
		t.Fatal(err)
	}
	home := raw
	if embedded {
		home = raw.Client().Database(docstore.EmbeddedDatabase(raw.Name(), "accounts"))
	}
	if got := db.Collection("accounts").Database().Name(); got != home.Name() {
		t.Errorf("accounts kept in database %s, want %s", got, home.Name())
	}
	if n, err := home.Collection("accounts").CountDocuments(ctx, bson.D{{Key: "_id", Value: "acc_1"}}); err != nil || n != 1 {
		t.Errorf("acc_1 in %s.accounts: %d, %v; want it stored there", home.Name(), n, err)
	}
	if embedded {
		if n, err := raw.Collection("accounts").CountDocuments(ctx, bson.D{}); err != nil || n != 0 {
			t.Errorf("%d documents in the database itself: %v", n, err)
		}
	}

	old := docstore.NewCollection[account](db, "old_accounts", docstore.Options{})
	if got := db.Collection("old_accounts").Database().Name(); got != raw.Name() {
		t.Errorf("a collection stored before the layout moved to %s", got)
	}
	if a, err := old.Get(ctx, "acc_old"); err != nil || a.Balance != 7 {
		t.Errorf("the document stored before reads %+v, %v", a, err)
	}

	b := db.Bucket("blobs")
	if b.Database().Name() != db.Collection("blobs").Database().Name() {
		t.Errorf("bucket in %s, want %s", b.Database().Name(), db.Collection("blobs").Database().Name())
	}

	// Opened again (a restart), it finds each collection where the first opening put it.
	again, err := docstore.Open(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"accounts", "old_accounts"} {
		if got, want := again.Collection(name).Database().Name(), db.Collection(name).Database().Name(); got != want {
			t.Errorf("after a restart %s is in %s, was %s", name, got, want)
		}
	}
}

// TestEmbeddedDatabase: the names are ones FerretDB accepts, readable where they can be, and
// distinct for distinct collections.
func TestEmbeddedDatabase(t *testing.T) {
	valid := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,63}$`)
	long := strings.Repeat("x", 60)
	tests := []struct {
		db, coll, want string
	}{
		{"webhooks", "events", "webhooks-events"},
		{"collections", "case_file_contents", "collections-case_file_contents"},
		{"payments", "docstore_outbox_marks", "payments-docstore_outbox_marks"},
		{"db", "a.files", "db-a-files"},
		{long, "events", ""},
		{long, "deliveries", ""},
		{"db", "événements", ""},
		{"db", "a b", ""},
	}
	var seen []string
	for _, tt := range tests {
		got := docstore.EmbeddedDatabase(tt.db, tt.coll)
		if !valid.MatchString(got) {
			t.Errorf("EmbeddedDatabase(%q, %q) = %q: FerretDB refuses it", tt.db, tt.coll, got)
		}
		if tt.want != "" && got != tt.want {
			t.Errorf("EmbeddedDatabase(%q, %q) = %q, want %q", tt.db, tt.coll, got, tt.want)
		}
		if slices.Contains(seen, got) {
			t.Errorf("EmbeddedDatabase(%q, %q) = %q, as another collection's", tt.db, tt.coll, got)
		}
		seen = append(seen, got)
	}
}

// TestPackedStoredForm: the embedded store keeps a large packed array compressed (binary
// subtype 0x81) and MongoDB as it is (0x80); either reads back the same.
func TestPackedStoredForm(t *testing.T) {
	type line struct {
		Text string `bson:"text"`
	}
	type ledger struct {
		docstore.Meta `bson:",inline"`
		Lines         docstore.Packed[line] `bson:"lines"`
	}
	ctx := t.Context()
	db, err := docstore.Open(ctx, testkit.MongoDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	var lines docstore.Packed[line]
	for i := range 40 {
		lines = append(lines, line{Text: strings.Repeat("rent for unit 4b ", 3) + string(rune('a'+i%26))})
	}
	c := docstore.NewCollection[ledger](db, "ledgers", docstore.Options{})
	if _, err := c.Insert(ctx, ledger{Meta: docstore.Meta{ID: "led_1"}, Lines: lines}); err != nil {
		t.Fatal(err)
	}
	stored, err := db.Collection("ledgers").FindOne(ctx, bson.D{{Key: "_id", Value: "led_1"}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	want := byte(0x80)
	if !db.MultiProcess() {
		want = 0x81
	}
	if sub, _ := stored.Lookup("lines").Binary(); sub != want {
		t.Errorf("lines stored with subtype %#x, want %#x", sub, want)
	}
	if got, err := c.Current(ctx, "led_1"); err != nil || !slices.Equal(got.Lines, lines) {
		t.Errorf("read back %d lines, %v", len(got.Lines), err)
	}
}
