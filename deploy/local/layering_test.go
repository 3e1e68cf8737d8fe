package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The domain of each service (and of the gateway) depends on no framework, even indirectly
// through libs: no HTTP server or client, no store driver, no queue, no telemetry
// (../shared/DESIGN.md). A libs package a domain uses carries errors and rules as domain
// errors; the ports map them to HTTP once.
func TestDomainsImportNoFramework(t *testing.T) {
	forbidden := []string{
		"net/http", "github.com/gofiber", "github.com/valyala/fasthttp", "go.mongodb.org",
		"github.com/hibiken/asynq", "github.com/redis", "go.opentelemetry.io",
	}
	for _, module := range programs {
		for _, dep := range forbiddenDeps(t, module, "./internal/domain/", forbidden) {
			t.Errorf("%s/internal/domain depends on %s (go list -deps)", module, dep)
		}
	}
}

// programs are the modules of the deployed programs.
var programs = []string{"gateway", "verification-svc", "collections-svc", "payments-svc", "webhooks-svc"}

// forbiddenDeps returns the dependencies of pkg in module (go list -deps) that are one of
// forbidden or inside one.
func forbiddenDeps(t *testing.T, module, pkg string, forbidden []string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", pkg)
	cmd.Dir = filepath.Join("..", "..", module)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s in %s: %v", pkg, module, err)
	}
	var found []string
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				found = append(found, dep)
			}
		}
	}
	return found
}

// The embedded store and the test kits stay in test-only packages: no program a user deploys
// links FerretDB, miniredis or a test helper (the local launcher, which embeds the store on
// purpose, is not one of them).
func TestProgramsLinkNoTestKit(t *testing.T) {
	forbidden := []string{
		"github.com/FerretDB", "github.com/alicebob/miniredis", "rentalplatform/embedded",
		"rentalplatform/libs/servicetest", // not "testing": Fiber's utils import it
	}
	for _, module := range programs {
		for _, dep := range forbiddenDeps(t, module, ".", forbidden) {
			t.Errorf("the %s program links %s (go list -deps)", module, dep)
		}
	}
}
