package trigger

import (
	"slices"
	"strings"
)

// Step is one API call of a recipe.
type Step struct {
	// Fixture names the call's answer, so that later steps can use its fields as
	// ${fixture.field}; empty when none does. Every named fixture's id is reported.
	Fixture string
	Method  string // POST or DELETE
	Path    string // may hold ${…}
	// Params is a POST's JSON body in the -d syntax of `rental post` (cli/internal/body):
	// key=value for a string, key:=json for a typed value. Values may hold ${…}.
	Params []string
	// Upload, when set, makes the body a multipart/form-data upload instead of JSON.
	Upload *Upload
}

// Upload is a multipart/form-data body: one file and text fields.
type Upload struct {
	Field    string   // the file part's name
	Filename string   // the file's name
	Content  string   // the file's bytes
	Fields   []string // key=value text fields
}

// Input is a value a recipe needs that the API cannot give: the caller passes it in Vars.
type Input struct {
	Var  string // the name used as ${var} in the steps
	Flag string // the command line flag that sets it
	// Why says why the API alone cannot provide it: the error when it is missing.
	Why string
}

// Recipe is how to cause one event type: API calls, in order, in test mode.
type Recipe struct {
	Type   string
	About  string // one line: what the calls do
	Inputs []Input
	Steps  []Step
}

// The fixtures' shared values. The endpoints the webhook_endpoint recipes create subscribe
// only to a type nothing emits (the catalogue reserves it), so they never get a delivery and
// the URL is never called.
const (
	fixtureURL     = "https://example.com/rental-trigger"
	quietType      = "balance.available"
	fixtureTenant  = "Jane Doe"
	fixtureEmail   = "jane.doe@example.com"
	fixtureNote    = "created by rental trigger"
	sessionsPath   = "/v1/verification_sessions"
	casesPath      = "/v1/collection_cases"
	agreementsPath = "/v1/payment_agreements"
	requestsPath   = "/v1/payment_requests"
	endpointsPath  = "/v1/webhook_endpoints"
)

// The simulated processor's test tokens (docs/api.md, "Payment agreements").
const (
	tokSuccess      = "tok_test_success"
	tokInsufficient = "tok_test_insufficient_funds"
	tokDeclined     = "tok_test_declined"
)

func post(fixture, path string, params ...string) Step {
	return Step{Fixture: fixture, Method: "POST", Path: path, Params: params}
}

// Webhook endpoints.
var (
	createEndpoint = post("endpoint", endpointsPath, "url="+fixtureURL, "enabled_events[]="+quietType, "description="+fixtureNote)
	updateEndpoint = post("", endpointsPath+"/${endpoint.id}", "status=disabled")
	deleteEndpoint = Step{Method: "DELETE", Path: endpointsPath + "/${endpoint.id}"}
	goneInput      = Input{
		Var:  "gone_url",
		Flag: "--gone-url",
		Why: "webhook_endpoint.disabled cannot be caused through the API alone: the platform disables an endpoint itself, " +
			"when its receiver answers 410 Gone or its deliveries have kept failing for WEBHOOKS_AUTO_DISABLE_AFTER (5 days). " +
			"Give --gone-url https://…, the URL of a receiver of yours that answers 410 to every request (and that the platform can reach), " +
			"and rental trigger creates an endpoint there and sends it an event",
	}
	// The endpoint at the gone URL is subscribed to its own updates: the update sends it one
	// delivery, answered 410, and the platform disables it.
	createGoneEndpoint = post("endpoint", endpointsPath, "url=${gone_url}", "enabled_events[]=webhook_endpoint.updated", "description="+fixtureNote)
	touchGoneEndpoint  = post("", endpointsPath+"/${endpoint.id}", "metadata[rental_trigger]=webhook_endpoint.disabled")
)

// Verification sessions: created, then moved by the test helper.
var createSession = post("session", sessionsPath, "applicant[first_name]=Jane", "applicant[last_name]=Doe",
	"applicant[email]="+fixtureEmail, "products[]=identity", "products[]=credit")

func advanceSession(status string) Step {
	return post("", "/v1/test_helpers/verification_sessions/${session.id}/advance", "status="+status)
}

var completeSession = []Step{createSession, advanceSession("pending"), advanceSession("processing"), advanceSession("completed")}

// Collection cases.
var createCase = post("case", casesPath, "amount_to_recover:=120000", "currency=eur", "due_date=${today}",
	"creditor_reference=RENTAL-TRIGGER", "debtor[type]=private", "debtor[name]="+fixtureTenant, "debtor[email]="+fixtureEmail,
	"debtor[country]=DE", "debtor[address][line1]=Hauptstr. 1", "debtor[address][city]=Berlin",
	"debtor[address][postal_code]=10115", "debtor[address][country]=DE")

// Payments: an agreement whose one method pays with token, and a request against it. The
// request's first attempt runs at once, in the background.
func createAgreement(token string) Step {
	return post("agreement", agreementsPath, "tenant[name]="+fixtureTenant, "tenant[email]="+fixtureEmail,
		"payment_methods[0][type]=card", "payment_methods[0][token]="+token, "payment_methods[0][preferred]:=true")
}

var createRequest = post("request", requestsPath, "payment_agreement=${agreement.id}", "amount:=125000", "currency=eur",
	"description="+fixtureNote)

