// Package configtest keeps the table of environment variables in docs/operations.md true. A
// program's test runs its configuration loader through CheckLoad: the loader reads through a
// Recorder (a getenv that remembers every name asked for), and Check compares the names with
// the rows of the table that name the program: every variable read has a row naming the
// program, and every row naming the program is read by it. Each program in Programs has such a
// test, and every row names one of them, so every row of the table is read by some program.
package configtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Recorder is a getenv that answers from a map and remembers every name it was asked for.
type Recorder struct {
	env map[string]string

	mu   sync.Mutex
	seen map[string]bool
}

// NewRecorder returns a Recorder answering from env (nil: every variable unset).
func NewRecorder(env map[string]string) *Recorder {
	return &Recorder{env: env, seen: map[string]bool{}}
}

// Getenv is the config.Getenv to hand to the program's configuration loader.
func (r *Recorder) Getenv(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[name] = true
	return r.env[name]
}

// Names returns the names asked for so far, sorted.
func (r *Recorder) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.seen))
	for n := range r.seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Doc is where the table is, from the workspace root, and Heading the section that holds it
// (its first table).
const (
	Doc     = "docs/operations.md"
	Heading = "## Environment variables"
)

// EveryService is what the table's program column may say instead of naming the four services.
const EveryService = "every service"

// Pending marks a program in the program column that reads the variable only in a version not
// merged yet: its test must find the variable not read, and fails once it is, so the mark goes
// when that version lands.
const Pending = "†"

// Programs are the names the program column may use: the five programs, the local launcher
// (`make run`, deploy/local) and the Docker Compose helpers (deploy/compose/cmd).
func Programs() []string {
	return []string{"gateway", "verification-svc", "collections-svc", "payments-svc", "webhooks-svc",
		"make run", "ferretdb", "asynqmon", "devkey"}
}

func services() []string {
	return []string{"verification-svc", "collections-svc", "payments-svc", "webhooks-svc"}
}

// Row is one row of the table: the variables of its first column, and the programs that read
// them, each with whether it is marked Pending.
type Row struct {
	Line     int
	Vars     []string
	Programs map[string]bool
}

// Table is the rows of the table.
type Table []Row

// Parse reads the table under Heading in doc, the text of docs/operations.md. Its columns are
// variable, program, default and meaning; a row names at least one variable (in backquotes)
// and one program of Programs.
func Parse(doc string) (Table, error) {
	lines := strings.Split(doc, "\n")
	start := slices.Index(lines, Heading)
	if start < 0 {
		return nil, fmt.Errorf("no line %q", Heading)
	}
	varName := regexp.MustCompile("`([A-Z][A-Z0-9_]*)`")
	var (
		table  Table
		header bool
		errs   []error
		seen   = map[[2]string]int{} // variable and program → the line of their row
	)
	for i := start + 1; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(line, "|") {
			if header || strings.HasPrefix(line, "## ") {
				break // the end of the table, or of the section
			}
			continue
		}
		cells := splitRow(line)
		if !header {
			if want := []string{"variable", "program", "default", "meaning"}; !slices.Equal(cells, want) {
				return nil, fmt.Errorf("line %d: the table's columns are %q, want %q", i+1, cells, want)
			}
			header = true
			i++ // the |---| line
			continue
		}
		if len(cells) != 4 {
			errs = append(errs, fmt.Errorf("line %d: %d cells, want 4", i+1, len(cells)))
			continue
		}
		row := Row{Line: i + 1, Programs: map[string]bool{}}
		for _, m := range varName.FindAllStringSubmatch(cells[0], -1) {
			row.Vars = append(row.Vars, m[1])
		}
		if len(row.Vars) == 0 {
			errs = append(errs, fmt.Errorf("line %d: no `VARIABLE` in the first cell %q", i+1, cells[0]))
		}
		if err := row.parsePrograms(cells[1]); err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", i+1, err))
		}
		for _, v := range row.Vars {
			for _, p := range sortedKeys(row.Programs) {
				if first, dup := seen[[2]string{v, p}]; dup {
					errs = append(errs, fmt.Errorf("line %d: %s of %s has a row already, line %d", i+1, v, p, first))
				}
				seen[[2]string{v, p}] = i + 1
			}
		}
		table = append(table, row)
	}
	if !header {
		return nil, fmt.Errorf("no table under %q", Heading)
	}
	return table, errors.Join(errs...)
}

