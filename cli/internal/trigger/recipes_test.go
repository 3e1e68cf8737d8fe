package trigger

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// emittedTypes reads the types libs/eventtype's catalogue marks emitted, from its source: the
// CLI's module does not import the platform's libs, so the test reads them where they are
// kept (the entries made by emitted(Type, …) in newCatalogue).
func emittedTypes(t *testing.T) []string {
	t.Helper()
	path := filepath.Join("..", "..", "..", "libs", "eventtype", "eventtype.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatalf("reading the catalogue: %v", err)
	}
	consts := map[string]string{}
	var types []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.ValueSpec:
			for i, name := range x.Names {
				if i < len(x.Values) {
					if lit, ok := x.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						consts[name.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		case *ast.CallExpr:
			if fn, ok := x.Fun.(*ast.Ident); ok && fn.Name == "emitted" && len(x.Args) > 0 {
				switch arg := x.Args[0].(type) {
				case *ast.Ident:
					types = append(types, arg.Name) // resolved below: constants may come later
				case *ast.BasicLit:
					s, _ := strconv.Unquote(arg.Value)
					types = append(types, "="+s)
				default:
					t.Fatalf("emitted(%T, …): cannot read the type", arg)
				}
			}
		}
		return true
	})
	out := make([]string, 0, len(types))
	for _, name := range types {
		if s, ok := consts[name]; ok {
			out = append(out, s)
		} else if len(name) > 0 && name[0] == '=' {
			out = append(out, name[1:])
		} else {
			t.Fatalf("emitted(%s, …): no string constant %s", name, name)
		}
	}
	if len(out) < 20 {
		t.Fatalf("read only %d emitted types from %s: %v", len(out), path, out)
	}
	slices.Sort(out)
	return out
}

func TestEveryEmittedTypeHasARecipe(t *testing.T) {
	emitted := emittedTypes(t)
	var have []string
	for _, r := range Recipes() {
		have = append(have, r.Type)
	}
	for _, typ := range emitted {
		if _, ok := Lookup(typ); !ok {
			t.Errorf("%s is emitted (libs/eventtype) and has no recipe", typ)
		}
	}
	for _, typ := range have {
		if !slices.Contains(emitted, typ) {
			t.Errorf("recipe %s: not an emitted type of libs/eventtype", typ)
		}
	}
	if !slices.IsSorted(have) || len(slices.Compact(slices.Clone(have))) != len(have) {
		t.Errorf("Recipes() is not sorted or names a type twice: %v", have)
	}
}

func TestRecipesAreWellFormed(t *testing.T) {
	for _, r := range Recipes() {
		if r.About == "" {
			t.Errorf("%s: no About", r.Type)
		}
		if err := Check(r); err != nil {
			t.Errorf("%s: %v", r.Type, err)
		}
	}
	// Check finds what a wrong recipe would only meet at run time.
	for name, bad := range map[string]Recipe{
		"no steps":              {Type: "x.y"},
		"an unknown fixture":    {Type: "x.y", Steps: []Step{post("", "/v1/a/${b.id}/c")}},
		"a later fixture":       {Type: "x.y", Steps: []Step{post("", "/v1/a", "b=${b.id}"), post("b", "/v1/b")}},
		"an undeclared input":   {Type: "x.y", Steps: []Step{post("", "/v1/a", "url=${gone_url}")}},
		"a bad parameter":       {Type: "x.y", Steps: []Step{post("", "/v1/a", "amount:=12x")}},
		"a GET":                 {Type: "x.y", Steps: []Step{{Method: "GET", Path: "/v1/a"}}},
		"a path outside the v1": {Type: "x.y", Steps: []Step{post("", "/admin/x")}},
		"a fixture named twice": {Type: "x.y", Steps: []Step{post("a", "/v1/a"), post("a", "/v1/a")}},
	} {
		if err := Check(bad); err == nil {
			t.Errorf("Check accepted a recipe with %s", name)
		}
	}
}

func TestOnlyWebhookEndpointDisabledNeedsAnInput(t *testing.T) {
	for _, r := range Recipes() {
		if got := len(r.Inputs) > 0; got != (r.Type == "webhook_endpoint.disabled") {
			t.Errorf("%s: inputs %v", r.Type, r.Inputs)
		}
	}
}
