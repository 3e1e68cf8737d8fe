// Package k8s renders the kustomize overlays of deploy/k8s with kustomize's own Go API (the
// same code `kubectl apply -k` runs), for `make k8s` and for the test that checks what they
// render.
package k8s

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Programs are the platform's programs: each a Deployment of deploy/k8s and an image of
// `make images` (deploy/images), named ImageName(program).
var Programs = []string{"gateway", "verification-svc", "collections-svc", "payments-svc", "webhooks-svc"}

// ImageName is the image the base names for a program; Images retags it.
func ImageName(program string) string { return "rentalplatform/" + program }

// Images retags the programs' images at render: Prefix + program, tagged Tag. Empty fields
// keep the base's (rentalplatform/<program>:dev).
type Images struct{ Prefix, Tag string }

// Render builds the kustomization in dir, retagging the programs' images as images says.
func Render(dir string, images Images) (resmap.ResMap, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	fs := filesys.MakeFsOnDisk()
	if images == (Images{}) {
		return k.Run(fs, abs)
	}
	// kustomize's images transformer, through a kustomization of its own that takes the
	// overlay as its one resource.
	tmp, err := os.MkdirTemp("", "rental-k8s-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	// kustomize takes a relative path alone.
	rel, err := filepath.Rel(tmp, abs)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - %s\nimages:\n", filepath.ToSlash(rel))
	for _, p := range Programs {
		fmt.Fprintf(&b, "  - name: %s\n", ImageName(p))
		if images.Prefix != "" {
			fmt.Fprintf(&b, "    newName: %s%s\n", images.Prefix, p)
		}
		if images.Tag != "" {
			fmt.Fprintf(&b, "    newTag: %q\n", images.Tag)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, "kustomization.yaml"), []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	return k.Run(fs, tmp)
}
