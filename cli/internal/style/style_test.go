package style

import (
	"bytes"
	"os"
	"testing"
)

func TestNoColourOutsideATerminal(t *testing.T) {
	env := func(string) string { return "" }
	if s := For(&bytes.Buffer{}, env); s.Enabled() || s.Green("ok") != "ok" {
		t.Errorf("a buffer is coloured")
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if s := For(f, env); s.Enabled() || s.Bold("x") != "x" {
		t.Errorf("a file is coloured")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if For(w, env).Enabled() {
		t.Errorf("a pipe is coloured")
	}
	if (Styler{enabled: true}).Red("no") != "\x1b[31mno\x1b[0m" {
		t.Errorf("an enabled Styler does not colour")
	}
	noColor := func(k string) string {
		if k == "NO_COLOR" {
			return "1"
		}
		return ""
	}
	if For(os.Stdout, noColor).Enabled() {
		t.Errorf("NO_COLOR is not respected")
	}
}
