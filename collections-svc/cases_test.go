package main

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"rentalplatform/libs/servicetest"
)

func mustStatus(t *testing.T, r servicetest.Response, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Raw)
	}
}

// wantNotFound checks a 404 resource_missing: another account's or mode's objects and ids that
// never existed are answered alike.
func wantNotFound(t *testing.T, r servicetest.Response) {
	t.Helper()
	if r.Status != http.StatusNotFound || r.ErrCode() != "resource_missing" {
		t.Errorf("got %d %s; want 404 resource_missing", r.Status, r.Raw)
	}
}

// caseBody is a valid create body; extra top-level fields (raw JSON) are added to it.
func caseBody(extra ...string) string {
	fields := append([]string{
		`"amount_to_recover":120000`, `"currency":"EUR"`,
		`"debtor":{"type":"company","name":"ACME GmbH","email":"ap@acme.example","phone":"+4930123456",` +
			`"address":{"line1":"Hauptstr. 1","city":"Berlin","postal_code":"10115","country":"DE"},"country":"DE"}`,
		`"due_date":"2026-01-31"`,
	}, extra...)
	return "{" + strings.Join(fields, ",") + "}"
}

func createCase(t *testing.T, c *servicetest.Client, body string) map[string]any {
	t.Helper()
	r := c.Do(http.MethodPost, "/v1/collection_cases", body)
	mustStatus(t, r, http.StatusOK)
	return r.Body
}

// debtorWith is a create body whose debtor is given whole (raw JSON).
func debtorWith(debtor string) string {
	return `{"amount_to_recover":100,"currency":"eur","due_date":"2026-01-31","debtor":` + debtor + `}`
}

const addr = `"address":{"line1":"1 St","city":"Lyon","postal_code":"69001","country":"FR"}`

