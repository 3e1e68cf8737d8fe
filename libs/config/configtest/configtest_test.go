package configtest

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
)

func doc(rows ...string) string {
	return "# Operations\n\n" + Heading + "\n\nSome prose.\n\n| variable | program | default | meaning |\n|---|---|---|---|\n" +
		strings.Join(rows, "\n") + "\n\nMore prose.\n\n| a | b |\n|---|---|\n| `NOT_IN_THE_TABLE` | x |\n"
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		doc     string
		want    map[string]map[string]bool // variable → program → pending
		wantErr string
	}{
		{
			name: "rows, aliases, marks and escaped pipes",
			doc: doc(
				"| `LOG_LEVEL` | gateway, every service | `info` | a \\| b |",
				"| `A_ONE`, `A_TWO` | `make run`, collections-svc† | | |",
			),
			want: map[string]map[string]bool{
				"LOG_LEVEL": {"gateway": false, "verification-svc": false, "collections-svc": false, "payments-svc": false, "webhooks-svc": false},
				"A_ONE":     {"make run": false, "collections-svc": true},
				"A_TWO":     {"make run": false, "collections-svc": true},
			},
		},
		{name: "no section", doc: "| variable | program | default | meaning |\n", wantErr: "no line"},
		{name: "no table in the section", doc: Heading + "\n\nprose\n\n## Next\n\n| variable | program | default | meaning |\n", wantErr: "no table"},
		{name: "other columns", doc: Heading + "\n| variable | default |\n|---|---|\n", wantErr: "columns"},
		{name: "unknown program", doc: doc("| `X` | gateway, billing-svc | | |"), wantErr: `"billing-svc"`},
		{name: "no variable", doc: doc("| X | gateway | | |"), wantErr: "no `VARIABLE`"},
		{name: "missing cell", doc: doc("| `X` | gateway | |"), wantErr: "3 cells"},
		{name: "program twice in a row", doc: doc("| `X` | webhooks-svc, every service | | |"), wantErr: "named twice"},
		{name: "variable and program in two rows", doc: doc("| `X` | gateway | | |", "| `X` | devkey, gateway | | |"), wantErr: "X of gateway has a row already"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table, err := Parse(tc.doc)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]map[string]bool{}
			for _, r := range table {
				for _, v := range r.Vars {
					got[v] = r.Programs
				}
			}
			if !maps.EqualFunc(got, tc.want, maps.Equal) {
				t.Fatalf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestMismatches(t *testing.T) {
	table, err := Parse(doc(
		"| `SHARED` | gateway, every service | | |",
		"| `OWN` | webhooks-svc | | |",
		"| `LATER` | collections-svc† | | |",
	))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, program string
		read          []string
		want          []string // substrings, one per mismatch
	}{
		{"as documented", "webhooks-svc", []string{"OWN", "SHARED"}, nil},
		{"pending and not read yet", "collections-svc", []string{"SHARED"}, nil},
		{"read without a row", "gateway", []string{"SHARED", "EXTRA"}, []string{"gateway reads EXTRA, which no row"}},
		{"a row not read", "webhooks-svc", []string{"SHARED"}, []string{"says webhooks-svc reads OWN; it does not"}},
		{"pending but read now", "collections-svc", []string{"LATER", "SHARED"}, []string{"collections-svc reads LATER now: remove the †"}},
		{"another program's variable", "payments-svc", []string{"OWN", "SHARED"}, []string{"payments-svc reads OWN, which no row"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := table.Mismatches(tc.program, tc.read)
			if len(got) != len(tc.want) {
				t.Fatalf("mismatches %q; want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("mismatch %q does not say %q", got[i], w)
				}
			}
		})
	}
}

func TestRecorder(t *testing.T) {
	r := NewRecorder(map[string]string{"A": "1"})
	var wg sync.WaitGroup
	for _, name := range []string{"B", "A", "C", "A"} {
		wg.Go(func() { r.Getenv(name) })
	}
	wg.Wait()
	if got := r.Getenv("A"); got != "1" {
		t.Errorf("Getenv(A) = %q", got)
	}
	if got := r.Names(); !slices.Equal(got, []string{"A", "B", "C"}) {
		t.Errorf("Names() = %v", got)
	}
}

// The table in docs/operations.md parses, and names every program: each program's own test
// (Check) then holds its rows to what it reads, so no row is read by no program.
func TestOperationsTable(t *testing.T) {
	table := Load(t)
	named := map[string]bool{}
	for _, r := range table {
		for p := range r.Programs {
			named[p] = true
		}
	}
	for _, p := range Programs() {
		if !named[p] {
			t.Errorf("no row of the table in %s names %s", Doc, p)
		}
	}
}
