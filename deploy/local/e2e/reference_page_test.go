package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"rentalplatform/api"
)

// The reference page (/docs: Redocly's build-docs rendering of the contract, one file with no
// external assets) is loaded from a started platform in headless Chromium: every operation of
// the document is on it, by its summary, and the console shows no errors (an asset the page
// tried to fetch from the network would be one: the machine has none). A screenshot of the
// page's first screen is kept, with the page's text (the paths are printed in the report of
// the run).
func TestReferencePage(t *testing.T) {
	ctx, console := browserSized(t, 1280, 900)
	p := start(t)
	page := contractProxy(t, p.GatewayURL) + "/docs"

	if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
		t.Fatalf("loading %s: %v", page, err)
	}
	summaries := operationSummaries(t)
	// Redoc renders the page from the document after the load: wait until every operation is
	// there (or the time is up, then say which are not).
	var text string
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		var err error
		if text, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`)); err != nil {
			t.Fatal(err)
		}
		if len(missing(summaries, text)) == 0 || time.Now().After(deadline) {
			break
		}
	}
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "rental-e2e-reference-page-")
	if err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(dir, "reference-page.png")
	if err := os.WriteFile(png, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	artifact(t, "the reference page in Chromium (a screenshot of its first screen)", png)
	if err := os.WriteFile(filepath.Join(dir, "reference-page.txt"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if m := missing(summaries, text); len(m) > 0 {
		t.Errorf("%d of %d operations are not on the page (screenshot %s): %s", len(m), len(summaries), png, strings.Join(m, "; "))
	}

	consoleErrors(t, console(), false)
}

// operationSummaries returns "METHOD path: summary" of every operation of the public document,
// keyed by the summary the page shows.
func operationSummaries(t *testing.T) map[string]string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage
	}
	if err := json.Unmarshal(api.PublicJSON(), &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for path, item := range doc.Paths {
		for method, raw := range item {
			var op struct{ Summary string }
			if json.Unmarshal(raw, &op) != nil || op.Summary == "" {
				continue
			}
			out[op.Summary] = fmt.Sprintf("%s %s", strings.ToUpper(method), path)
		}
	}
	if len(out) < 40 {
		t.Fatalf("only %d operations with a summary in the document", len(out))
	}
	return out
}

func missing(summaries map[string]string, text string) []string {
	var out []string
	for s, op := range summaries {
		if !strings.Contains(text, s) {
			out = append(out, op+" ("+s+")")
		}
	}
	slices.Sort(out)
	return out
}