func TestCases(t *testing.T) {
	p := start(t, "COLLECTIONS_PARTNER_NAME", "Inkasso Partner AG", "COLLECTIONS_PARTNER_EMAIL", "cases@inkasso.example",
		"COLLECTIONS_PARTNER_PHONE", "+4940123456", "COLLECTIONS_PARTNER_SITE", "https://inkasso.example")
	newClient := func(t *testing.T) *servicetest.Client { return servicetest.NewClient(t, p.URL("http")) }

	t.Run("create and read", func(t *testing.T) {
		t.Parallel()
		c := newClient(t)
		before := time.Now().Unix()
		cs := createCase(t, c, caseBody(`"creditor_reference":"INV-2026-0042"`, `"metadata":{"unit":"4B"}`))
		id, ref := cs["id"].(string), cs["reference"].(string)
		if !strings.HasPrefix(id, "dc_") || len(id) != 39 || len(ref) != 9 || !strings.HasPrefix(ref, "DC-") {
			t.Fatalf("id %q, reference %q", id, ref)
		}
		want := map[string]any{
			"object": "collection_case", "status": "active", "close_code": nil, "amount_to_recover": float64(120000),
			"remainder": float64(120000), "currency": "eur", "creditor_reference": "INV-2026-0042",
			"due_date": float64(time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC).Unix()), "is_test": true,
		}
		for k, v := range want {
			if cs[k] != v {
				t.Errorf("%s = %v, want %v", k, cs[k], v)
			}
		}
		if _, ok := cs["livemode"]; ok {
			t.Error("a collection case shows livemode (it carries is_test)")
		}
		if created := int64(cs["created"].(float64)); created < before-1 || created > time.Now().Unix()+1 {
			t.Errorf("created = %d", created)
		}
		partner := cs["collection_partner"].(map[string]any)
		if partner["name"] != "Inkasso Partner AG" || partner["email"] != "cases@inkasso.example" || partner["phone"] != "+4940123456" || partner["site"] != "https://inkasso.example" {
			t.Errorf("collection_partner = %v", partner)
		}
		d := cs["debtor"].(map[string]any)
		if d["type"] != "company" || d["name"] != "ACME GmbH" || d["contact_person"] != nil || d["email"] != "ap@acme.example" ||
			d["phone"] != "+4930123456" || d["country"] != "DE" || d["address"].(map[string]any)["postal_code"] != "10115" {
			t.Errorf("debtor = %v", d)
		}
		if cs["metadata"].(map[string]any)["unit"] != "4B" {
			t.Errorf("metadata = %v", cs["metadata"])
		}
		for _, path := range []string{"/v1/collection_cases/" + id, "/v1/collection_cases/ref/" + ref, "/v1/collection_cases/ref/" + strings.ToLower(ref)} {
			got := c.Do(http.MethodGet, path, "")
			mustStatus(t, got, http.StatusOK)
			if got.Str("id") != id || got.Str("reference") != ref || got.Body["remainder"] != float64(120000) {
				t.Errorf("GET %s = %s", path, got.Raw)
			}
		}
		for _, path := range []string{"/v1/collection_cases/dc_0190a0b0-0000-7000-8000-000000000000", "/v1/collection_cases/not-an-id",
			"/v1/collection_cases/ref/DC-000000", "/v1/collection_cases/ref/nonsense"} {
			wantNotFound(t, c.Do(http.MethodGet, path, ""))
		}
	})

	t.Run("validation", func(t *testing.T) {
		t.Parallel()
		c := newClient(t)
		for _, tc := range []struct {
			name, body, code, param string
		}{
			{"contact_person", debtorWith(`{"type":"company","name":"A","contact_person":"Eve",` + addr + `,"country":"FR"}`), "parameter_unknown", "debtor.contact_person"},
			{"unknown top-level", caseBody(`"livemode":true`), "parameter_unknown", "livemode"},
			{"unknown address field", debtorWith(`{"type":"private","name":"A","address":{"line1":"1","line2":"2","city":"c","postal_code":"p","country":"FR"},"country":"FR"}`), "parameter_unknown", "debtor.address.line2"},
			{"amount missing", `{"currency":"eur","due_date":"2026-01-31","debtor":{"type":"private","name":"A",` + addr + `,"country":"FR"}}`, "parameter_missing", "amount_to_recover"},
			{"amount a string", strings.Replace(caseBody(), "120000", `"100"`, 1), "parameter_invalid", "amount_to_recover"},
			{"amount a fraction", strings.Replace(caseBody(), "120000", "12.5", 1), "parameter_invalid", "amount_to_recover"},
			{"amount zero", strings.Replace(caseBody(), "120000", "0", 1), "parameter_invalid", "amount_to_recover"},
			{"currency", strings.Replace(caseBody(), `"EUR"`, `"EURO"`, 1), "parameter_invalid", "currency"},
			{"debtor missing", `{"amount_to_recover":1,"currency":"eur","due_date":"2026-01-31"}`, "parameter_missing", "debtor"},
			{"debtor.type", debtorWith(`{"type":"person","name":"A",` + addr + `,"country":"FR"}`), "parameter_invalid", "debtor.type"},
			{"debtor.name", debtorWith(`{"type":"private",` + addr + `,"country":"FR"}`), "parameter_missing", "debtor.name"},
			{"debtor.email", debtorWith(`{"type":"private","name":"A","email":"no",` + addr + `,"country":"FR"}`), "parameter_invalid", "debtor.email"},
			{"debtor.phone", debtorWith(`{"type":"private","name":"A","phone":"12",` + addr + `,"country":"FR"}`), "parameter_invalid", "debtor.phone"},
			{"debtor.address", debtorWith(`{"type":"private","name":"A","country":"FR"}`), "parameter_missing", "debtor.address"},
			{"debtor.address.city", debtorWith(`{"type":"private","name":"A","address":{"line1":"1","postal_code":"p","country":"FR"},"country":"FR"}`), "parameter_missing", "debtor.address.city"},
			{"debtor.address.country", debtorWith(`{"type":"private","name":"A","address":{"line1":"1","city":"c","postal_code":"p","country":"France"},"country":"FR"}`), "parameter_invalid", "debtor.address.country"},
			{"debtor.country", debtorWith(`{"type":"private","name":"A",` + addr + `}`), "parameter_missing", "debtor.country"},
			{"due_date", strings.Replace(caseBody(), "2026-01-31", "2026-1-31", 1), "parameter_invalid", "due_date"},
			{"due_date a timestamp", strings.Replace(caseBody(), `"2026-01-31"`, `1706659200`, 1), "parameter_invalid", "due_date"},
			{"creditor_reference", caseBody(`"creditor_reference":""`), "parameter_invalid", "creditor_reference"},
			{"metadata", caseBody(`"metadata":{"k":1}`), "parameter_invalid", "metadata[k]"},
			{"key twice", `{"amount_to_recover":1,"amount_to_recover":2}`, "parameter_duplicate", "amount_to_recover"},
		} {
			r := c.Do(http.MethodPost, "/v1/collection_cases", tc.body)
			if r.Status != 400 || r.ErrCode() != tc.code || r.ErrParam() != tc.param {
				t.Errorf("%s: %d %s", tc.name, r.Status, r.Raw)
			}
		}
		// Nothing was stored.
		list := c.Do(http.MethodGet, "/v1/collection_cases", "")
		mustStatus(t, list, http.StatusOK)
		if n := len(list.Body["data"].([]any)); n != 0 {
			t.Errorf("refused creates stored %d cases", n)
		}
	})

	t.Run("lists", func(t *testing.T) {
		t.Parallel()
		c := newClient(t)
		// 9 cases: types alternate, countries cycle DE/FR/NL, three paused, two with INV-7.
		var ids []string
		countries := []string{"DE", "FR", "NL"}
		for i := range 9 {
			typ := []string{"company", "private"}[i%2]
			body := fmt.Sprintf(`{"amount_to_recover":%d,"currency":"eur","due_date":"2026-01-31","debtor":{"type":%q,"name":"D%d",`+
				`"address":{"line1":"1","city":"c","postal_code":"p","country":%q},"country":%q}%s}`,
				100+i, typ, i, countries[i%3], countries[i%3], map[bool]string{true: `,"creditor_reference":"INV-7"`}[i%4 == 0])
			cs := createCase(t, c, body)
			ids = append(ids, cs["id"].(string))
			if i >= 6 {
				mustStatus(t, c.Do(http.MethodPost, "/v1/collection_cases/"+ids[i]+"/pause", ""), http.StatusOK)
			}
		}
		// Cases of another account and mode never show.
		createCase(t, newClient(t), caseBody())
		createCase(t, c.Mode(true), caseBody())

		names := func(r servicetest.Response) string {
			var out []string
			for _, d := range r.Body["data"].([]any) {
				out = append(out, strings.TrimPrefix(d.(map[string]any)["debtor"].(map[string]any)["name"].(string), "D"))
			}
			return strings.Join(out, " ")
		}
		list := func(q string) servicetest.Response {
			t.Helper()
			r := c.Do(http.MethodGet, "/v1/collection_cases?"+q, "")
			mustStatus(t, r, http.StatusOK)
			if r.Body["object"] != "list" || r.Body["url"] != "/v1/collection_cases" {
				t.Fatalf("list object: %s", r.Raw)
			}
			return r
		}
		for _, tc := range []struct{ q, want string }{
			{"", "8 7 6 5 4 3 2 1 0"},
			{"status=paused", "8 7 6"},
			{"status=active", "5 4 3 2 1 0"},
			{"status=closed", ""},
			{"debtor_country=FR", "7 4 1"},
			{"debtor_country=fr", "7 4 1"},
			{"debtor_type=private", "7 5 3 1"},
			{"creditor_reference=INV-7", "8 4 0"},
			{"status=active&debtor_type=company", "4 2 0"},
			{"status=paused&debtor_country=DE&debtor_type=private", ""},
			{"debtor_country=DE&creditor_reference=INV-7&debtor_type=company", "0"},
			{"status=active&debtor_type=company&limit=2", "4 2"},
			{"status=active&debtor_type=company&limit=2&starting_after=" + ids[2], "0"},
			{"status=active&debtor_type=company&limit=2&ending_before=" + ids[0], "4 2"},
			{"status=active&debtor_type=company&limit=1&ending_before=" + ids[2], "4"},
			{"debtor_country=NL&limit=1&ending_before=" + ids[2], "5"},
		} {
			if got := names(list(tc.q)); got != tc.want {
				t.Errorf("?%s = [%s]; want [%s]", tc.q, got, tc.want)
			}
		}
		// has_more, both ways.
		page := list("debtor_type=company&limit=2")
		if names(page) != "8 6" || page.Body["has_more"] != true {
			t.Errorf("page 1: %s", page.Raw)
		}
		page = list("debtor_type=company&limit=2&starting_after=" + ids[6])
		if names(page) != "4 2" || page.Body["has_more"] != true {
			t.Errorf("page 2: %s", page.Raw)
		}
		page = list("debtor_type=company&limit=2&starting_after=" + ids[2])
		if names(page) != "0" || page.Body["has_more"] != false {
			t.Errorf("page 3: %s", page.Raw)
		}
		page = list("debtor_type=company&limit=2&ending_before=" + ids[4])
		if names(page) != "8 6" || page.Body["has_more"] != false {
			t.Errorf("back from 4: %s", page.Raw)
		}
		page = list("debtor_type=company&limit=1&ending_before=" + ids[4])
		if names(page) != "6" || page.Body["has_more"] != true {
			t.Errorf("back one from 4: %s", page.Raw)
		}
		// created bounds: all created within this second or the last few.
		now := time.Now().Unix()
		if got := names(list(fmt.Sprintf("created[gte]=%d&created[lte]=%d&status=paused", now-60, now+1))); got != "8 7 6" {
			t.Errorf("created window = %s", got)
		}
		for _, tc := range []struct{ q, want string }{
			// created bounds and creditor_reference with a cursor, both ways.
			{fmt.Sprintf("created[gte]=%d&created[lte]=%d&limit=2&starting_after=%s", now-60, now+1, ids[4]), "3 2"},
			{fmt.Sprintf("created[gte]=%d&limit=2&ending_before=%s", now-60, ids[4]), "6 5"},
			{fmt.Sprintf("created[lte]=%d&debtor_type=company&limit=2&ending_before=%s", now+1, ids[2]), "6 4"},
			{"creditor_reference=INV-7&limit=1&starting_after=" + ids[8], "4"},
			{"creditor_reference=INV-7&limit=1&ending_before=" + ids[0], "4"},
			{"creditor_reference=INV-7&limit=2&ending_before=" + ids[0], "8 4"},
		} {
			if got := names(list(tc.q)); got != tc.want {
				t.Errorf("?%s = [%s]; want [%s]", tc.q, got, tc.want)
			}
		}
		if got := names(list(fmt.Sprintf("created[gte]=%d", now+60))); got != "" {
			t.Errorf("created in the future = %s", got)
		}
		if got := names(list(fmt.Sprintf("created[lte]=%d", now-3600))); got != "" {
			t.Errorf("created an hour ago = %s", got)
		}
		for _, tc := range []struct{ q, code, param string }{
			{"status=open", "parameter_invalid", "status"},
			{"debtor_country=Germany", "parameter_invalid", "debtor_country"},
			{"debtor_type=person", "parameter_invalid", "debtor_type"},
			{"creditor_reference=" + strings.Repeat("x", 101), "parameter_invalid", "creditor_reference"},
			{"creditor_reference=%20%20", "parameter_invalid", "creditor_reference"},
			{"creditor_reference=INV%07", "parameter_invalid", "creditor_reference"},
			{"created[gte]=yesterday", "parameter_invalid", "created[gte]"},
			{"limit=101", "parameter_invalid", "limit"},
			{"starting_after=vs_1", "parameter_invalid", "starting_after"},
			{"starting_after=" + ids[1] + "&ending_before=" + ids[2], "parameters_exclusive", "ending_before"},
			{"debtor_name=x", "parameter_unknown", "debtor_name"},
			{"status=active&status=paused", "parameter_duplicate", "status"},
			{"status=", "parameter_invalid", "status"},
		} {
			r := c.Do(http.MethodGet, "/v1/collection_cases?"+tc.q, "")
			if r.Status != 400 || r.ErrCode() != tc.code || r.ErrParam() != tc.param {
				t.Errorf("?%s: %d %s; want %s on %s", tc.q, r.Status, r.Raw, tc.code, tc.param)
			}
		}
	})

	t.Run("lifecycle", func(t *testing.T) {
		t.Parallel()
		c := newClient(t)
		id := createCase(t, c, caseBody())["id"].(string)
		post := func(action, body string) servicetest.Response {
			return c.Do(http.MethodPost, "/v1/collection_cases/"+id+"/"+action, body)
		}
		for _, step := range []struct {
			action, body string
			status       int
			code         string
			after        string
		}{
			{"resume", "", 400, "invalid_state", "active"},
			{"pause", `{"reason":"x"}`, 400, "parameter_unknown", "active"},
			{"pause", "", 200, "", "paused"},
			{"pause", "", 400, "invalid_state", "paused"},
			{"resume", "", 200, "", "active"},
			{"close", "", 400, "parameter_missing", "active"},
			{"close", `{"close_code":"paid"}`, 400, "parameter_invalid", "active"},
			{"pause", "", 200, "", "paused"},
			{"close", `{"close_code":"settled"}`, 200, "", "closed"},
			{"close", `{"close_code":"settled"}`, 400, "invalid_state", "closed"},
			{"pause", "", 400, "invalid_state", "closed"},
			{"resume", "", 400, "invalid_state", "closed"},
			{"payments", `{"amount":1,"paid_at":"2026-11-01"}`, 400, "invalid_state", "closed"},
		} {
			r := post(step.action, step.body)
			if r.Status != step.status || (step.code != "" && r.ErrCode() != step.code) {
				t.Fatalf("%s %s: %d %s", step.action, step.body, r.Status, r.Raw)
			}
			got := c.Do(http.MethodGet, "/v1/collection_cases/"+id, "")
			if got.Str("status") != step.after {
				t.Fatalf("after %s: %s", step.action, got.Raw)
			}
		}
		if got := c.Do(http.MethodGet, "/v1/collection_cases/"+id, ""); got.Str("close_code") != "settled" {
			t.Errorf("close_code: %s", got.Raw)
		}
		c.Do(http.MethodPost, "/v1/collection_cases/dc_0190a0b0-0000-7000-8000-000000000000/pause", "").WantError(t, 404, "invalid_request_error", "resource_missing", "id")
	})

	t.Run("payments", func(t *testing.T) {
		t.Parallel()
		c := newClient(t)
		id := createCase(t, c, caseBody())["id"].(string)
		pay := func(body string) servicetest.Response {
			return c.Do(http.MethodPost, "/v1/collection_cases/"+id+"/payments", body)
		}
		for _, tc := range []struct{ body, code, param string }{
			{`{"paid_at":"2026-11-01"}`, "parameter_missing", "amount"},
			{`{"amount":120001,"paid_at":"2026-11-01"}`, "amount_exceeds_remainder", "amount"},
			{`{"amount":-1,"paid_at":"2026-11-01"}`, "parameter_invalid", "amount"},
			{`{"amount":1}`, "parameter_missing", "paid_at"},
			{`{"amount":1,"paid_at":"2099-01-01"}`, "parameter_invalid", "paid_at"},
			{`{"amount":1,"paid_at":"2026-11-01","reference":""}`, "parameter_invalid", "reference"},
			{`{"amount":1,"paid_at":"2026-11-01","currency":"eur"}`, "parameter_unknown", "currency"},
		} {
			r := pay(tc.body)
			if r.Status != 400 || r.ErrCode() != tc.code || r.ErrParam() != tc.param {
				t.Errorf("%s: %d %s", tc.body, r.Status, r.Raw)
			}
		}
		var payIDs []string
		for i, amount := range []int{20000, 50000, 50000} {
			r := pay(fmt.Sprintf(`{"amount":%d,"paid_at":"2026-11-0%d","reference":"wire-%d"}`, amount, i+1, i))
			mustStatus(t, r, http.StatusOK)
			if r.Body["object"] != "debt_payment" || !strings.HasPrefix(r.Str("id"), "dpay_") || r.Body["collection_case"] != id ||
				r.Body["amount"] != float64(amount) || r.Body["currency"] != "eur" || r.Body["is_test"] != true ||
				r.Body["paid_at"] != float64(time.Date(2026, 11, i+1, 0, 0, 0, 0, time.UTC).Unix()) {
				t.Fatalf("payment: %s", r.Raw)
			}
			payIDs = append(payIDs, r.Str("id"))
		}
		cs := c.Do(http.MethodGet, "/v1/collection_cases/"+id, "")
		if cs.Body["remainder"] != float64(0) || cs.Str("status") != "closed" || cs.Str("close_code") != "paid_in_full" || cs.Body["amount_to_recover"] != float64(120000) {
			t.Fatalf("after paying in full: %s", cs.Raw)
		}
		ids := func(r servicetest.Response) []string {
			var out []string
			for _, d := range r.Body["data"].([]any) {
				out = append(out, d.(map[string]any)["id"].(string))
			}
			return out
		}
		list := c.Do(http.MethodGet, "/v1/collection_cases/"+id+"/payments?limit=2", "")
		if got := ids(list); !slices.Equal(got, []string{payIDs[2], payIDs[1]}) || list.Body["has_more"] != true || list.Body["url"] != "/v1/collection_cases/"+id+"/payments" {
			t.Errorf("payments page 1: %s", list.Raw)
		}
		list = c.Do(http.MethodGet, "/v1/collection_cases/"+id+"/payments?limit=2&starting_after="+payIDs[1], "")
		if got := ids(list); !slices.Equal(got, []string{payIDs[0]}) || list.Body["has_more"] != false {
			t.Errorf("payments page 2: %s", list.Raw)
		}
		list = c.Do(http.MethodGet, "/v1/collection_cases/"+id+"/payments?limit=1&ending_before="+payIDs[0], "")
		if got := ids(list); !slices.Equal(got, []string{payIDs[1]}) || list.Body["has_more"] != true {
			t.Errorf("payments back: %s", list.Raw)
		}
	})

	t.Run("isolation", func(t *testing.T) {
		t.Parallel()
		owner := newClient(t)
		cs := createCase(t, owner, caseBody())
		id, ref := cs["id"].(string), cs["reference"].(string)
		for _, other := range []*servicetest.Client{newClient(t), owner.Mode(true)} {
			for _, tc := range []struct{ method, path, body string }{
				{http.MethodGet, "/v1/collection_cases/" + id, ""},
				{http.MethodGet, "/v1/collection_cases/ref/" + ref, ""},
				{http.MethodPost, "/v1/collection_cases/" + id + "/pause", ""},
				{http.MethodPost, "/v1/collection_cases/" + id + "/resume", ""},
				{http.MethodPost, "/v1/collection_cases/" + id + "/close", `{"close_code":"withdrawn"}`},
				{http.MethodPost, "/v1/collection_cases/" + id + "/payments", `{"amount":1,"paid_at":"2026-11-01"}`},
				{http.MethodGet, "/v1/collection_cases/" + id + "/payments", ""},
				{http.MethodGet, "/v1/collection_cases/" + id + "/files", ""},
			} {
				wantNotFound(t, other.Do(tc.method, tc.path, tc.body))
			}
		}
		if got := owner.Do(http.MethodGet, "/v1/collection_cases/"+id, ""); got.Str("status") != "active" || got.Body["remainder"] != float64(120000) {
			t.Errorf("another account or mode changed the case: %s", got.Raw)
		}
	})
}

func TestConfig(t *testing.T) {
	env := servicetest.Env(t)
	env["REDIS_URL"] = "redis://127.0.0.1:6379/0"
	env["COLLECTIONS_PARTNER_EMAIL"] = "not-an-email"
	env["COLLECTIONS_PARTNER_PHONE"] = "0301234"
	env["COLLECTIONS_PARTNER_SITE"] = "http://partner.example"
	env["OUTBOX_RELAY_INTERVAL"] = "0s"
	servicetest.RefusesConfig(t, run, env, "COLLECTIONS_PARTNER_EMAIL", "COLLECTIONS_PARTNER_PHONE", "COLLECTIONS_PARTNER_SITE", "OUTBOX_RELAY_INTERVAL")
	cfg, err := loadConfig(func(k string) string {
		if k == "INTERNAL_AUTH_SECRET" {
			return servicetest.Secret
		}
		return ""
	})
	if err != nil || cfg.Partner != defaultPartner || cfg.OutboxRelayInterval != time.Second {
		t.Fatalf("defaults: %+v %v", cfg, err)
	}
}
