package e2e

// Collection cases end to end (issue 13 §4): cases, their lifecycle, debt payments and files
// through the gateway with real API keys on one stack; uploads streamed through the gateway
// to GridFS and back; the events a webhook endpoint receives (TLS receiver on 127.0.0.1,
// signatures verified); isolation between accounts and modes on every route, the file
// content route included.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"mime/multipart"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"testing"

	"rentalplatform/deploy/local/e2e/receiver"
	"rentalplatform/libs/eventtype"
)

// collectionTypes are every event a case raises.
var collectionTypes = []string{
	eventtype.CollectionCaseCreated, eventtype.CollectionCaseUpdated, eventtype.CollectionCaseClosed,
	eventtype.CaseFileCreated, eventtype.DebtPaymentCreated,
}

// fileLimit is collections-svc's file limit (25 MiB; the gateway's upload limit is 1 MiB more).
const fileLimit = 25 << 20

func caseRequest(country, creditorRef string) map[string]any {
	return map[string]any{
		"amount_to_recover": 90000, "currency": "EUR", "due_date": "2026-01-31", "creditor_reference": creditorRef,
		"debtor": map[string]any{"type": "private", "name": "Max Mustermann", "email": "max@example.com",
			"address": map[string]any{"line1": "Hauptstr. 1", "city": "Berlin", "postal_code": "10115", "country": country}, "country": country},
	}
}

