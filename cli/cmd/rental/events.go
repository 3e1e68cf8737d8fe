package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"rentalplatform/cli/internal/api"
	"rentalplatform/cli/internal/style"
)

// The id prefixes of the objects these commands name (libs/ids; webhooks-svc's deliveries).
const (
	eventPrefix    = "evt_"
	endpointPrefix = "we_"
	deliveryPrefix = "wd_"
)

// checkID refuses an argument that is not an id with prefix, before anything is sent: it goes
// into a path.
func checkID(id, prefix, what string) error {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || rest == "" || strings.IndexFunc(rest, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}) >= 0 {
		return usageError{fmt.Errorf("%q is not %s id (%s…)", id, what, prefix)}
	}
	return nil
}

// listFlags are the list parameters a list command takes as flags: limit and starting_after.
type listFlags struct {
	limit         int
	startingAfter string
}

func (l *listFlags) add(cmd *cobra.Command, prefix string) {
	cmd.Flags().IntVar(&l.limit, "limit", 10, "how many to list, 1 to 100 (newest first)")
	cmd.Flags().StringVar(&l.startingAfter, "starting-after", "", "list those after this one ("+prefix+"…, the last of the previous page)")
}

// query is the list's query: the flags set and the filters given (empty ones left out).
func (l *listFlags) query(cmd *cobra.Command, filters ...[2]string) string {
	q := url.Values{}
	for _, f := range filters {
		if f[1] != "" {
			q.Set(f[0], f[1])
		}
	}
	if cmd.Flags().Changed("limit") {
		q.Set("limit", strconv.Itoa(l.limit))
	}
	if l.startingAfter != "" {
		q.Set("starting_after", l.startingAfter)
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// call sends one request with the profile's key and prints the answer as `rental get` does
// (an error's envelope included); every POST carries a new Idempotency-Key.
func (a *app) call(ctx context.Context, method, path string) error {
	key, err := a.key()
	if err != nil {
		return err
	}
	var payload []byte
	var idem string
	if method == "POST" {
		payload, idem = []byte("{}"), api.NewIdempotencyKey()
	}
	res, err := a.client(key).Do(ctx, method, path, payload, idem)
	if res != nil {
		a.print(res.Body)
	}
	return err
}

func (a *app) eventsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "events",
		Short: "List, read and resend events",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError{errors.New("name a subcommand: list, get or resend")}
		},
	}
	var lf listFlags
	var typ string
	list := &cobra.Command{
		Use:   "list",
		Short: "List events, newest first (GET /v1/events)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.call(cmd.Context(), "GET", "/v1/events"+lf.query(cmd, [2]string{"type", typ}))
		},
	}
	lf.add(list, eventPrefix)
	list.Flags().StringVar(&typ, "type", "", "only events of this type, or of a family: payment_request.*")

	get := &cobra.Command{
		Use:   "get EVENT_ID",
		Short: "Read one event (GET /v1/events/{id})",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := checkID(argv[0], eventPrefix, "an event"); err != nil {
				return err
			}
			return a.call(cmd.Context(), "GET", "/v1/events/"+argv[0])
		},
	}

	var endpoint string
	resend := &cobra.Command{
		Use:   "resend EVENT_ID",
		Short: "Send an event again: retry its deliveries now (to every endpoint it went to, or one)",
		Long: `Retries the event's deliveries (GET /v1/events/{id}/deliveries, then
POST /v1/webhook_deliveries/{id}/retry for each): one more attempt each, now, with the same
webhook-id, so receivers that dedupe see the same event. --webhook-endpoint retries only the
delivery to that endpoint. Without it, a delivery whose endpoint is disabled or deleted is
skipped (and said so); the command fails only when none could be retried.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := checkID(argv[0], eventPrefix, "an event"); err != nil {
				return err
			}
			if endpoint != "" {
				if err := checkID(endpoint, endpointPrefix, "a webhook endpoint"); err != nil {
					return err
				}
			}
			return a.resend(cmd.Context(), argv[0], endpoint)
		},
	}
	resend.Flags().StringVar(&endpoint, "webhook-endpoint", "", "retry only the delivery to this endpoint (we_…)")
	cmd.AddCommand(list, get, resend)
	return cmd
}

// delivery is the part of a webhook_delivery that resend reads.
type delivery struct {
	ID              string  `json:"id"`
	WebhookEndpoint *string `json:"webhook_endpoint"`
}

func (d delivery) to() string {
	if d.WebhookEndpoint == nil {
		return "the event's own webhook_url"
	}
	return *d.WebhookEndpoint
}

// resend retries the deliveries of event (only the one to endpoint when it is not "") and
// prints them as they are after the retry, as a list.
func (a *app) resend(ctx context.Context, event, endpoint string) error {
	key, err := a.key()
	if err != nil {
		return err
	}
	c := a.client(key)
	var all []delivery
	for after := ""; ; {
		path := "/v1/events/" + event + "/deliveries?limit=100"
		if after != "" {
			path += "&starting_after=" + url.QueryEscape(after)
		}
		res, err := c.Do(ctx, "GET", path, nil, "")
		if err != nil {
			if res != nil {
				a.print(res.Body)
			}
			return err
		}
		var page struct {
			Data    []delivery `json:"data"`
			HasMore bool       `json:"has_more"`
		}
		if err := json.Unmarshal(res.Body, &page); err != nil {
			return fmt.Errorf("reading the deliveries of %s: %w", event, err)
		}
		for _, d := range page.Data {
			if endpoint == "" || d.WebhookEndpoint != nil && *d.WebhookEndpoint == endpoint {
				all = append(all, d)
			}
		}
		if !page.HasMore || len(page.Data) == 0 {
			break
		}
		after = page.Data[len(page.Data)-1].ID
	}
	switch {
	case len(all) == 0 && endpoint != "":
		return fmt.Errorf("event %s has no delivery to %s (it was not subscribed to the event's type, or not enabled, when the event was stored)", event, endpoint)
	case len(all) == 0:
		return fmt.Errorf("event %s has no deliveries: no endpoint was enabled and subscribed to its type when it was stored", event)
	}
	progress := a.progressWriter()
	st := style.For(progress, a.getenv)
	retried := []json.RawMessage{}
	var failed []error
	for _, d := range all {
		res, err := c.Do(ctx, "POST", "/v1/webhook_deliveries/"+url.PathEscape(d.ID)+"/retry", []byte("{}"), api.NewIdempotencyKey())
		var ae *api.APIError
		switch {
		case err == nil:
			retried = append(retried, json.RawMessage(res.Body))
			fmt.Fprintf(progress, "%s %s to %s\n", st.Green("Retried"), d.ID, d.to())
		case endpoint == "" && errors.As(err, &ae) && ae.Code == "invalid_state":
			fmt.Fprintf(progress, "%s %s to %s: %s\n", st.Yellow("Skipped"), d.ID, d.to(), ae.Message)
		default:
			fmt.Fprintf(progress, "%s %s to %s: %v\n", st.Red("Failed"), d.ID, d.to(), err)
			failed = append(failed, fmt.Errorf("retrying %s: %w", d.ID, err))
		}
	}
	b, err := json.Marshal(struct {
		Object string            `json:"object"`
		Data   []json.RawMessage `json:"data"`
	}{"list", retried})
	if err != nil {
		return err
	}
	a.print(b)
	if len(failed) > 0 {
		return errors.Join(failed...)
	}
	if len(retried) == 0 {
		return fmt.Errorf("no delivery of %s could be retried: their endpoints are disabled or deleted", event)
	}
	return nil
}

func (a *app) deliveriesCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "deliveries",
		Short: "List webhook deliveries and retry one",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError{errors.New("name a subcommand: list or retry")}
		},
	}
	var lf listFlags
	var event, endpoint, status string
	list := &cobra.Command{
		Use:   "list",
		Short: "List the account's webhook deliveries, newest first (GET /v1/webhook_deliveries)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.call(cmd.Context(), "GET", "/v1/webhook_deliveries"+lf.query(cmd,
				[2]string{"event", event}, [2]string{"endpoint", endpoint}, [2]string{"status", status}))
		},
	}
	lf.add(list, deliveryPrefix)
	list.Flags().StringVar(&event, "event", "", "only the deliveries of this event (evt_…)")
	list.Flags().StringVar(&endpoint, "endpoint", "", "only the deliveries to this webhook endpoint (we_…)")
	list.Flags().StringVar(&status, "status", "", "only deliveries with this status: pending, succeeded or failed")

	retry := &cobra.Command{
		Use:   "retry DELIVERY_ID",
		Short: "Make one more attempt of a delivery now (POST /v1/webhook_deliveries/{id}/retry)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := checkID(argv[0], deliveryPrefix, "a webhook delivery"); err != nil {
				return err
			}
			return a.call(cmd.Context(), "POST", "/v1/webhook_deliveries/"+argv[0]+"/retry")
		},
	}
	cmd.AddCommand(list, retry)
	return cmd
}
