package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"rentalplatform/deploy/local/e2e/receiver"
	"rentalplatform/deploy/local/internal/load"
	"rentalplatform/deploy/local/stack"
)

// sessionBody is a verification session as a typical client creates one, for an applicant with
// this email.
func sessionBody(email string) string {
	return `{"applicant":{"first_name":"Jane","last_name":"Doe","email":"` + email + `","date_of_birth":"1990-02-28",` +
		`"phone":"+4915112345678","address":{"line1":"1 Main St","city":"Berlin","postal_code":"10115","country":"DE"}},` +
		`"products":["identity","income","credit"],"metadata":{"bench":"verification"}}`
}

// The applicants' emails of the bench's sessions: session i's is applicantEmail(i % 10), one in
// ten with each, but for one session in the middle, whose email is soleEmail: the lists by
// email then have one in ten of the sessions to page through, or one to find among them all.
const soleEmail = "sole.applicant@example.com"

func applicantEmail(n int) string { return fmt.Sprintf("applicant-%d@example.com", n) }

// benchVerification measures verification sessions (issue 12) on the stack's store: the
// latency of POST /v1/verification_sessions through the gateway at a fixed rate (measured
// from each request's scheduled time, so a stall counts), then how long after its expires_at
// every session created expires. The sessions live VERIFICATION_SESSION_TTL (s.verifTTL, set
// when the stack starts), longer than the creates take, so the two phases do not overlap.
// Expiry is seen twice: the verification_session.expired event's created (when the session
// was expired, to the second) and its arrival at a local receiver subscribed to that type.
// Last, once they have all expired and the platform is quiet, the list by applicant email over
// them (issue 31, point 4): they are the account's only sessions.
func benchVerification(ctx context.Context, st *stack.Stack, cpu *cpuMeter, s settings, getenv func(string) string, stdout io.Writer) error {
	rcv := receiver.Start()
	defer rcv.Close()
	api := load.API{Base: st.GatewayURL, Key: st.DevAPIKey, Client: load.NewClient(64)}
	if _, err := api.CreateEndpoint(rcv.URL()+"/expired", "verification_session.expired"); err != nil {
		return err
	}
	var seq atomic.Int64
	create := target{name: "POST /v1/verification_sessions", url: st.GatewayURL + "/v1/verification_sessions",
		prepare: func(req *fasthttp.Request) {
			email := soleEmail
			if i := int(seq.Add(1)) - 1; i != s.verifSessions/2 {
				email = applicantEmail(i % 10)
			}
			req.Header.SetMethod(fasthttp.MethodPost)
			req.Header.Set("Authorization", "Bearer "+st.DevAPIKey)
			req.Header.SetContentType("application/json")
			req.SetBodyString(sessionBody(email))
		}}
	d := time.Duration(s.verifSessions) * time.Second / time.Duration(s.verifRate)
	fmt.Fprintf(stdout, "\nVerification sessions (store: %s; sessions live %s):\n", storeName(getenv), s.verifTTL)
	if d >= s.verifTTL {
		fmt.Fprintf(stdout, "  note: the creates take %s, longer than the lifetime: expiries overlap the creates\n", d)
	}
	c0 := cpu.sample()
	r := openLoop(ctx, create, s.verifRate, d)
	created := r.sent - r.failed
	fmt.Fprintf(stdout, "  create at %d/s for %s: %s  (target p99 ≤ 50ms)\n", s.verifRate, d, r)
	fmt.Fprintf(stdout, "    %s\n", cpu.per(c0, created, "request"))

	// Every created session expires once; wait for them all, up to ten minutes past the last
	// expires_at. The receiver is polled twice a second rather than woken by every arrival
	// (each wake copies every request it holds), and requests are told apart by session only
	// once enough have come, since a delivery retried after a slow answer repeats its event.
	deadline := time.Now().Add(s.verifTTL + 10*time.Minute)
	var byID map[string]receiver.Request
	for want := created; ctx.Err() == nil; {
		if n := rcv.Count("/expired"); n < want && time.Now().Before(deadline) {
			time.Sleep(500 * time.Millisecond)
			continue
		}
		reqs := rcv.Requests("/expired")
		if byID = distinct(reqs); len(byID) >= created || !time.Now().Before(deadline) {
			break
		}
		want = len(reqs) + created - len(byID)
	}
	var expiredLag, deliveredLag []time.Duration
	for _, q := range byID {
		e := q.Event()
		exp, _ := e.Data.Object["expires_at"].(float64)
		at := time.Unix(int64(exp), 0)
		expiredLag = append(expiredLag, time.Unix(e.Created, 0).Sub(at))
		deliveredLag = append(deliveredLag, q.Time.Sub(at))
	}
	slices.Sort(expiredLag)
	slices.Sort(deliveredLag)
	within := 0
	for _, l := range deliveredLag {
		if l <= time.Minute {
			within++
		}
	}
	fmt.Fprintf(stdout, "  expiry of %d sessions: %d expired (%d missing); delivered within 60 s of expires_at: %d (target all)\n",
		created, len(byID), created-len(byID), within)
	if len(byID) > 0 {
		fmt.Fprintf(stdout, "    expired − expires_at (event created, whole seconds): p50 %s  p99 %s  max %s\n",
			load.Pct(expiredLag, 50), load.Pct(expiredLag, 99), load.Pct(expiredLag, 100))
		fmt.Fprintf(stdout, "    delivered − expires_at (at the receiver):           p50 %s  p99 %s  max %s\n",
			load.Pct(deliveredLag, 50).Round(time.Millisecond), load.Pct(deliveredLag, 99).Round(time.Millisecond), load.Pct(deliveredLag, 100).Round(time.Millisecond))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return benchSessionLists(ctx, api, cpu, s.verifSessions, created, stdout)
}

// benchSessionLists reads the list by applicant email over the sessions created (the account's
// only ones): one in ten sessions match, so a page after the first 100 matches lies past some
// 1,000 sessions; and one session of them all.
func benchSessionLists(ctx context.Context, api load.API, cpu *cpuMeter, sent, created int, stdout io.Writer) error {
	const path = "/v1/verification_sessions?applicant_email="
	fmt.Fprintf(stdout, "\n  GET %s… over the %d sessions above, all of this account (expired by now, not redacted)\n", path, created)
	fmt.Fprintf(stdout, "  %s: about %d sessions match (one in ten)\n", applicantEmail(3), sent/10)
	if err := benchList(ctx, api, cpu, path+applicantEmail(3), stdout); err != nil {
		return fmt.Errorf("verification sessions by email: %w", err)
	}
	fmt.Fprintf(stdout, "  %s: one session matches\n", soleEmail)
	if err := readList(ctx, api, cpu, "its page (limit 10)", path+soleEmail, stdout); err != nil {
		return fmt.Errorf("verification sessions by email: %w", err)
	}
	return nil
}

// distinct keeps one request per session (a delivery retried after a slow answer repeats it).
func distinct(reqs []receiver.Request) map[string]receiver.Request {
	out := map[string]receiver.Request{}
	for _, q := range reqs {
		id := q.Event().ObjectID()
		if _, seen := out[id]; !seen && id != "" {
			out[id] = q
		}
	}
	return out
}

// storeName says which store the figures are about: the embedded one unless MONGODB_URI names
// a server (the bench hosts the embedded store in a process of its own, which the stack sees as
// an external server).
func storeName(getenv func(string) string) string {
	if getenv("MONGODB_URI") == "" {
		return "embedded FerretDB"
	}
	return "MONGODB_URI's server"
}
