package main

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"rentalplatform/deploy/local/internal/load"
)

// account is one test-mode account of the soak: its key, the webhook endpoint that receives
// all its events, and the objects its load created that later steps list, upload to or cancel.
type account struct {
	name string
	api  load.API
	// marker is the account's newest event before the load: every event after it must reach
	// the receiver.
	marker string
	// agreements the payment requests are made against: one whose charges succeed, one whose
	// charges fail with insufficient_funds (attempt 2 scheduled 24 h later, so the request stays
	// processing and can be cancelled).
	paySuccess, payFailing string
	upload                 []byte // a small PDF as a multipart body
	uploadType             string

	mu         sync.Mutex
	sessions   []string // verification sessions to cancel, oldest first
	cases      []string // collection cases to close, oldest first
	lastCase   string   // the case uploads go to
	agreements []string // agreements the load created, to cancel
	requests   []string // payment requests against payFailing, to cancel
}

// step is one request of the mix, for svc.
type step struct {
	svc string
	run func(a *account) error
}

// mix is the cycle of requests each account goes through, in order: per cycle 20 requests,
// every create followed later by its list and its cancel or close, so the objects the soak
// keeps open stay few and what grows is only what a platform in use accumulates (closed
// objects, events, deliveries).
var mix = []step{
	{"verification", createSession},
	{"collections", createCase},
	{"payments", createRequestFailing},
	{"webhooks", listEvents},
	{"verification", listSessions},
	{"collections", uploadFile},
	{"payments", createRequestSuccess},
	{"payments", listRequests},
	{"verification", cancelSession},
	{"collections", listCases},
	{"payments", cancelRequest},
	{"webhooks", listEndpoints},
	{"payments", createAgreement},
	{"collections", uploadFile},
	{"verification", createSession},
	{"payments", cancelAgreement},
	{"collections", closeCase},
	{"verification", cancelSession},
	{"payments", listAgreements},
	{"verification", listSessions},
}

// sessionBody is a verification session as a typical client creates one.
const sessionBody = `{"applicant":{"first_name":"Jane","last_name":"Doe","email":"jane.doe@example.com","date_of_birth":"1990-02-28",` +
	`"phone":"+4915112345678","address":{"line1":"1 Main St","city":"Berlin","postal_code":"10115","country":"DE"}},` +
	`"products":["identity","income","credit"],"metadata":{"soak":"verification"}}`

func createSession(a *account) error {
	id, err := a.create("/v1/verification_sessions", sessionBody)
	a.push(&a.sessions, id)
	return err
}

func listSessions(a *account) error {
	_, err := a.api.Call(fasthttp.MethodGet, "/v1/verification_sessions?limit=10", "")
	return err
}

func cancelSession(a *account) error {
	id := a.pop(&a.sessions)
	if id == "" {
		return createSession(a)
	}
	_, err := a.api.Call(fasthttp.MethodPost, "/v1/verification_sessions/"+id+"/cancel", "")
	return err
}

var countries = []string{"DE", "FR", "NL", "AT"}

func createCase(a *account) error {
	// due_date is at most tomorrow (UTC): a debt is collected once it is due.
	due := time.Now().UTC().AddDate(0, 0, -30).Format(time.DateOnly)
	c := countries[time.Now().Nanosecond()%len(countries)]
	id, err := a.create("/v1/collection_cases", fmt.Sprintf(`{"amount_to_recover":12000,"currency":"eur","due_date":%q,"creditor_reference":"SOAK-1",`+
		`"debtor":{"type":"private","name":"Soak Debtor","address":{"line1":"1 Main St","city":"Berlin","postal_code":"10115","country":%q},"country":%q}}`, due, c, c))
	if id != "" {
		a.push(&a.cases, id)
		a.mu.Lock()
		a.lastCase = id
		a.mu.Unlock()
	}
	return err
}

func listCases(a *account) error {
	_, err := a.api.Call(fasthttp.MethodGet, "/v1/collection_cases?status=active&debtor_country=DE", "")
	return err
}