// uploadFile sends a multipart upload through the gateway.
func (p *platform) uploadFile(t *testing.T, key, caseID, filename string, body []byte, docType string) response {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, filename))
	h.Set("Content-Type", "application/pdf") // whatever the client claims
	fw, err := w.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(body)
	if docType != "" {
		_ = w.WriteField("document_type", docType)
	}
	_ = w.Close()
	return callRaw(t, "POST", p.GatewayURL+"/v1/collection_cases/"+caseID+"/files", key, buf.String(),
		map[string]string{"Content-Type": w.FormDataContentType()})
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func TestCollectionCases(t *testing.T) {
	t.Parallel()
	p := startWith(t, stackConfig{env: deliveryEnv("1s,2s,3s")})
	t.Cleanup(func() { p.noDeaths(t) })
	base := p.GatewayURL + "/v1/collection_cases"

	t.Run("lifecycle, payments and files, events at the endpoint", func(t *testing.T) {
		t.Parallel()
		rx := receiver.New(t)
		key := p.newKey(t, "acct_collect", false)
		_, secret := p.createEndpoint(t, key, rx.URL()+"/hooks", collectionTypes...)

		created := call(t, "POST", base, key, caseRequest("DE", "INV-1"))
		id, ref := str(created.Body["id"]), str(created.Body["reference"])
		if created.Status != 200 || created.Body["status"] != "active" || created.Body["remainder"] != float64(90000) ||
			created.Body["is_test"] != true || !strings.HasPrefix(ref, "DC-") || created.Body["close_code"] != nil {
			t.Fatalf("create: %d %s", created.Status, created.Raw)
		}
		if got := call(t, "GET", base+"/ref/"+ref, key, nil); got.Status != 200 || got.Body["id"] != id {
			t.Fatalf("by reference: %d %s", got.Status, got.Raw)
		}
		wantErr(t, call(t, "POST", base, key, map[string]any{"amount_to_recover": 1, "debtor": map[string]any{"contact_person": "x"}}),
			400, "parameter_unknown", "debtor.contact_person")

		for _, action := range []string{"pause", "resume"} {
			if r := call(t, "POST", base+"/"+id+"/"+action, key, nil); r.Status != 200 {
				t.Fatalf("%s: %d %s", action, r.Status, r.Raw)
			}
		}
		wantErr(t, call(t, "POST", base+"/"+id+"/resume", key, nil), 400, "invalid_state", "")
		pay1 := call(t, "POST", base+"/"+id+"/payments", key, map[string]any{"amount": 40000, "paid_at": "2026-11-02"})
		wantErr(t, call(t, "POST", base+"/"+id+"/payments", key, map[string]any{"amount": 50001, "paid_at": "2026-11-03"}),
			400, "amount_exceeds_remainder", "amount")
		pay2 := call(t, "POST", base+"/"+id+"/payments", key, map[string]any{"amount": 50000, "paid_at": "2026-11-03", "reference": "SEPA-9"})
		if pay1.Status != 200 || pay2.Status != 200 {
			t.Fatalf("payments: %s %s", pay1.Raw, pay2.Raw)
		}
		closed := call(t, "GET", base+"/"+id, key, nil)
		if closed.Body["status"] != "closed" || closed.Body["close_code"] != "paid_in_full" || closed.Body["remainder"] != float64(0) {
			t.Fatalf("after the last payment: %s", closed.Raw)
		}
		paid := call(t, "GET", base+"/"+id+"/payments?limit=1", key, nil)
		if data, _ := paid.Body["data"].([]any); paid.Status != 200 || len(data) != 1 || data[0].(map[string]any)["id"] != pay2.Body["id"] || paid.Body["has_more"] != true {
			t.Fatalf("debt payments, newest first: %d %s", paid.Status, paid.Raw)
		}
		// A case closed by the caller, with a code; closing is final.
		other := call(t, "POST", base, key, caseRequest("DE", "INV-2"))
		otherID := str(other.Body["id"])
		if r := call(t, "POST", base+"/"+otherID+"/close", key, map[string]any{"close_code": "settled"}); r.Status != 200 || r.Body["status"] != "closed" || r.Body["close_code"] != "settled" {
			t.Fatalf("close: %d %s", r.Status, r.Raw)
		}
		wantErr(t, call(t, "POST", base+"/"+otherID+"/close", key, map[string]any{"close_code": "withdrawn"}), 400, "invalid_state", "")
		wantErr(t, call(t, "POST", base+"/"+otherID+"/close", key, map[string]any{"close_code": "won"}), 400, "parameter_invalid", "close_code")

		// A file of exactly the limit, through the gateway's streamed upload route, to the
		// closed case, and back.
		pdf := append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("evidence "), (fileLimit-9)/9)...)
		pdf = append(pdf, bytes.Repeat([]byte{'.'}, fileLimit-len(pdf))...)
		up := p.uploadFile(t, key, id, "statement.pdf", pdf, "creditor_documents")
		if up.Status != 200 || up.Body["sha256"] != sha(pdf) || up.Body["size"] != float64(len(pdf)) || up.Body["content_type"] != "application/pdf" {
			t.Fatalf("upload: %d %s", up.Status, up.Raw)
		}
		fileID := str(up.Body["id"])
		content := base + "/" + id + "/files/" + fileID + "/content"
		down := callRaw(t, "GET", content, key, "", nil)
		if down.Status != 200 || sha(down.Raw) != sha(pdf) || down.Header.Get("Content-Type") != "application/pdf" ||
			down.Header.Get("Content-Length") != strconv.Itoa(fileLimit) {
			t.Fatalf("download: %d, sha256 equal %v, %v", down.Status, sha(down.Raw) == sha(pdf), down.Header)
		}
		// Spoofed and oversize uploads are refused by the service, and the client gets the
		// answer (the service reads the rest of what the gateway streams before it answers).
		wantErr(t, p.uploadFile(t, key, id, "invoice.pdf", []byte("MZ\x90\x00\x03\x00\x00\x00 not a pdf"), "original_invoice"), 415, "file_type_unsupported", "file")
		wantErr(t, p.uploadFile(t, key, id, "big.pdf", append([]byte("%PDF-1.7\n"), make([]byte, fileLimit)...), "original_invoice"), 413, "file_too_large", "file")
		// A body over the gateway's upload limit (26 MiB: the file and 1 MiB of form) is
		// refused there, before the service.
		wantErr(t, p.uploadFile(t, key, id, "bigger.pdf", append([]byte("%PDF-1.7\n"), make([]byte, fileLimit+1<<20)...), "original_invoice"), 413, "body_too_large", "")
		wantErr(t, p.uploadFile(t, key, id, "x.pdf", []byte("%PDF-1.7\n"), ""), 400, "parameter_missing", "document_type")

		pays := []string{str(pay1.Body["id"]), str(pay2.Body["id"])}
		ids := append([]string{id, fileID}, pays...)
		want := []string{
			eventtype.CollectionCaseCreated, eventtype.CollectionCaseUpdated, eventtype.CollectionCaseUpdated,
			eventtype.DebtPaymentCreated, eventtype.CollectionCaseUpdated,
			eventtype.DebtPaymentCreated, eventtype.CollectionCaseUpdated, eventtype.CollectionCaseClosed,
			eventtype.CaseFileCreated,
		}
		reqs := rx.WaitUntil(t, "/hooks", deliveryWait, "the case's events", hasSequence(want, ids...))
		if got := sequence(reqs, ids...); !slices.Equal(got, want) {
			t.Fatalf("events %v\nwant %v", got, want)
		}
		for _, q := range reqs {
			if err := verifier(t, secret).Verify(q.Header, q.Body); err != nil {
				t.Fatalf("%s: %v", q.Event().Type, err)
			}
		}
		updates := about(reqs, eventtype.CollectionCaseUpdated, id)
		var prev []string
		for _, u := range updates {
			prev = append(prev, fmt.Sprint(u.Event().Data.PreviousAttributes))
		}
		slices.Sort(prev)
		wantPrev := []string{"map[close_code:<nil> remainder:50000 status:active]", "map[remainder:90000]", "map[status:active]", "map[status:paused]"}
		if !slices.Equal(prev, wantPrev) {
			t.Errorf("previous_attributes %v\nwant %v", prev, wantPrev)
		}
		if ev := about(reqs, eventtype.CaseFileCreated, fileID)[0].Event(); ev.Data.Object["collection_case"] != id || ev.Data.Object["sha256"] != sha(pdf) {
			t.Errorf("case_file.created object: %v", ev.Data.Object)
		}
	})

	t.Run("lists and isolation", func(t *testing.T) {
		t.Parallel()
		key := p.newKey(t, "acct_collectlist", false)
		var ids []string
		for i, country := range []string{"DE", "FR", "DE", "FR", "DE"} {
			r := call(t, "POST", base, key, caseRequest(country, fmt.Sprintf("INV-%d", i%2)))
			if r.Status != 200 {
				t.Fatalf("create: %s", r.Raw)
			}
			ids = append(ids, str(r.Body["id"]))
		}
		if r := call(t, "POST", base+"/"+ids[4]+"/pause", key, nil); r.Status != 200 {
			t.Fatal(r.Raw)
		}
		page := func(q string) []string {
			t.Helper()
			r := call(t, "GET", base+"?"+q, key, nil)
			if r.Status != 200 {
				t.Fatalf("?%s: %d %s", q, r.Status, r.Raw)
			}
			var out []string
			for _, d := range r.Body["data"].([]any) {
				out = append(out, str(d.(map[string]any)["id"]))
			}
			return out
		}
		if got := page("debtor_country=DE&status=active"); !slices.Equal(got, []string{ids[2], ids[0]}) {
			t.Errorf("DE and active: %v", got)
		}
		if got := page("debtor_country=DE&creditor_reference=INV-0&limit=1&starting_after=" + ids[4]); !slices.Equal(got, []string{ids[2]}) {
			t.Errorf("DE, INV-0, after 4: %v", got)
		}
		if got := page("debtor_country=DE&limit=1&ending_before=" + ids[0]); !slices.Equal(got, []string{ids[2]}) {
			t.Errorf("DE before 0: %v", got)
		}
		wantErr(t, call(t, "GET", base+"?debtor_type=person", key, nil), 400, "parameter_invalid", "debtor_type")

		up := p.uploadFile(t, key, ids[0], "n.pdf", []byte("%PDF-1.4\n%%EOF\n"), "miscellaneous")
		if up.Status != 200 {
			t.Fatalf("upload: %s", up.Raw)
		}
		ref := str(call(t, "GET", base+"/"+ids[0], key, nil).Body["reference"])
		content := base + "/" + ids[0] + "/files/" + str(up.Body["id"]) + "/content"
		for _, stranger := range []string{p.newKey(t, "acct_collectother", false), p.newKey(t, "acct_collectlist", true)} {
			for _, r := range []response{
				call(t, "GET", base+"/"+ids[0], stranger, nil),
				call(t, "GET", base+"/ref/"+ref, stranger, nil),
				call(t, "POST", base+"/"+ids[0]+"/pause", stranger, nil),
				call(t, "GET", base+"/"+ids[0]+"/files", stranger, nil),
				callRaw(t, "GET", content, stranger, "", nil),
				p.uploadFile(t, stranger, ids[0], "n.pdf", []byte("%PDF-1.4\n"), "miscellaneous"),
			} {
				if r.Status != 404 || r.errCode() != "resource_missing" {
					t.Errorf("a stranger: %d %s", r.Status, r.Raw)
				}
			}
			if got := call(t, "GET", base, stranger, nil); got.Status != 200 || len(got.Body["data"].([]any)) != 0 {
				t.Errorf("a stranger's list: %s", got.Raw)
			}
		}
	})
}
