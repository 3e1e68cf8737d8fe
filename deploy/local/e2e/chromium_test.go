package e2e

// Headless Chromium for the tests that drive a page (the hosted verification page, the webhook
// portal, the reference page): one start-up, with a console log of its own.

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browser starts headless Chromium 1024×900 (skipped without it, outside CI); see
// browserSized.
func browser(t *testing.T) (context.Context, func() []chromedp.ConsoleMessage) {
	t.Helper()
	return browserSized(t, 1024, 900)
}

// browserSized starts headless Chromium (skipped without it, outside CI) with a window of
// width×height and a console log of its own, and returns its context (3 minutes at most) and
// the console's messages so far. It trusts self-signed certificates (a return site, a
// receiver). Everything stops when the test ends.
func browserSized(t *testing.T, width, height int) (context.Context, func() []chromedp.ConsoleMessage) {
	t.Helper()
	path := needTool(t, "chromium", "install Debian's chromium (apt-get install chromium) to run the tests that drive a page in a browser")
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // root in CI
		chromedp.DisableGPU,
		chromedp.IgnoreCertErrors,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	var mu sync.Mutex
	var messages []chromedp.ConsoleMessage
	consoleCtx, stopConsole := context.WithCancel(ctx)
	console := chromedp.Console(consoleCtx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range console {
			if err != nil {
				return
			}
			mu.Lock()
			messages = append(messages, m)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		stopConsole()
		<-done
		cancelTimeout()
		cancel()
		cancelAlloc()
	})
	return ctx, func() []chromedp.ConsoleMessage {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(messages)
	}
}

// consoleErrors fails the test for every error or exception on the console (a CSP violation,
// "Refused to apply …", is one). With statusesChecked, the errors Chromium logs for answers'
// statuses ("Failed to load resource: the server responded with a status of …") are left to
// the test, which checks those itself.
func consoleErrors(t *testing.T, messages []chromedp.ConsoleMessage, statusesChecked bool) {
	t.Helper()
	for _, m := range messages {
		if m.Type != chromedp.ConsoleError && !m.IsException() {
			continue
		}
		if statusesChecked && strings.HasPrefix(m.Text, "Failed to load resource: the server responded with a status of ") {
			continue
		}
		t.Errorf("console %s (%s:%d)", m, m.URL, m.Line)
	}
}

// tab drives a browser's page for a test: a step that fails fails the test, saying what it was
// doing.
type tab struct {
	t   *testing.T
	ctx context.Context // browser's
}

// run takes the steps of what.
func (b tab) run(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// eval returns what the script js evaluates to, as a string.
func (b tab) eval(js string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js))
	if err != nil {
		b.t.Fatalf("%s: %v", js, err)
	}
	return v
}