// recipes is every recipe, in the catalogue's order (libs/eventtype).
var recipes = []Recipe{
	{Type: "webhook_endpoint.created", About: "creates a webhook endpoint (subscribed only to " + quietType + ", which nothing emits)",
		Steps: []Step{createEndpoint}},
	{Type: "webhook_endpoint.updated", About: "creates a webhook endpoint and disables it",
		Steps: []Step{createEndpoint, updateEndpoint}},
	{Type: "webhook_endpoint.deleted", About: "creates a webhook endpoint and deletes it",
		Steps: []Step{createEndpoint, deleteEndpoint}},
	{Type: "webhook_endpoint.disabled", About: "creates a webhook endpoint at --gone-url and updates it: the delivery answered 410 disables it",
		Inputs: []Input{goneInput}, Steps: []Step{createGoneEndpoint, touchGoneEndpoint}},

	{Type: "verification_session.created", About: "creates a verification session",
		Steps: []Step{createSession}},
	{Type: "verification_session.pending", About: "creates a verification session and advances it to pending (test helper)",
		Steps: []Step{createSession, advanceSession("pending")}},
	{Type: "verification_session.processing", About: "creates a verification session and advances it to pending, then processing",
		Steps: []Step{createSession, advanceSession("pending"), advanceSession("processing")}},
	{Type: "verification_session.completed", About: "creates a verification session and advances it to completed (its report is created)",
		Steps: completeSession},
	{Type: "verification_session.failed", About: "creates a verification session and advances it to processing, then failed",
		Steps: []Step{createSession, advanceSession("pending"), advanceSession("processing"), advanceSession("failed")}},
	{Type: "verification_session.expired", About: "creates a verification session and advances it to expired (as when expires_at passes)",
		Steps: []Step{createSession, advanceSession("expired")}},
	{Type: "verification_session.canceled", About: "creates a verification session and cancels it",
		Steps: []Step{createSession, post("", sessionsPath+"/${session.id}/cancel", "cancellation_reason=duplicate")}},
	{Type: "verification_session.redacted", About: "creates a verification session, cancels it and redacts it",
		Steps: []Step{createSession, post("", sessionsPath+"/${session.id}/cancel"), post("", sessionsPath+"/${session.id}/redact")}},
	{Type: "verification_report.created", About: "creates a verification session and advances it to completed, which creates its report",
		Steps: completeSession},

	{Type: "collection_case.created", About: "creates a collection case",
		Steps: []Step{createCase}},
	{Type: "collection_case.updated", About: "creates a collection case and pauses it",
		Steps: []Step{createCase, post("", casesPath+"/${case.id}/pause")}},
	{Type: "collection_case.closed", About: "creates a collection case and closes it (withdrawn)",
		Steps: []Step{createCase, post("", casesPath+"/${case.id}/close", "close_code=withdrawn")}},
	{Type: "case_file.created", About: "creates a collection case and uploads a CSV file to it",
		Steps: []Step{createCase, {Fixture: "file", Method: "POST", Path: casesPath + "/${case.id}/files", Upload: &Upload{
			Field: "file", Filename: "invoice.csv", Content: "invoice,amount\nRENTAL-TRIGGER,1200.00\n",
			Fields: []string{"document_type=original_invoice", "description=" + fixtureNote},
		}}}},
	{Type: "debt_payment.created", About: "creates a collection case and records a part payment on it",
		Steps: []Step{createCase, post("payment", casesPath+"/${case.id}/payments", "amount:=40000", "paid_at=${today}")}},

	{Type: "payment_request.created", About: "creates a payment agreement and a payment request against it",
		Steps: []Step{createAgreement(tokSuccess), createRequest}},
	{Type: "payment_request.processing", About: "creates a payment agreement and a payment request; its first attempt starts at once",
		Steps: []Step{createAgreement(tokSuccess), createRequest}},
	{Type: "payment_request.retrying", About: "creates a payment agreement whose card lacks funds and a payment request: attempt 1 fails, attempt 2 is scheduled",
		Steps: []Step{createAgreement(tokInsufficient), createRequest}},
	{Type: "payment_request.succeeded", About: "creates a payment agreement whose card pays and a payment request: attempt 1 collects it",
		Steps: []Step{createAgreement(tokSuccess), createRequest}},
	{Type: "payment_request.failed", About: "creates a payment agreement whose only card is declined and a payment request: it fails with no usable method",
		Steps: []Step{createAgreement(tokDeclined), createRequest}},
	{Type: "payment_request.cancelled", About: "creates a payment agreement whose card lacks funds and a payment request, and cancels the request",
		Steps: []Step{createAgreement(tokInsufficient), createRequest, post("", requestsPath+"/${request.id}/cancel")}},
	{Type: "payment_agreement.created", About: "creates a payment agreement",
		Steps: []Step{createAgreement(tokSuccess)}},
	{Type: "payment_agreement.updated", About: "creates a payment agreement whose only card is declined and a payment request: the card is marked failed",
		Steps: []Step{createAgreement(tokDeclined), createRequest}},
	{Type: "payment_agreement.cancelled", About: "creates a payment agreement and cancels it",
		Steps: []Step{createAgreement(tokSuccess), post("", agreementsPath+"/${agreement.id}/cancel")}},
	{Type: "charge.succeeded", About: "creates a payment agreement whose card pays and a payment request: its charge succeeds",
		Steps: []Step{createAgreement(tokSuccess), createRequest}},
	{Type: "charge.failed", About: "creates a payment agreement whose only card is declined and a payment request: its charge fails",
		Steps: []Step{createAgreement(tokDeclined), createRequest}},
}

// Recipes returns every recipe, sorted by type.
func Recipes() []Recipe {
	out := slices.Clone(recipes)
	slices.SortFunc(out, func(a, b Recipe) int { return strings.Compare(a.Type, b.Type) })
	return out
}

// Lookup returns the recipe for an event type.
func Lookup(eventType string) (Recipe, bool) {
	i := slices.IndexFunc(recipes, func(r Recipe) bool { return r.Type == eventType })
	if i < 0 {
		return Recipe{}, false
	}
	return recipes[i], true
}
