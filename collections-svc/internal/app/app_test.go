package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/eventtype"
	"rentalplatform/libs/identity"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/outbox"
	"rentalplatform/libs/outbox/outboxtest"
	"rentalplatform/libs/servicetest"

	"rentalplatform/collections-svc/internal/adapters/mongo"
	"rentalplatform/collections-svc/internal/app"
	"rentalplatform/collections-svc/internal/domain"
	httpport "rentalplatform/collections-svc/internal/ports/http"
	"rentalplatform/collections-svc/internal/testfiles"
)

// The use cases on the real repositories and GridFS (embedded store), with the events queue in
// memory and the reference draws under the test's control.

type env struct {
	svc    *app.Service
	queue  *outboxtest.Queue
	relay  *outbox.Relay
	chunks func() int64
}

func newEnv(t *testing.T, random func([]byte)) *env {
	t.Helper()
	return newEnvWith(t, random, func(c app.Contents) app.Contents { return c })
}

// newEnvWith is newEnv with the content store wrapped.
func newEnvWith(t *testing.T, random func([]byte), wrap func(app.Contents) app.Contents) *env {
	t.Helper()
	db := servicetest.Store(t)
	q := &outboxtest.Queue{}
	relay := outboxtest.NewRelay(q)
	gen := ids.NewGenerator(nil)
	cases := mongo.NewCases(db, relay, httpport.CaseEvents(gen, time.Now))
	files := mongo.NewFiles(db, relay, httpport.FileEvents(gen, time.Now))
	if err := cases.EnsureIndexes(t.Context()); err != nil {
		t.Fatal(err)
	}
	svc := app.New(app.Deps{Cases: cases, Files: files, Contents: wrap(mongo.NewContents(db)), IDs: gen, Random: random},
		app.Config{Partner: domain.Partner{Name: "P", Email: "p@example.com", Phone: "+15555550100", Site: "https://p.example.com"}})
	chunks := func() int64 {
		n, err := db.Bucket(mongo.ContentsBucket).Database().Collection(mongo.ContentsBucket+".chunks").CountDocuments(context.Background(), bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	return &env{svc: svc, queue: q, relay: relay, chunks: chunks}
}

func ptr[T any](v T) *T { return &v }

var caller = identity.Identity{Account: "acct_app", RequestID: "req_1"}

func createInput() app.CreateCase {
	return app.CreateCase{AmountToRecover: ptr(int64(10000)), Currency: ptr("usd"),
		Debtor: &domain.DebtorParams{Type: ptr("private"), Name: ptr("Bob"),
			Address: &domain.AddressParams{Line1: ptr("1 Main St"), City: ptr("Austin"), PostalCode: ptr("78701"), Country: ptr("US")}, Country: ptr("US")},
		DueDate: ptr("2026-01-31")}
}

// TestReferencesUnderConcurrentCreates: fifty creates at once, references drawn from only
// sixty-four values, so draws collide all the time: every create succeeds, with a reference
// of its own (the unique index refused the taken ones and they were drawn again).
func TestReferencesUnderConcurrentCreates(t *testing.T) {
	var mu sync.Mutex
	seed := 0
	e := newEnv(t, func(b []byte) {
		mu.Lock()
		defer mu.Unlock()
		for i := range b {
			seed = (seed*1103515245 + 12345) & 0x7fffffff
			b[i] = byte((seed >> 16) & 1) // "0" or "1": 2^6 references
		}
	})
	const n = 50
	refs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c, err := e.svc.CreateCase(t.Context(), caller, createInput())
			if err == nil {
				refs[i] = c.Reference()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, ref := range refs {
		if errs[i] != nil {
			t.Fatalf("create %d: %v", i, errs[i])
		}
		if seen[ref] {
			t.Fatalf("reference %s given twice", ref)
		}
		seen[ref] = true
	}
	// Each case is found under its reference, in any letter case.
	for ref := range seen {
		c, err := e.svc.GetCaseByReference(t.Context(), caller, strings.ToLower(ref))
		if err != nil || c.Reference() != ref {
			t.Fatalf("by reference %s: %v", ref, err)
		}
	}
	// A source that always draws the same reference fails the create after its tries
	// (with a 500, not a hang or a duplicate).
	same := newEnv(t, func(b []byte) { clear(b) })
	if _, err := same.svc.CreateCase(t.Context(), caller, createInput()); err != nil {
		t.Fatal(err)
	}
	if _, err := same.svc.CreateCase(t.Context(), caller, createInput()); err == nil || domainerr.As(err) != nil {
		t.Fatalf("second create with one possible reference: %v", err)
	}
}

type published struct {
	Type     string
	Object   map[string]any
	Previous map[string]any
}

func (e *env) events(t *testing.T) []published {
	t.Helper()
	e.relay.Wait()
	e.relay.Sweep(t.Context())
	var out []published
	for _, ev := range e.queue.Events() {
		var p published
		p.Type = ev.Type
		if err := json.Unmarshal(ev.Data.Object, &p.Object); err != nil {
			t.Fatal(err)
		}
		if len(ev.Data.PreviousAttributes) > 0 {
			if err := json.Unmarshal(ev.Data.PreviousAttributes, &p.Previous); err != nil {
				t.Fatal(err)
			}
		}
		if ev.Request.ID == nil || *ev.Request.ID != caller.RequestID || ev.Account != caller.Account || ev.Livemode {
			t.Errorf("%s: request/account/mode not the caller's: %+v", ev.Type, ev)
		}
		out = append(out, p)
	}
	return out
}

// TestLifecycleEvents: every change raises collection_case.updated with the previous values of
// exactly the fields it changed; a payment raises debt_payment.created first; the last payment
// closes the case (collection_case.closed); refused moves change nothing and raise nothing.
func TestLifecycleEvents(t *testing.T) {
	e := newEnv(t, nil)
	ctx := t.Context()
	c, err := e.svc.CreateCase(ctx, caller, createInput())
	if err != nil {
		t.Fatal(err)
	}
	id := c.ID()
	steps := []func() error{
		func() error { _, err := e.svc.PauseCase(ctx, caller, id); return err },
		func() error { _, err := e.svc.ResumeCase(ctx, caller, id); return err },
		func() error {
			_, _, err := e.svc.RecordPayment(ctx, caller, id, app.RecordPayment{Amount: ptr(int64(4000)), PaidAt: ptr("2026-11-01")})
			return err
		},
		func() error {
			_, c, err := e.svc.RecordPayment(ctx, caller, id, app.RecordPayment{Amount: ptr(int64(6000)), PaidAt: ptr("2026-11-02"), Reference: ptr("wire-7")})
			if err == nil && (c.Status() != domain.StatusClosed || c.CloseCode() != domain.ClosePaidInFull || c.Remainder() != 0) {
				return fmt.Errorf("after the last payment: %s %s %d", c.Status(), c.CloseCode(), c.Remainder())
			}
			return err
		},
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	// Refused: nothing changes, nothing is raised.
	for _, refused := range []func() error{
		func() error { _, err := e.svc.ResumeCase(ctx, caller, id); return err },
		func() error { _, err := e.svc.CloseCase(ctx, caller, id, ptr("settled")); return err },
		func() error {
			_, _, err := e.svc.RecordPayment(ctx, caller, id, app.RecordPayment{Amount: ptr(int64(1)), PaidAt: ptr("2026-11-02")})
			return err
		},
	} {
		if err := refused(); domainerr.CodeOf(err) != domainerr.CodeInvalidState {
			t.Fatalf("move on a closed case: %v", err)
		}
	}
	got := e.events(t)
	type want struct {
		typ      string
		previous string
	}
	wants := []want{
		{eventtype.CollectionCaseCreated, "map[]"},
		{eventtype.CollectionCaseUpdated, "map[status:active]"},
		{eventtype.CollectionCaseUpdated, "map[status:paused]"},
		{eventtype.DebtPaymentCreated, "map[]"},
		{eventtype.CollectionCaseUpdated, "map[remainder:10000]"},
		{eventtype.DebtPaymentCreated, "map[]"},
		{eventtype.CollectionCaseUpdated, "map[close_code:<nil> remainder:6000 status:active]"},
		{eventtype.CollectionCaseClosed, "map[]"},
	}
	if len(got) != len(wants) {
		t.Fatalf("%d events, want %d: %+v", len(got), len(wants), got)
	}
	for i, w := range wants {
		if got[i].Type != w.typ || fmt.Sprint(mapOrEmpty(got[i].Previous)) != w.previous {
			t.Errorf("event %d: %s %v; want %s %s", i, got[i].Type, got[i].Previous, w.typ, w.previous)
		}
	}
	if p := got[5].Object; p["object"] != "debt_payment" || p["amount"] != float64(6000) || p["reference"] != "wire-7" || p["collection_case"] != id || p["currency"] != "usd" {
		t.Errorf("debt payment object: %v", p)
	}
	if o := got[6].Object; o["status"] != "closed" || o["close_code"] != "paid_in_full" || o["remainder"] != float64(0) {
		t.Errorf("last update's object: %v", o)
	}
}

func mapOrEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func TestUploads(t *testing.T) {
	e := newEnv(t, nil)
	ctx := t.Context()
	c, err := e.svc.CreateCase(ctx, caller, createInput())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CloseCase(ctx, caller, c.ID(), ptr("withdrawn")); err != nil {
		t.Fatal(err)
	}
	run := func(name string, body io.Reader, fields app.FileFields) (*domain.File, error) {
		up, err := e.svc.BeginUpload(ctx, caller, c.ID())
		if err != nil {
			t.Fatal(err)
		}
		// As the HTTP port does: a refusal's content is dropped in the background.
		defer up.AbortLater(ctx)
		if err := up.File(ctx, name, body); err != nil {
			return nil, err
		}
		return up.Commit(ctx, fields)
	}
	// A closed case takes files (evidence arrives late).
	pdf := testfiles.PDF()
	f, err := run("x.pdf", bytes.NewReader(pdf), app.FileFields{DocumentType: ptr("demand_letter")})
	if err != nil || f.Size() != int64(len(pdf)) || f.ContentType() != domain.TypePDF {
		t.Fatalf("upload to a closed case: %v %+v", err, f)
	}
	before := e.chunks()
	for _, tc := range []struct {
		name string
		body io.Reader
		kind domainerr.Kind
	}{
		// One byte over the limit: refused while streaming, what was stored is dropped.
		{"oversize", io.MultiReader(bytes.NewReader(pdf), bytes.NewReader(make([]byte, domain.MaxFileSize+1-len(pdf)))), domainerr.TooLarge},
		{"text turning binary past the sniffed part", io.MultiReader(strings.NewReader(strings.Repeat("line of text\n", domain.SniffLen/10)), bytes.NewReader([]byte{0, 1, 2})), domainerr.UnsupportedMedia},
		{"refused type", bytes.NewReader(testfiles.Refused()[0].Body), domainerr.UnsupportedMedia},
	} {
		if _, err := run(tc.name, tc.body, app.FileFields{DocumentType: ptr("miscellaneous")}); domainerr.KindOf(err) != tc.kind {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// A bad field after a good file: the stored content is dropped too.
	if _, err := run("x.pdf", bytes.NewReader(pdf), app.FileFields{DocumentType: ptr("nope")}); domainerr.CodeOf(err) != domainerr.CodeParameterInvalid {
		t.Errorf("bad document_type: %v", err)
	}
	if err := e.svc.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if after := e.chunks(); after != before {
		t.Errorf("refused uploads left %d chunks", after-before)
	}
	// A read error of the client's body is a ReadError.
	if _, err := run("x.txt", io.MultiReader(strings.NewReader(strings.Repeat("a", domain.SniffLen+10)), errReader{}), app.FileFields{DocumentType: ptr("miscellaneous")}); !errors.As(err, new(*app.ReadError)) {
		t.Errorf("body read error: %v", err)
	}
	events := e.events(t)
	if last := events[len(events)-1]; last.Type != eventtype.CaseFileCreated || last.Object["id"] != f.ID() {
		t.Errorf("last event: %+v", last)
	}
}

// TestContentLength: a download answers the stored bytes, and a record whose size the stored
// content does not match is an error, never a response of the wrong length.
func TestContentLength(t *testing.T) {
	short := &shortContents{}
	e := newEnvWith(t, nil, func(c app.Contents) app.Contents { short.Contents = c; return short })
	ctx := t.Context()
	c, err := e.svc.CreateCase(ctx, caller, createInput())
	if err != nil {
		t.Fatal(err)
	}
	up, err := e.svc.BeginUpload(ctx, caller, c.ID())
	if err != nil {
		t.Fatal(err)
	}
	pdf := testfiles.PDF()
	if err := up.File(ctx, "x.pdf", bytes.NewReader(pdf)); err != nil {
		t.Fatal(err)
	}
	f, err := up.Commit(ctx, app.FileFields{DocumentType: ptr("demand_letter")})
	if err != nil {
		t.Fatal(err)
	}
	got, r, err := e.svc.FileContent(ctx, caller, c.ID(), f.ID())
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	_ = r.Close()
	if err != nil || !bytes.Equal(b, pdf) || got.Size() != int64(len(pdf)) {
		t.Fatalf("download: %d bytes, %v, record %d", len(b), err, got.Size())
	}
	short.lie = true
	if _, r, err := e.svc.FileContent(ctx, caller, c.ID(), f.ID()); err == nil || r != nil || domainerr.As(err) != nil {
		t.Fatalf("a length mismatch: %v (want an internal error, no reader)", err)
	}
}

// shortContents reports one byte less than was stored once lie is set.
type shortContents struct {
	app.Contents
	lie bool
}

func (s *shortContents) Open(ctx context.Context, id string) (io.ReadCloser, int64, error) {
	r, n, err := s.Contents.Open(ctx, id)
	if s.lie {
		n--
	}
	return r, n, err
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }
