package e2e

import (
	"bytes"
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"rentalplatform/deploy/local/stack"
)

// programs is the suite's one build of the five programs, which every stack it starts runs
// (stack.Options.Programs): the suite starts some thirty stacks, and linking the programs
// again for each cost about 20 s of CPU a stack, minutes of the suite on two cores. The
// launcher tests still build their own, as `make run` does.
var programs = &suiteBuild{}

// suiteBuild builds the programs once, at the first stack started, into a folder of its own.
type suiteBuild struct {
	once sync.Once
	dir  string
	err  error
}

// folder returns the folder of the programs built from the repository at root.
func (b *suiteBuild) folder(t *testing.T, root string) string {
	t.Helper()
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "rental-e2e-programs-"); b.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		var out bytes.Buffer
		b.err = stack.Build(ctx, root, b.dir, &out)
	})
	if b.err != nil {
		t.Fatalf("building the programs: %v", b.err)
	}
	return b.dir
}

// remove deletes the folder, once the tests are done.
func (b *suiteBuild) remove() {
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}
