package e2e

// The isolation matrix (issue 29 §3): every operation of the API's documents, read from the
// documents themselves (never a list of routes kept here), is sent by every kind of caller that
// must not reach account A's test-mode objects, and must get the answer docs/api.md documents
// ("Authentication", "Restricted keys", the test helpers' live-mode answer, "Admin API"),
// while the stores stay as they were. A route added to api/src is in the documents, so it is in
// the matrix at once; if its path addresses a kind of object the fixtures lack, or it needs a
// body the test cannot make, the test fails until a fixture or a body is added here.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"rentalplatform/api"
	"rentalplatform/api/contract"
	"rentalplatform/deploy/local/e2e/receiver"
)

// docOp is one operation of a document, with what the matrix needs to know of it.
type docOp struct {
	Method, Path string
	// Public operations (security: []) need no API key: the contract, its reference page,
	// the health checks and the hosted pages. They are outside the matrix, and must be GETs
	// but for a hosted page's form.
	Public bool
	// BodyRequired: the document requires a request body (the matrix sends a valid one).
	BodyRequired bool
	// Stream: the answer is a stream of Server-Sent Events (GET /v1/events/stream), read up to
	// its first message.
	Stream bool
}

func (o docOp) String() string { return o.Method + " " + o.Path }

// documentOps reads every operation of an OpenAPI document (JSON), by path then method.
func documentOps(t *testing.T, spec []byte) []docOp {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(spec, &doc); err != nil {
		t.Fatal(err)
	}
	var out []docOp
	for _, path := range slices.Sorted(maps.Keys(doc.Paths)) {
		for _, m := range []string{"get", "head", "post", "put", "patch", "delete"} {
			raw, ok := doc.Paths[path][m]
			if !ok {
				continue
			}
			var op struct {
				Security    *[]any `json:"security"`
				RequestBody *struct {
					Required bool `json:"required"`
				} `json:"requestBody"`
				Responses map[string]struct {
					Content map[string]json.RawMessage `json:"content"`
				} `json:"responses"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", m, path, err)
			}
			out = append(out, docOp{
				Method: strings.ToUpper(m), Path: path,
				Public:       op.Security != nil && len(*op.Security) == 0,
				BodyRequired: op.RequestBody != nil && op.RequestBody.Required,
				Stream:       op.Responses["200"].Content["text/event-stream"] != nil,
			})
		}
	}
	// The contract checker's own reading of the document must find the same operations, so
	// neither reader skips one.
	want, err := contract.Operations(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != len(out) {
		t.Fatalf("the matrix reads %d operations, the contract checker %d", len(out), len(want))
	}
	return out
}

var placeholder = regexp.MustCompile(`\{[^}/]+\}`)

// fillPath puts a fixture id in each of a path's parameters: the id of the kind of object the
// segment before the parameter names (/v1/collection_cases/{id}/files/{file_id}: a case, then a
// file of it). A parameter after a segment no fixture covers is an error: a new kind of object
// needs a fixture.
func fillPath(path string, fixtures map[string]string) (string, error) {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if !placeholder.MatchString(s) {
			continue
		}
		if i == 0 {
			return "", fmt.Errorf("%s: a parameter first", path)
		}
		id, ok := fixtures[segs[i-1]]
		if !ok || id == "" {
			return "", fmt.Errorf("%s: no fixture for %s after %q: add one to TestIsolationMatrix", path, s, segs[i-1])
		}
		segs[i] = id
	}
	return strings.Join(segs, "/"), nil
}

// byID: the path addresses one object (or what lives inside it) by a path parameter.
func byID(path string) bool { return placeholder.MatchString(path) }

func isTestHelper(path string) bool { return strings.HasPrefix(path, "/v1/test_helpers/") }

// isWrite: what a read-only key may not do (docs/api.md: read is GET; write is GET, POST and
// DELETE).
func isWrite(method string) bool { return method != http.MethodGet && method != http.MethodHead }

// permissionResources are the resources a restricted key's permissions name (docs/api.md,
// "Restricted keys").
var permissionResources = []string{"verification_sessions", "collection_cases", "payment_requests",
	"payment_agreements", "webhook_endpoints", "events"}

// permissionOf is the resource whose permission a path needs: docs/api.md's table (the objects
// living inside a resource go with it; test helpers need write on theirs).
func permissionOf(path string) (string, error) {
	rest := strings.TrimPrefix(strings.TrimPrefix(path, "/v1/"), "test_helpers/")
	first, _, _ := strings.Cut(rest, "/")
	switch first {
	case "verification_reports":
		return "verification_sessions", nil
	case "webhook_deliveries", "webhook_portal_sessions":
		return "webhook_endpoints", nil
	case "event_types":
		return "events", nil
	}
	if slices.Contains(permissionResources, first) {
		return first, nil
	}
	return "", fmt.Errorf("%s: no permission resource for %q in docs/api.md's table", path, first)
}

// multipartFile is an upload body (a small PDF) and its content type.
func multipartFile(t *testing.T) (string, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="matrix.pdf"`)
	h.Set("Content-Type", "application/pdf")
	fw, err := w.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write([]byte("%PDF-1.7\nmatrix evidence\n"))
	_ = w.WriteField("document_type", "creditor_documents")
	_ = w.Close()
	return buf.String(), w.FormDataContentType()
}

// expectation is the documented refusal of one request.
type expectation struct {
	status int
	code   string
}

// errorTypes are the error types of the matrix's statuses (docs/api.md, "Errors").
var errorTypes = map[int]string{
	http.StatusUnauthorized: "authentication_error",
	http.StatusForbidden:    "permission_error",
	http.StatusNotFound:     "invalid_request_error",
}

func (r response) errMessage() string {
	e, _ := r.Body["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

// matrixCaller is one kind of caller that must not reach A's test-mode objects.
type matrixCaller struct {
	name string
	// key for an operation (restricted keys depend on the operation's resource).
	key func(op docOp) string
	// expect is the documented answer; ok false: the caller is not sent this operation (a
	// read-only key on a read), own true: the caller gets its own answer (another account's
	// or mode's key on a list or a create), checked in the second phase.
	expect func(op docOp) (e expectation, own, ok bool)
}

func TestIsolationMatrix(t *testing.T) {
	p := startWith(t, stackConfig{env: deliveryEnv("1s,2s,3s")})
	t.Cleanup(func() { p.noDeaths(t) })
	ctx := context.Background()
	base := p.GatewayURL

	// Account A, test mode: one object of every kind a path addresses by id.
	const accountA, accountB = "acct_matrixa", "acct_matrixb"
	keyA := p.newKey(t, accountA, false)
	rx := receiver.New(t) // a TLS receiver, for one succeeded delivery
	endpointID, _ := p.createEndpoint(t, keyA, rx.URL()+"/hooks", "verification_session.created")

	session := call(t, "POST", base+"/v1/verification_sessions", keyA, sessionBody("matrix@example.com", nil))
	sessionID := str(session.Body["id"])
	c := vs{t, p, keyA}
	c.walk(sessionID, "pending", "processing")
	done := c.advance(sessionID, map[string]any{"status": "completed", "outcomes": map[string]string{"credit": "failed"}})
	reportID := str(done.Body["report"])
	if session.Status != 200 || done.Status != 200 || !strings.HasPrefix(reportID, "vr_") {
		t.Fatalf("session: %d %s; completed: %d %s", session.Status, session.Raw, done.Status, done.Raw)
	}
	kase := call(t, "POST", base+"/v1/collection_cases", keyA, caseRequest("DE", "INV-MATRIX"))
	caseID, caseRef := str(kase.Body["id"]), str(kase.Body["reference"])
	body, ct := multipartFile(t)
	up := callRaw(t, "POST", base+"/v1/collection_cases/"+caseID+"/files", keyA, body, map[string]string{"Content-Type": ct})
	fileID := str(up.Body["id"])
	if kase.Status != 200 || up.Status != 200 || fileID == "" {
		t.Fatalf("case: %d %s; file: %d %s", kase.Status, kase.Raw, up.Status, up.Raw)
	}
	agreementID := str(p.createAgreement(t, keyA, "tok_test_success")["id"])
	requestID := str(p.createPaymentRequest(t, keyA, agreementID, 125000, "eur")["id"])
	p.waitRequest(t, keyA, requestID, "succeeded", statusIs("succeeded"))
	event := p.waitEvent(t, keyA, "verification_session.created", sessionID, deliveryWait)
	eventID := str(event["id"])
	delivery := p.waitDelivery(t, keyA, eventID, endpointID, deliveryWait, "succeeded", statusIs("succeeded"))
	deliveryID := str(delivery["id"])

	// The fixture of each kind of object, by the path segment before its parameter.
	fixtures := map[string]string{
		"verification_sessions": sessionID,
		"verification_reports":  reportID,
		"collection_cases":      caseID,
		"ref":                   caseRef,
		"files":                 fileID,
		"payment_agreements":    agreementID,
		"payment_requests":      requestID,
		"webhook_endpoints":     endpointID,
		"events":                eventID,
		"webhook_deliveries":    deliveryID,
	}
	idsOfA := slices.Collect(func(yield func(string) bool) {
		for _, id := range fixtures {
			if !yield(id) {
				return
			}
		}
	})

	// Valid bodies for A, for the operations whose document requires one: a refusal must be
	// the key's doing, not the body's. An operation whose body is optional is sent none; one
	// that requires a body this map lacks fails the test.
	jsonBody := func(v any) func() (string, string) {
		return func() (string, string) { b, _ := json.Marshal(v); return string(b), "application/json" }
	}
	paymentRequest := map[string]any{"payment_agreement": agreementID, "amount": 1000, "currency": "eur", "description": "rent"}
	bodies := map[string]func() (string, string){
		"POST /v1/verification_sessions":                           jsonBody(sessionBody("other@example.com", nil)),
		"POST /v1/test_helpers/verification_sessions/{id}/advance": jsonBody(map[string]any{"status": "pending"}),
		"POST /v1/collection_cases":                                jsonBody(caseRequest("DE", "INV-OTHER")),
		"POST /v1/collection_cases/{id}/close":                     jsonBody(map[string]any{"close_code": "settled"}),
		"POST /v1/collection_cases/{id}/payments":                  jsonBody(map[string]any{"amount": 100, "paid_at": "2026-11-02"}),
		"POST /v1/collection_cases/{id}/files":                     func() (string, string) { return multipartFile(t) },
		"POST /v1/payment_agreements":                              jsonBody(agreementParams("tok_test_success")),
		"POST /v1/payment_requests":                                jsonBody(paymentRequest),
		"POST /v1/payment_requests/bulk":                           jsonBody(map[string]any{"requests": []any{paymentRequest}}),
		"POST /v1/webhook_endpoints":                               jsonBody(map[string]any{"url": publicURL, "enabled_events": []string{quietType}}),
		"POST /admin/api_keys":                                     jsonBody(map[string]any{"account": accountA}),
		"POST /admin/api_keys/{id}":                                jsonBody(map[string]any{"rate_limit": 5}),
		"POST /admin/api_keys/{id}/roll":                           jsonBody(map[string]any{"expires_in": 60}),
	}

	// The callers. Each key is shown to work before the matrix, so a refusal is the matrix's.
	keyB := p.newKey(t, accountB, false)
	liveA := p.newKey(t, accountA, true)
	for _, k := range []string{keyB, liveA} {
		if res := call(t, "GET", base+"/v1/events", k, nil); res.Status != 200 {
			t.Fatalf("caller key: %d %s", res.Status, res.Raw)
		}
	}
	restricted := func(perms map[string]string, probe string) string {
		k := p.admin(t, "POST", "/admin/api_keys", map[string]any{"account": accountA, "permissions": perms}, http.StatusCreated)
		secret := str(k["secret"])
		if res := call(t, "GET", base+probe, secret, nil); res.Status != 200 {
			t.Fatalf("restricted key %v on GET %s: %d %s", perms, probe, res.Status, res.Raw)
		}
		return secret
	}
	// withoutKeys[r]: write on every resource but r, none on r.
	withoutKeys := map[string]string{}
	readAll := map[string]string{}
	for _, r := range permissionResources {
		perms := map[string]string{}
		for _, o := range permissionResources {
			if o != r {
				perms[o] = "write"
			}
		}
		probe := "/v1/events"
		if r == "events" {
			probe = "/v1/webhook_endpoints"
		}
		withoutKeys[r] = restricted(perms, probe)
		readAll[r] = "read"
	}
	readOnly := restricted(readAll, "/v1/payment_requests/"+requestID)
	// A revoked key and a rolled key past its expiry, both of A and both used first.
	revoked := p.admin(t, "POST", "/admin/api_keys", map[string]any{"account": accountA}, http.StatusCreated)
	rolled := p.admin(t, "POST", "/admin/api_keys", map[string]any{"account": accountA}, http.StatusCreated)
	for _, k := range []map[string]any{revoked, rolled} {
		if res := call(t, "GET", base+"/v1/events", str(k["secret"]), nil); res.Status != 200 {
			t.Fatalf("key before revoke/roll: %d %s", res.Status, res.Raw)
		}
	}
	p.admin(t, "POST", "/admin/api_keys/"+str(revoked["id"])+"/revoke", nil, http.StatusOK)
	p.admin(t, "POST", "/admin/api_keys/"+str(rolled["id"])+"/roll", map[string]any{"expires_in": 1}, http.StatusCreated)
	rolledAt := time.Now()
	adminFixtures := map[string]string{"api_keys": str(rolled["id"])}

	unauthenticated := func(docOp) (expectation, bool, bool) {
		return expectation{http.StatusUnauthorized, "api_key_invalid"}, false, true
	}
	notFound := func(live bool) func(docOp) (expectation, bool, bool) {
		return func(op docOp) (expectation, bool, bool) {
			switch {
			case live && isTestHelper(op.Path): // docs/api.md: test mode only, route_missing to a live key
				return expectation{http.StatusNotFound, "route_missing"}, false, true
			case byID(op.Path):
				return expectation{http.StatusNotFound, "resource_missing"}, false, true
			}
			return expectation{}, true, true
		}
	}
	fixed := func(k string) func(docOp) string { return func(docOp) string { return k } }
	callers := []matrixCaller{
		{"another account's key", fixed(keyB), notFound(false)},
		{"the other mode's key", fixed(liveA), notFound(true)},
		{"a restricted key without the resource", func(op docOp) string {
			r, err := permissionOf(op.Path)
			if err != nil {
				t.Fatal(err)
			}
			return withoutKeys[r]
		}, func(docOp) (expectation, bool, bool) {
			return expectation{http.StatusForbidden, "permission_denied"}, false, true
		}},
		{"a read-only key on a write", fixed(readOnly), func(op docOp) (expectation, bool, bool) {
			return expectation{http.StatusForbidden, "permission_denied"}, false, isWrite(op.Method)
		}},
		{"a revoked key", fixed(str(revoked["secret"])), unauthenticated},
		{"a rolled key after its expiry", fixed(str(rolled["secret"])), unauthenticated},
		{"no key", fixed(""), unauthenticated},
	}

	publicOps := documentOps(t, api.PublicJSON())
	adminOps := documentOps(t, api.AdminJSON())
	for op := range bodies { // a body for an operation the documents no longer have is stale
		if !slices.ContainsFunc(append(slices.Clone(publicOps), adminOps...), func(o docOp) bool { return o.String() == op }) {
			t.Errorf("TestIsolationMatrix has a body for %s, which neither document has", op)
		}
	}

	// send sends op to the given listener as key, with the body the op needs.
	send := func(t *testing.T, listener string, op docOp, fx map[string]string, key string) response {
		t.Helper()
		path, err := fillPath(op.Path, fx)
		if err != nil {
			t.Fatal(err)
		}
		var body string
		headers := map[string]string{}
		if mk, ok := bodies[op.String()]; ok {
			var ct string
			body, ct = mk()
			headers["Content-Type"] = ct
		} else if op.BodyRequired {
			t.Fatalf("%s requires a body: add a valid one for account A to TestIsolationMatrix's bodies", op)
		}
		if op.Stream {
			return firstMessage(t, listener+path, key)
		}
		return callRaw(t, op.Method, listener+path, key, body, headers)
	}

	// The stores before anything is refused, once the fixtures' background work (events,
	// deliveries, the payment attempt) is done.
	before := quietSnapshot(t, ctx, p)
	time.Sleep(time.Until(rolledAt.Add(1100 * time.Millisecond)))

	// Phase 1: every refusal.
	perCaller := map[string]int{}
	var own []struct {
		caller matrixCaller
		op     docOp
	}
	covered, public := 0, 0
	for _, op := range publicOps {
		if op.Public {
			// A hosted page's form is the one POST without a key: its credential is a
			// session's client secret in its body, or a webhook portal session's cookie and
			// CSRF value (docs/hosted-pages.md, TestHostedVerificationSecrets,
			// TestWebhookPortalTokens).
			if op.Method != http.MethodGet && !strings.HasPrefix(op.Path, "/verify/") && !strings.HasPrefix(op.Path, "/portal/") {
				t.Errorf("%s needs no key, yet is not a GET", op)
			}
			public++
			continue
		}
		covered++
		for _, c := range callers {
			want, isOwn, ok := c.expect(op)
			if !ok {
				continue
			}
			if isOwn {
				own = append(own, struct {
					caller matrixCaller
					op     docOp
				}{c, op})
				continue
			}
			perCaller[c.name]++
			res := send(t, base, op, fixtures, c.key(op))
			if res.Status != want.status || res.errCode() != want.code || res.errType() != errorTypes[want.status] {
				t.Errorf("%s with %s: %d %s, want %d %s %s", op, c.name, res.Status, res.Raw, want.status, errorTypes[want.status], want.code)
			}
			// docs/api.md: a 403's message names the resource and the access it needs.
			if r, _ := permissionOf(op.Path); res.Status == http.StatusForbidden && !strings.Contains(res.errMessage(), r) {
				t.Errorf("%s with %s: the 403 does not name %s: %s", op, c.name, r, res.Raw)
			}
		}
	}
	adminRequests, adminCovered := 0, 0
	for _, op := range adminOps {
		adminCovered++
		for _, token := range []struct{ name, value string }{
			{"no token", ""}, {"a wrong token", p.AdminToken + "x"}, {"an API key", keyA},
		} {
			adminRequests++
			res := send(t, p.AdminURL, op, adminFixtures, token.value)
			if res.Status != http.StatusUnauthorized || res.errCode() != "admin_token_invalid" || res.errType() != "authentication_error" {
				t.Errorf("admin %s with %s: %d %s, want 401 admin_token_invalid", op, token.name, res.Status, tail(string(res.Raw), 5))
			}
		}
	}
	after := snapshot(t, ctx, p)
	if diff := before.diff(after, false); diff != "" {
		t.Errorf("refused requests changed the stores:\n%s", diff)
	}

	// Phase 2: another account's or mode's key on a list or a create gets its own answer: no
	// object of A in it, and A's objects and lists unchanged (new objects of B and of A's live
	// mode are theirs).
	listsOfA := map[string]string{}
	for _, op := range publicOps {
		if !op.Public && op.Method == http.MethodGet && !byID(op.Path) && !op.Stream {
			listsOfA[op.Path] = string(send(t, base, op, fixtures, keyA).Raw)
		}
	}
	for _, o := range own {
		perCaller[o.caller.name]++
		res := send(t, base, o.op, fixtures, o.caller.key(o.op))
		switch {
		case res.Status >= 500:
			t.Errorf("%s with %s: %d %s", o.op, o.caller.name, res.Status, res.Raw)
		case o.op.Stream && (res.Status != 200 || res.Body["object"] != "event_stream" || res.Body["livemode"] != (o.caller.name == "the other mode's key")):
			t.Errorf("%s with %s: %d %s, want its own stream", o.op, o.caller.name, res.Status, tail(string(res.Raw), 5))
		case o.op.Method == http.MethodGet && !o.op.Stream && (res.Status != 200 || res.Body["object"] != "list"):
			t.Errorf("%s with %s: %d %s, want its own list", o.op, o.caller.name, res.Status, tail(string(res.Raw), 5))
		case res.Status < 300:
			for _, id := range idsOfA {
				if strings.Contains(string(res.Raw), id) {
					t.Errorf("%s with %s answered %d with A's %s: %s", o.op, o.caller.name, res.Status, id, res.Raw)
				}
			}
		}
	}
	for path, was := range listsOfA {
		if now := string(call(t, "GET", base+path, keyA, nil).Raw); now != was {
			t.Errorf("A's GET %s changed after other callers' lists and creates:\nbefore %s\nafter  %s", path, was, now)
		}
	}
	// Their creates move the outbox relay's marks (one per collection, shared by every account:
	// libs/docstore/marks.go), which are not A's.
	if diff := before.diff(snapshot(t, ctx, p), true, outboxMarks); diff != "" {
		t.Errorf("other callers' lists and creates changed existing objects:\n%s", diff)
	}

	// Control: the snapshot sees a write, A's own pause of its case.
	if res := call(t, "POST", base+"/v1/collection_cases/"+caseID+"/pause", keyA, nil); res.Status != 200 {
		t.Fatalf("control write: %d %s", res.Status, res.Raw)
	}
	if before.diff(snapshot(t, ctx, p), true, outboxMarks) == "" {
		t.Error("the store snapshot did not see A's own write: it compares nothing")
	}

	requests := 0
	var counts []string
	for _, c := range callers {
		requests += perCaller[c.name]
		counts = append(counts, fmt.Sprintf("%s %d", c.name, perCaller[c.name]))
	}
	t.Logf("isolation matrix: %d operations × %d callers = %d requests (%s); %d admin operations × 3 = %d requests; %d public operations need no key; stores compared: %s",
		covered, len(callers), requests, strings.Join(counts, ", "), adminCovered, adminRequests, public, before.size())
	if covered+public != len(publicOps) || adminCovered != len(adminOps) {
		t.Errorf("the matrix covered %d+%d public and %d admin operations; the documents have %d and %d",
			covered, public, adminCovered, len(publicOps), len(adminOps))
	}
}

// storeSnapshot is a hash of every document of the platform's databases: "db.collection" →
// _id → sha256 of the document's BSON.
type storeSnapshot map[string]map[string]string

// snapshotExcluded are the collections a refused request may legitimately write: the gateway
// stamps a key's last_used (at most once a minute) whenever the key authenticates, before the
// permission check or the service's 404. Redis is not compared: the failed-authentication
// counters and rate-limit windows move with every request, refused or not.
var snapshotExcluded = []string{"gateway.api_key_usage"}

func snapshot(t *testing.T, ctx context.Context, p *platform) storeSnapshot {
	t.Helper()
	client, err := mongo.Connect(options.Client().ApplyURI(p.MongoURI))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(ctx)
	dbs, err := client.ListDatabaseNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	out := storeSnapshot{}
	for _, db := range dbs {
		name, ok := strings.CutPrefix(db, p.DatabasePrefix)
		if !ok || slices.Contains([]string{"admin", "local", "config"}, db) {
			continue
		}
		colls, err := client.Database(db).ListCollectionNames(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		for _, coll := range colls {
			// On the embedded store each collection is a database of its own
			// (docstore.EmbeddedDatabase): keyed by its service's database all the same.
			service, _ := strings.CutSuffix(name, "-"+strings.ReplaceAll(coll, ".", "-"))
			key := service + "." + coll
			if slices.Contains(snapshotExcluded, key) {
				continue
			}
			cur, err := client.Database(db).Collection(coll).Find(ctx, bson.D{})
			if err != nil {
				t.Fatal(err)
			}
			docs := map[string]string{}
			for cur.Next(ctx) {
				h := sha256.Sum256(cur.Current)
				docs[cur.Current.Lookup("_id").String()] = hex.EncodeToString(h[:])
			}
			if err := cur.Err(); err != nil {
				t.Fatal(err)
			}
			cur.Close(ctx)
			out[key] = docs
		}
	}
	return out
}

// quietSnapshot waits until the stores have not changed for 2.5 s (more than two of the outbox
// relay's 1 s intervals, after which it stores its marks), and returns the snapshot.
func quietSnapshot(t *testing.T, ctx context.Context, p *platform) storeSnapshot {
	t.Helper()
	last, since := snapshot(t, ctx, p), time.Now()
	deadline := time.Now().Add(60 * time.Second)
	for time.Since(since) < 2500*time.Millisecond {
		time.Sleep(500 * time.Millisecond)
		next := snapshot(t, ctx, p)
		if diff := last.diff(next, false); diff != "" {
			if time.Now().After(deadline) {
				t.Fatalf("the stores kept changing before the matrix:\n%s", diff)
			}
			last, since = next, time.Now()
		}
	}
	return last
}

// outboxMarks is the outbox relay's collection of marks, in each service's database.
const outboxMarks = "docstore_outbox_marks"

// diff describes how after differs from s; allowNew ignores documents and collections only
// after has, and the collections named ignore (in any database) are not compared.
func (s storeSnapshot) diff(after storeSnapshot, allowNew bool, ignore ...string) string {
	var b strings.Builder
	for _, coll := range slices.Sorted(maps.Keys(s)) {
		if _, name, _ := strings.Cut(coll, "."); slices.Contains(ignore, name) {
			continue
		}
		for _, id := range slices.Sorted(maps.Keys(s[coll])) {
			switch h, ok := after[coll][id]; {
			case !ok:
				fmt.Fprintf(&b, "  %s: %s removed\n", coll, id)
			case h != s[coll][id]:
				fmt.Fprintf(&b, "  %s: %s changed\n", coll, id)
			}
		}
	}
	if !allowNew {
		for _, coll := range slices.Sorted(maps.Keys(after)) {
			for _, id := range slices.Sorted(maps.Keys(after[coll])) {
				if _, ok := s[coll][id]; !ok {
					fmt.Fprintf(&b, "  %s: %s added\n", coll, id)
				}
			}
		}
	}
	return b.String()
}

// size says how much a snapshot holds.
func (s storeSnapshot) size() string {
	docs := 0
	for _, c := range s {
		docs += len(c)
	}
	return fmt.Sprintf("%d documents in %d collections", docs, len(s))
}

// firstMessage opens a stream of Server-Sent Events as key and returns its answer up to the end
// of its first message, whose data is the Body; an answer that is not a stream is returned
// whole.
func firstMessage(t *testing.T, u, key string) response {
	t.Helper()
	ctx, cancel := context.WithTimeout(withTest(context.Background(), t), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out := response{Status: res.StatusCode, Header: res.Header}
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		out.Raw, _ = io.ReadAll(res.Body)
		json.Unmarshal(out.Raw, &out.Body)
		return out
	}
	sc := bufio.NewScanner(res.Body)
	var msg []string
	for sc.Scan() && (sc.Text() != "" || len(msg) == 0 || !slices.ContainsFunc(msg, func(l string) bool { return strings.HasPrefix(l, "data: ") })) {
		msg = append(msg, sc.Text())
	}
	out.Raw = []byte(strings.Join(msg, "\n"))
	for _, l := range msg {
		if d, ok := strings.CutPrefix(l, "data: "); ok {
			json.Unmarshal([]byte(d), &out.Body)
		}
	}
	return out
}
