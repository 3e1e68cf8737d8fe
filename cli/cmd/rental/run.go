package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"rentalplatform/cli/internal/api"
	"rentalplatform/cli/internal/body"
	"rentalplatform/cli/internal/profile"
)

// defaultAPIBase is the local platform's gateway (make run, GATEWAY_ADDR's default).
const defaultAPIBase = "http://127.0.0.1:8080"

// Exit statuses: 1 for a failed call (an API error, an unreachable gateway), 2 for a command
// line that cannot be run.
const (
	exitFailed = 1
	exitUsage  = 2
)

// usageError is a problem with the command line.
type usageError struct{ error }

// settings are the global flags, after the environment's defaults.
type settings struct {
	apiBase string
	profile string
	json    bool
}

// app is one run of the command: its surroundings and settings.
type app struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	s      settings
}

// run executes the command line args and returns the exit status.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.commands()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "error:", err)
	var ue usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") {
		return exitUsage
	}
	return exitFailed
}

// version is the module's version when installed with go install, else "(devel)".
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// args wraps a cobra argument check so that its error is a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usageError{err}
		}
		return nil
	}
}

func (a *app) commands() *cobra.Command {
	root := &cobra.Command{
		Use:           "rental",
		Short:         "The Rental Platform API from the command line",
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true, // run prints the error once
	}
	apiBase := a.getenv("RENTAL_API_BASE")
	if apiBase == "" {
		apiBase = defaultAPIBase
	}
	prof := a.getenv("RENTAL_PROFILE")
	if prof == "" {
		prof = "default"
	}
	root.PersistentFlags().StringVar(&a.s.apiBase, "api-base", apiBase, "the gateway's URL (RENTAL_API_BASE)")
	root.PersistentFlags().StringVar(&a.s.profile, "profile", prof, "the profile whose API key is used (RENTAL_PROFILE)")
	root.PersistentFlags().BoolVar(&a.s.json, "json", false, "print answers as compact JSON, one line each (for scripts)")

	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(a.loginCommand(), a.requestCommand("get"), a.requestCommand("post"), a.requestCommand("delete"), a.listenCommand(), a.triggerCommand(), a.eventsCommand(), a.deliveriesCommand())
	return root
}

func (a *app) store() (profile.Store, error) {
	p, err := profile.DefaultPath(a.getenv)
	return profile.Store{Path: p}, err
}

