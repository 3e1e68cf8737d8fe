package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"rentalplatform/cli/internal/listen"
	"rentalplatform/cli/internal/profile"
	"rentalplatform/cli/internal/style"
)

func (a *app) listenCommand() *cobra.Command {
	var forwardTo, events string
	var printSecret bool
	var forwardTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "listen",
		Short: "Receive the account's events as they happen, and forward them to a local server",
		Long: `Reads the account's events as they happen (GET /v1/events/stream) and, with --forward-to,
POSTs each to that URL signed as a webhook endpoint's deliveries are (Standard Webhooks:
webhook-id, webhook-timestamp, webhook-signature), with a signing secret derived from the API
key: the same on every run (--print-secret prints it). Prints "--> type [evt_…]" per event and
"<-- [status] POST url (ms)" per forward.

A cut connection, a restarted gateway or a stream gone silent (no event and no heartbeat for
three heartbeat intervals) is reconnected, resuming after the last event seen: none is missed
or forwarded twice. Only events from the moment listen starts are sent; use "rental events
list" for older ones.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			key, err := a.key()
			if err != nil {
				return err
			}
			if printSecret {
				fmt.Fprintln(a.stdout, listen.Secret(key))
				return nil
			}
			if forwardTo != "" {
				u, err := url.Parse(forwardTo)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return usageError{fmt.Errorf("--forward-to %q: want an http or https URL, such as http://localhost:4242/webhooks", forwardTo)}
				}
			}
			var types []string
			for t := range strings.SplitSeq(events, ",") {
				if t = strings.TrimSpace(t); t != "" {
					types = append(types, t)
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			l := listen.New(listen.Config{
				Base: a.s.apiBase, Key: key, Agent: "rental-cli/" + version(),
				ForwardTo: forwardTo, Types: types,
				Out: a.stdout, Log: a.stderr, Style: style.For(a.stdout, a.getenv),
				Stream:  &http.Client{},
				Forward: &http.Client{Timeout: forwardTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
			})
			fmt.Fprintf(a.stderr, "Connecting to %s with %s\n", a.s.apiBase, profile.Mask(key))
			err = l.Run(ctx)
			s := l.Stats()
			fmt.Fprintf(a.stderr, "Stopped: %d events, %d forwarded, %d connections.\n", s.Events, s.Forwarded, s.Connections)
			if err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&forwardTo, "forward-to", "", "the URL each event is POSTed to, such as http://localhost:4242/webhooks")
	cmd.Flags().StringVar(&events, "events", "", "only these event types, comma-separated (payment_request.succeeded,collection_case.*); default all")
	cmd.Flags().BoolVar(&printSecret, "print-secret", false, "print the signing secret of the forwarded events and exit")
	cmd.Flags().DurationVar(&forwardTimeout, "forward-timeout", 30*time.Second, "how long a forward may take")
	return cmd
}
