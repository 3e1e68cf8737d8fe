package trigger

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"rentalplatform/cli/internal/api"
)

// call is one request the fake API got.
type call struct {
	method, path, idem, contentType string
	body                            []byte
}

// fakeAPI answers every POST with an object whose id is made from its path, records every
// request, and answers 400 to paths ending in /refuse.
func fakeAPI(t *testing.T) (*api.Client, func() []call) {
	t.Helper()
	var mu sync.Mutex
	var calls []call
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, call{r.Method, r.URL.EscapedPath(), r.Header.Get("Idempotency-Key"), r.Header.Get("Content-Type"), b})
		n := len(calls)
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/refuse") {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"type":"invalid_request_error","code":"invalid_state","message":"No.","param":"status","request_id":"req_1"}}`)
			return
		}
		fmt.Fprintf(w, `{"id":"obj_%d","object":"thing","nested":{"n":%d}}`, n, n)
	}))
	t.Cleanup(srv.Close)
	return &api.Client{Base: srv.URL, Key: "sk_test_x", Agent: "test"}, func() []call {
		mu.Lock()
		defer mu.Unlock()
		return append([]call(nil), calls...)
	}
}

func TestRunMakesTheCallsInOrderWithTheirReferences(t *testing.T) {
	client, calls := fakeAPI(t)
	rec := Recipe{Type: "x.y", Inputs: []Input{{Var: "gone_url", Flag: "--gone-url", Why: "needed"}}, Steps: []Step{
		post("first", "/v1/things", "url=${gone_url}", "when=${today}", "amount:=5", "tags[]=a=b"),
		post("", "/v1/things/${first.id}/move", "n=${first.nested.n}"),
		{Fixture: "file", Method: "POST", Path: "/v1/things/${first.id}/files", Upload: &Upload{
			Field: "file", Filename: "a.csv", Content: "a,b\n1,2\n", Fields: []string{"document_type=${first.object}"}}},
		{Method: "DELETE", Path: "/v1/things/${file.id}"},
	}}
	var progress []string
	keys := 0
	r := Runner{
		Client:            client,
		Vars:              map[string]string{"gone_url": "https://example.com/gone?x=1"},
		Now:               func() time.Time { return time.Date(2026, 3, 4, 23, 30, 0, 0, time.FixedZone("+2", 7200)) },
		Progress:          func(m, p string) { progress = append(progress, m+" "+p) },
		NewIdempotencyKey: func() string { keys++; return fmt.Sprintf("k%d", keys) },
	}
	fixtures, err := r.Run(t.Context(), rec)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(fixtures) != "[{first obj_1 thing} {file obj_3 thing}]" {
		t.Errorf("fixtures %v", fixtures)
	}
	if want := "[POST /v1/things POST /v1/things/obj_1/move POST /v1/things/obj_1/files DELETE /v1/things/obj_3]"; fmt.Sprint(progress) != want {
		t.Errorf("progress %v\nwant     %s", progress, want)
	}
	got := calls()
	if len(got) != 4 {
		t.Fatalf("%d calls", len(got))
	}
	// References expanded in values only, typed parameters kept; the UTC date.
	if string(got[0].body) != `{"amount":5,"tags":["a=b"],"url":"https://example.com/gone?x=1","when":"2026-03-04"}` ||
		got[0].contentType != "application/json" {
		t.Errorf("first body %s (%s)", got[0].body, got[0].contentType)
	}
	if string(got[1].body) != `{"n":"1"}` {
		t.Errorf("second body %s", got[1].body)
	}
	// Every POST has its own Idempotency-Key; the DELETE none.
	for i, want := range []string{"k1", "k2", "k3", ""} {
		if got[i].idem != want {
			t.Errorf("call %d: Idempotency-Key %q, want %q", i, got[i].idem, want)
		}
	}
	// The upload: multipart with the field and the file.
	mt, params, err := mime.ParseMediaType(got[2].contentType)
	if err != nil || mt != "multipart/form-data" {
		t.Fatalf("upload content type %q", got[2].contentType)
	}
	form, err := multipart.NewReader(strings.NewReader(string(got[2].body)), params["boundary"]).ReadForm(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if form.Value["document_type"][0] != "thing" || len(form.File["file"]) != 1 || form.File["file"][0].Filename != "a.csv" {
		t.Errorf("form %v %v", form.Value, form.File)
	}
	f, _ := form.File["file"][0].Open()
	if b, _ := io.ReadAll(f); string(b) != "a,b\n1,2\n" {
		t.Errorf("file %q", b)
	}
}

func TestRunEscapesPathReferences(t *testing.T) {
	client, calls := fakeAPI(t)
	rec := Recipe{Type: "x.y", Inputs: []Input{{Var: "v", Flag: "--v", Why: "w"}}, Steps: []Step{post("", "/v1/a/${v}/b")}}
	if _, err := (Runner{Client: client, Vars: map[string]string{"v": "../x y"}}).Run(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	if p := calls()[0].path; p != "/v1/a/..%2Fx%20y/b" {
		t.Errorf("path %q", p)
	}
}

func TestRunStopsAtTheFirstFailure(t *testing.T) {
	client, calls := fakeAPI(t)
	rec := Recipe{Type: "x.y", Steps: []Step{post("a", "/v1/a"), post("", "/v1/a/${a.id}/refuse"), post("", "/v1/never")}}
	fixtures, err := Runner{Client: client}.Run(t.Context(), rec)
	var se *StepError
	var ae *api.APIError
	if !errors.As(err, &se) || se.Path != "/v1/a/obj_1/refuse" || !errors.As(err, &ae) || ae.Param != "status" {
		t.Fatalf("error %v", err)
	}
	if err.Error() != "POST /v1/a/obj_1/refuse: 400 invalid_request_error (invalid_state): No. [param status] [request req_1]" {
		t.Errorf("message %q", err)
	}
	if len(fixtures) != 1 || len(calls()) != 2 {
		t.Errorf("fixtures %v, %d calls", fixtures, len(calls()))
	}
	if !strings.HasPrefix(calls()[0].idem, "cli_") {
		t.Errorf("default Idempotency-Key %q", calls()[0].idem)
	}
}

func TestRunRefusesAMissingInputBeforeAnyCall(t *testing.T) {
	client, calls := fakeAPI(t)
	rec, _ := Lookup("webhook_endpoint.disabled")
	_, err := Runner{Client: client}.Run(t.Context(), rec)
	var mi *MissingInputError
	if !errors.As(err, &mi) || mi.Input.Flag != "--gone-url" || !strings.Contains(err.Error(), "cannot be caused through the API alone") {
		t.Fatalf("error %v", err)
	}
	if len(calls()) != 0 {
		t.Errorf("%d calls made", len(calls()))
	}
}

// Every recipe runs against the fake API: its references resolve from real answers' shape.
func TestEveryRecipeRuns(t *testing.T) {
	client, calls := fakeAPI(t)
	for _, rec := range Recipes() {
		before := len(calls())
		r := Runner{Client: client, Vars: map[string]string{"gone_url": "https://example.com/gone"}}
		if _, err := r.Run(t.Context(), rec); err != nil {
			t.Errorf("%s: %v", rec.Type, err)
		}
		if n := len(calls()) - before; n != len(rec.Steps) {
			t.Errorf("%s: %d calls for %d steps", rec.Type, n, len(rec.Steps))
		}
		for _, c := range calls()[before:] {
			if c.method == "POST" && !json.Valid(c.body) && !strings.HasPrefix(c.contentType, "multipart/") {
				t.Errorf("%s: %s %s: body %q", rec.Type, c.method, c.path, c.body)
			}
		}
	}
}
