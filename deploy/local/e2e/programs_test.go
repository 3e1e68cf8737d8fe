package e2e

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"rentalplatform/deploy/local/stack"
)

// programs is the suite's one build of the five programs, which every stack it starts runs
// (stack.Options.Programs): the suite starts some thirty stacks, and linking the programs
// again for each cost about 20 s of CPU a stack, minutes of the suite on two cores. The
// launcher tests start the launcher, which builds its own as `make run` does; seedPrograms
// spares them the link where the build is not what they test.
var programs = &suiteBuild{build: func(ctx context.Context, root, dir string) error {
	return stack.Build(ctx, root, dir, io.Discard)
}}

// launcherBuild is the suite's one build of the launcher (`make run`'s bin/rental-local), which
// every launcher test starts.
var launcherBuild = &suiteBuild{build: func(ctx context.Context, root, dir string) error {
	return goBuildTo(ctx, root, "./deploy/local", filepath.Join(dir, "rental-local"))
}}

// suiteBuild builds once, at the first test that asks, into a folder of its own.
type suiteBuild struct {
	build func(ctx context.Context, root, dir string) error

	once sync.Once
	dir  string
	err  error
}

// folder returns the folder of what was built from the repository at root.
func (b *suiteBuild) folder(t *testing.T, root string) string {
	t.Helper()
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "rental-e2e-programs-"); b.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		b.err = b.build(ctx, root, b.dir)
	})
	if b.err != nil {
		t.Fatalf("building: %v", b.err)
	}
	return b.dir
}

// remove deletes the folder, once the tests are done.
func (b *suiteBuild) remove() {
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}

// seedPrograms puts the suite's build of the five programs (hard links, or copies) where the
// launcher of dataDir builds its own, DATA_DIR/bin, before its first start. The launcher still
// runs its `go build`, which finds them up to date (the same sources and settings give the same
// build ids) and leaves them as they are instead of linking them again: 17 s of CPU a start.
// Should they differ (another Go, other settings), it links them as always, replacing the
// file rather than writing into it, so the suite's build is never changed.
func seedPrograms(t *testing.T, dataDir string) {
	t.Helper()
	src := programs.folder(t, repoRoot(t))
	dst := filepath.Join(dataDir, "bin")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		if err := os.Link(from, to); err != nil && !errors.Is(err, os.ErrExist) {
			if err := copyFile(from, to); err != nil {
				t.Fatalf("seeding %s: %v", to, err)
			}
		}
	}
}

// copyFile copies an executable.
func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}
