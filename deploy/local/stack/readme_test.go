package stack

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's configuration table says where things are as the code puts them: what the
// stack keeps in DATA_DIR, where `make run` builds the launcher (the Makefile's), and the
// variables that fix the services' addresses.
func TestReadmeSaysWhereThingsAre(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	row := func(name string) string {
		m := regexp.MustCompile("(?m)^\\| [^|]*`" + name + "`[^|]* \\|.*$").Find(readme)
		if m == nil {
			t.Fatalf("the README's configuration table has no row for %s", name)
		}
		return string(m)
	}

	dataDir := row("DATA_DIR")
	for _, want := range []string{binDir + "/", mongoDir + "/", redisSnapshot, "dev_api_key", "admin_token"} {
		if !strings.Contains(dataDir, "`"+want+"`") {
			t.Errorf("the README's DATA_DIR row does not name `%s`:\n%s", want, dataDir)
		}
	}
	launcher := regexp.MustCompile(`(?m)^run:.*\n\t.*go build -o (\S+) \./deploy/local`).FindSubmatch(makefile)
	if launcher == nil {
		t.Fatal("no `go build -o … ./deploy/local` in the Makefile's run target")
	}
	if want := "`./" + string(launcher[1]) + "`"; !strings.Contains(dataDir, want) {
		t.Errorf("the README's DATA_DIR row does not say the launcher is %s (the Makefile builds it there):\n%s", want, dataDir)
	}
	for _, v := range ServiceAddrVars() {
		row(v)
	}
}