// parsePrograms reads the program column: names of Programs (or EveryService), separated by
// commas, in backquotes or not, each possibly marked Pending.
func (r *Row) parsePrograms(cell string) error {
	for p := range strings.SplitSeq(cell, ",") {
		name := strings.Trim(strings.TrimSpace(p), "`")
		name, pending := strings.CutSuffix(name, Pending)
		names := []string{name}
		if name == EveryService {
			names = services()
		} else if !slices.Contains(Programs(), name) {
			return fmt.Errorf("program %q is not one of %q or %q", name, Programs(), EveryService)
		}
		for _, n := range names {
			if _, dup := r.Programs[n]; dup {
				return fmt.Errorf("program %s named twice", n)
			}
			r.Programs[n] = pending
		}
	}
	return nil
}

// splitRow returns the cells of a table row, trimmed; `\|` does not split.
func splitRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cell.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}

// Mismatches compares the variables program read with the table, and says each difference:
// a variable read without a row naming the program, a row naming the program that it does not
// read, and a variable marked Pending for the program that it reads now.
func (t Table) Mismatches(program string, read []string) []string {
	documented, pending := map[string]bool{}, map[string]bool{}
	for _, r := range t {
		p, ok := r.Programs[program]
		if !ok {
			continue
		}
		for _, v := range r.Vars {
			if p {
				pending[v] = true
			} else {
				documented[v] = true
			}
		}
	}
	var out []string
	for _, v := range read {
		switch {
		case pending[v]:
			out = append(out, fmt.Sprintf("%s reads %s now: remove the %s after %s in its row of %s", program, v, Pending, program, Doc))
		case !documented[v]:
			out = append(out, fmt.Sprintf("%s reads %s, which no row of the table in %s names it for", program, v, Doc))
		}
	}
	for _, v := range sortedKeys(documented) {
		if !slices.Contains(read, v) {
			out = append(out, fmt.Sprintf("the table in %s says %s reads %s; it does not", Doc, program, v))
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Load reads and parses the table of the workspace this test runs in.
func Load(t testing.TB) Table {
	t.Helper()
	root, err := workspaceRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, Doc))
	if err != nil {
		t.Fatal(err)
	}
	table, err := Parse(string(b))
	if err != nil {
		t.Fatalf("%s: %v", Doc, err)
	}
	return table
}

// Check fails t unless the variables program read (a Recorder's Names) are exactly the ones
// the table in docs/operations.md names the program for.
func Check(t testing.TB, program string, read []string) {
	t.Helper()
	if len(read) == 0 {
		t.Fatalf("%s read no variable: was its configuration loaded through the Recorder?", program)
	}
	for _, m := range Load(t).Mismatches(program, read) {
		t.Error(m)
	}
}

// CheckLoad runs load, the program's configuration loader, with a Recorder answering from env
// (nil: nothing set), and checks what it read (Check). load may fail: a loader refusing an
// empty environment has read every variable by then.
func CheckLoad(t testing.TB, program string, env map[string]string, load func(getenv func(string) string)) {
	t.Helper()
	rec := NewRecorder(env)
	load(rec.Getenv)
	Check(t, program, rec.Names())
}

// workspaceRoot is the folder of the go.work the go command uses here (the test's package).
func workspaceRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOWORK").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOWORK: %w", err)
	}
	work := strings.TrimSpace(string(out))
	if work == "" || work == "off" {
		return "", fmt.Errorf("not in a Go workspace (GOWORK %q): %s is found from go.work", work, Doc)
	}
	return filepath.Dir(work), nil
}
