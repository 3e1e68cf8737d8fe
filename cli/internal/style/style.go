// Package style colours the CLI's human output, only when it goes to a terminal: never into a
// pipe, a file or a test's buffer, and never when NO_COLOR is set (https://no-color.org) or
// TERM is dumb.
package style

import (
	"io"
	"os"

	"golang.org/x/term"
)

// Styler wraps text in ANSI colours when enabled.
type Styler struct{ enabled bool }

// For returns the Styler for output written to w.
func For(w io.Writer, getenv func(string) string) Styler {
	f, ok := w.(*os.File)
	if !ok || getenv("NO_COLOR") != "" || getenv("TERM") == "dumb" {
		return Styler{}
	}
	return Styler{enabled: term.IsTerminal(int(f.Fd()))}
}

// Enabled reports whether the Styler colours.
func (s Styler) Enabled() bool { return s.enabled }

func (s Styler) wrap(code, text string) string {
	if !s.enabled {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

// Bold is for names the reader looks for (an event type).
func (s Styler) Bold(text string) string { return s.wrap("1", text) }

// Faint is for detail (the calls a trigger makes).
func (s Styler) Faint(text string) string { return s.wrap("2", text) }

// Green is for success.
func (s Styler) Green(text string) string { return s.wrap("32", text) }

// Red is for failure.
func (s Styler) Red(text string) string { return s.wrap("31", text) }

// Yellow is for what is still pending.
func (s Styler) Yellow(text string) string { return s.wrap("33", text) }