func uploadFile(a *account) error {
	a.mu.Lock()
	id := a.lastCase
	a.mu.Unlock()
	if id == "" {
		return createCase(a)
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	path := "/v1/collection_cases/" + id + "/files"
	req.SetRequestURI(a.api.Base + path)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.Set("Authorization", "Bearer "+a.api.Key)
	req.Header.SetContentType(a.uploadType)
	req.SetBodyRaw(a.upload)
	if err := a.api.Client.DoTimeout(req, resp, 30*time.Second); err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	if resp.StatusCode() != 200 {
		return fmt.Errorf("POST %s: %d %s", path, resp.StatusCode(), resp.Body())
	}
	return nil
}

func closeCase(a *account) error {
	id := a.pop(&a.cases)
	if id == "" {
		return createCase(a)
	}
	_, err := a.api.Call(fasthttp.MethodPost, "/v1/collection_cases/"+id+"/close", `{"close_code":"withdrawn"}`)
	return err
}

func agreementBody(token string) string {
	return fmt.Sprintf(`{"tenant":{"name":"Soak Tenant","email":"tenant@example.com"},"payment_methods":[{"type":"sepa_debit","token":%q,"preferred":true}]}`, token)
}

func createAgreement(a *account) error {
	id, err := a.create("/v1/payment_agreements", agreementBody("tok_test_success"))
	a.push(&a.agreements, id)
	return err
}

func cancelAgreement(a *account) error {
	id := a.pop(&a.agreements)
	if id == "" {
		return createAgreement(a)
	}
	_, err := a.api.Call(fasthttp.MethodPost, "/v1/payment_agreements/"+id+"/cancel", "")
	return err
}

func listAgreements(a *account) error {
	_, err := a.api.Call(fasthttp.MethodGet, "/v1/payment_agreements?limit=10", "")
	return err
}

func requestBody(agreement string) string {
	return fmt.Sprintf(`{"payment_agreement":%q,"amount":125000,"currency":"eur","description":"Soak rent"}`, agreement)
}

func createRequestFailing(a *account) error {
	id, err := a.create("/v1/payment_requests", requestBody(a.payFailing))
	a.push(&a.requests, id)
	return err
}

func createRequestSuccess(a *account) error {
	_, err := a.create("/v1/payment_requests", requestBody(a.paySuccess))
	return err
}

func listRequests(a *account) error {
	_, err := a.api.Call(fasthttp.MethodGet, "/v1/payment_requests?limit=10", "")
	return err
}

// cancelRequest cancels a request whose first attempt failed (or is running: the cancel then
// waits for its outcome, a failure, and goes through).
func cancelRequest(a *account) error {
	id := a.pop(&a.requests)
	if id == "" {
		return createRequestFailing(a)
	}
	_, err := a.api.Call(fasthttp.MethodPost, "/v1/payment_requests/"+id+"/cancel", "")
	return err
}

func listEvents(a *account) error {
	_, err := a.api.Call(fasthttp.MethodGet, "/v1/events?limit=10", "")
	return err
}

func listEndpoints(a *account) error {
	_, err := a.api.Call(fasthttp.MethodGet, "/v1/webhook_endpoints?limit=10", "")
	return err
}

// create POSTs body to path and returns the created object's id ("" on failure).
func (a *account) create(path, body string) (string, error) {
	raw, err := a.api.Call(fasthttp.MethodPost, path, body)
	if err != nil {
		return "", err
	}
	var out struct{ ID string }
	if err := json.Unmarshal(raw, &out); err != nil || out.ID == "" {
		return "", fmt.Errorf("POST %s answered %.200s", path, raw)
	}
	return out.ID, nil
}

func (a *account) push(pool *[]string, id string) {
	if id == "" {
		return
	}
	a.mu.Lock()
	*pool = append(*pool, id)
	a.mu.Unlock()
}

// pop takes the oldest id of pool; "" when it is empty.
func (a *account) pop(pool *[]string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(*pool) == 0 {
		return ""
	}
	id := (*pool)[0]
	*pool = (*pool)[1:]
	return id
}