func (a *app) loginCommand() *cobra.Command {
	var noVerify bool
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Store an API key for the profile (read from standard input, never from the command line)",
		Long: `Reads an API key (sk_test_…, sk_live_…, rk_test_… or rk_live_…) from standard input: typed
without echo at a terminal, or piped (rental login < key-file). It is checked with one call to
the API, then stored for the profile (--profile, default "default") in a file only you can read:
$RENTAL_CONFIG_FILE, else $XDG_CONFIG_HOME/rental/config.json or ~/.config/rental/config.json.
RENTAL_API_KEY, when set, is used instead of any stored key.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			key, err := a.readKey()
			if err != nil {
				return err
			}
			if !noVerify {
				c := a.client(key)
				if _, err := c.Do(cmd.Context(), "GET", "/v1/webhook_endpoints?limit=1", nil, ""); err != nil {
					var ae *api.APIError
					if errors.As(err, &ae) && (ae.Status == 401 || ae.Status == 403) {
						return fmt.Errorf("the API refused the key %s: %w", profile.Mask(key), err)
					}
					if !errors.As(err, &ae) {
						return fmt.Errorf("checking the key at %s: %w (start the platform, or --no-verify)", a.s.apiBase, err)
					}
				}
			}
			st, err := a.store()
			if err != nil {
				return err
			}
			if err := st.Put(a.s.profile, profile.Profile{APIKey: key}); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "Stored %s for profile %q in %s\n", profile.Mask(key), a.s.profile, st.Path)
			return nil
		},
	}
	cmd.Flags().BoolVar(&noVerify, "no-verify", false, "store the key without calling the API")
	return cmd
}

// readKey reads the key: without echo from a terminal, else the first line of stdin.
func (a *app) readKey() (string, error) {
	var key string
	if f, ok := a.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(a.stderr, "API key: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(a.stderr)
		if err != nil {
			return "", err
		}
		key = string(b)
	} else {
		line, err := bufio.NewReader(a.stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		key = line
	}
	key = strings.TrimSpace(key)
	if p := profile.Prefix(key); p != "" && len(key) > len(p) {
		return key, nil
	}
	return "", usageError{errors.New("standard input holds no API key (want sk_test_…, sk_live_…, rk_test_… or rk_live_…)")}
}

// key is RENTAL_API_KEY, else the profile's stored key.
func (a *app) key() (string, error) {
	if k := a.getenv("RENTAL_API_KEY"); k != "" {
		return k, nil
	}
	st, err := a.store()
	if err != nil {
		return "", err
	}
	p, found, err := st.Get(a.s.profile)
	if err != nil {
		return "", err
	}
	if !found || p.APIKey == "" {
		return "", usageError{fmt.Errorf("no API key for profile %q: run `rental login`, or set RENTAL_API_KEY", a.s.profile)}
	}
	return p.APIKey, nil
}

func (a *app) client(key string) *api.Client {
	return &api.Client{Base: a.s.apiBase, Key: key, Agent: "rental-cli/" + version()}
}

func (a *app) requestCommand(verb string) *cobra.Command {
	var params []string
	var idemKey string
	method := strings.ToUpper(verb)
	cmd := &cobra.Command{
		Use:   verb + " PATH",
		Short: method + " an API path, such as /v1/webhook_endpoints",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			path := argv[0]
			var payload []byte
			switch method {
			case "POST":
				v, err := body.Parse(params)
				if err != nil {
					return usageError{err}
				}
				if v == nil {
					v = map[string]any{}
				}
				if payload, err = body.Encode(v); err != nil {
					return err
				}
				if idemKey == "" {
					idemKey = api.NewIdempotencyKey()
				}
			default:
				q, err := withQuery(path, params)
				if err != nil {
					return usageError{err}
				}
				path = q
			}
			key, err := a.key()
			if err != nil {
				return err
			}
			res, err := a.client(key).Do(cmd.Context(), method, path, payload, idemKey)
			if res != nil {
				a.print(res.Body)
			}
			return err
		},
	}
	switch method {
	case "POST":
		cmd.Flags().StringArrayVarP(&params, "data", "d", nil, "a body parameter: key=string, key:=json, nested with [name], [0] and [] (repeat it)")
		cmd.Flags().StringVar(&idemKey, "idempotency-key", "", "the Idempotency-Key to send (default: a new random one, cli_…); give the same to retry safely")
	default:
		cmd.Flags().StringArrayVarP(&params, "data", "d", nil, "a query parameter: key=value, such as -d limit=3 or -d 'created[gte]=1700000000' (repeat it)")
	}
	return cmd
}

// withQuery adds key=value parameters to path's query.
func withQuery(path string, params []string) (string, error) {
	if len(params) == 0 {
		return path, nil
	}
	q := url.Values{}
	for _, p := range params {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return "", fmt.Errorf("-d %q: want key=value", p)
		}
		q.Add(k, v)
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return path + sep + q.Encode(), nil
}

// print writes an answer's JSON: indented, or compact on one line with --json.
func (a *app) print(b []byte) {
	if len(bytes.TrimSpace(b)) == 0 {
		return
	}
	var out bytes.Buffer
	var err error
	if a.s.json {
		err = json.Compact(&out, b)
	} else {
		err = json.Indent(&out, b, "", "  ")
	}
	if err != nil {
		a.stdout.Write(b) // not JSON: as it came
		fmt.Fprintln(a.stdout)
		return
	}
	out.WriteByte('\n')
	a.stdout.Write(out.Bytes())
}
