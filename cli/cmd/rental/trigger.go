package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"rentalplatform/cli/internal/api"
	"rentalplatform/cli/internal/profile"
	"rentalplatform/cli/internal/style"
	"rentalplatform/cli/internal/trigger"
)

func (a *app) triggerCommand() *cobra.Command {
	var list bool
	var goneURL string
	cmd := &cobra.Command{
		Use:   "trigger [EVENT_TYPE]",
		Short: "Cause an event of a type: create the test-mode objects that raise it (--list: the types)",
		Long: `Creates, in test mode, the objects whose changes raise an event of EVENT_TYPE, printing each
API call it makes; every POST carries a new Idempotency-Key. The events then arrive as any
others do: at your webhook endpoints, and in rental events list. Every type the platform
emits has a recipe; rental trigger --list (or rental trigger alone) lists them. A live key
(sk_live_…, rk_live_…) is refused: nothing is created.

webhook_endpoint.disabled cannot be caused through the API alone: give --gone-url, the URL of a
receiver that answers 410 Gone.`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if list || len(argv) == 0 {
				return a.listRecipes()
			}
			if rec, ok := trigger.Lookup(argv[0]); ok && goneURL != "" && len(rec.Inputs) == 0 {
				return usageError{fmt.Errorf("--gone-url is for webhook_endpoint.disabled only; %s takes no input", argv[0])}
			}
			return a.trigger(cmd.Context(), argv[0], map[string]string{"gone_url": goneURL})
		},
	}
	cmd.Flags().BoolVar(&list, "list", false, "list the event types rental trigger can cause, with what each recipe does")
	cmd.Flags().StringVar(&goneURL, "gone-url", "", "webhook_endpoint.disabled only: the https URL of a receiver that answers 410 Gone to every request")
	return cmd
}

// recipeJSON is a recipe as --list --json shows it.
type recipeJSON struct {
	Type  string   `json:"type"`
	About string   `json:"about"`
	Needs []string `json:"needs"`
	Calls []string `json:"calls"`
}

func (a *app) listRecipes() error {
	recipes := trigger.Recipes()
	if a.s.json {
		out := make([]recipeJSON, len(recipes))
		for i, r := range recipes {
			out[i] = recipeJSON{Type: r.Type, About: r.About, Needs: []string{}, Calls: []string{}}
			for _, in := range r.Inputs {
				out[i].Needs = append(out[i].Needs, in.Flag)
			}
			for _, s := range r.Steps {
				out[i].Calls = append(out[i].Calls, s.Method+" "+s.Path)
			}
		}
		b, err := json.Marshal(struct {
			Object string       `json:"object"`
			Data   []recipeJSON `json:"data"`
		}{"list", out})
		if err != nil {
			return err
		}
		a.print(b)
		return nil
	}
	st := style.For(a.stdout, a.getenv)
	fmt.Fprintln(a.stdout, "Event types rental trigger can cause (rental trigger EVENT_TYPE):")
	// Every name gets the same colour codes, so the columns stay aligned.
	tw := tabwriter.NewWriter(a.stdout, 0, 8, 2, ' ', 0)
	for _, r := range recipes {
		about := r.About
		for _, in := range r.Inputs {
			about = "(needs " + in.Flag + ") " + about
		}
		fmt.Fprintf(tw, "  %s\t%s\n", st.Bold(r.Type), about)
	}
	return tw.Flush()
}

func (a *app) trigger(ctx context.Context, eventType string, vars map[string]string) error {
	rec, ok := trigger.Lookup(eventType)
	if !ok {
		return a.noRecipe(ctx, eventType)
	}
	key, err := a.key()
	if err != nil {
		return err
	}
	if p := profile.Prefix(key); strings.HasSuffix(p, "_live_") {
		return usageError{fmt.Errorf("rental trigger creates test-mode objects only, and %s is a live key: use a test key (sk_test_… or rk_test_…); nothing was created",
			profile.Mask(key))}
	}
	if err := rec.Missing(vars); err != nil {
		return usageError{err}
	}
	progress := a.progressWriter()
	st := style.For(progress, a.getenv)
	r := trigger.Runner{
		Client: a.client(key),
		Vars:   vars,
		Progress: func(method, path string) {
			fmt.Fprintln(progress, "Running fixture:", st.Faint(method+" "+path))
		},
	}
	fmt.Fprintln(progress, "Setting up fixture for:", st.Bold(eventType))
	fixtures, err := r.Run(ctx, rec)
	if err != nil {
		return fmt.Errorf("trigger %s: %w", eventType, err)
	}
	if a.s.json {
		ids := map[string]string{}
		for _, f := range fixtures {
			ids[f.Name] = f.ID
		}
		b, err := json.Marshal(struct {
			Type     string            `json:"type"`
			Fixtures map[string]string `json:"fixtures"`
		}{eventType, ids})
		if err != nil {
			return err
		}
		a.print(b)
	}
	fmt.Fprintln(progress, st.Green("Trigger succeeded!")+" Check the events at rental events list")
	return nil
}

// noRecipe explains why there is no recipe for t, asking the catalogue (GET /v1/event_types)
// when a key is at hand: a reserved type is refused by name, as is a type that is not one.
func (a *app) noRecipe(ctx context.Context, t string) error {
	hint := "rental trigger --list lists the types it can cause"
	family, _, _ := strings.Cut(t, ".")
	key, err := a.key()
	if err != nil || family == "" || strings.ContainsAny(family, "*/?#") {
		return usageError{fmt.Errorf("no recipe for %q: %s", t, hint)}
	}
	res, err := a.client(key).Do(ctx, "GET", "/v1/event_types?limit=100&family="+url.QueryEscape(family), nil, "")
	var ae *api.APIError
	if errors.As(err, &ae) && ae.Status == 400 {
		return usageError{fmt.Errorf("%q is not an event type: %s", t, hint)}
	}
	if err != nil {
		return usageError{fmt.Errorf("no recipe for %q (%s); and the event types could not be read: %w", t, hint, err)}
	}
	var page struct {
		Data []struct {
			ID          string `json:"id"`
			Emitted     bool   `json:"emitted"`
			Description string `json:"description"`
		} `json:"data"`
	}
	if err := json.Unmarshal(res.Body, &page); err != nil {
		return usageError{fmt.Errorf("no recipe for %q: %s", t, hint)}
	}
	for _, e := range page.Data {
		switch {
		case e.ID != t:
		case !e.Emitted:
			return usageError{fmt.Errorf("%s is reserved, never emitted by the platform, so nothing can trigger it (%s)", t, e.Description)}
		default:
			return usageError{fmt.Errorf("%s is emitted by the platform, but this rental has no recipe for it: update rental (%s)", t, hint)}
		}
	}
	return usageError{fmt.Errorf("%q is not an event type: %s", t, hint)}
}

// progressWriter is where a command tells what it does: standard output for people, standard
// error with --json, so that standard output holds the JSON alone.
func (a *app) progressWriter() io.Writer {
	if a.s.json {
		return a.stderr
	}
	return a.stdout
}
