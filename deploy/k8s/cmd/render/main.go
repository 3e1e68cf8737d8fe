// Command render prints an overlay of deploy/k8s as YAML, its programs' images retagged:
// `make k8s OVERLAY=prod IMAGE_PREFIX=registry.example/rental/ IMAGE_TAG=1.4.2 | kubectl apply -f -`.
// kustomize or `kubectl apply -k deploy/k8s/overlays/dev` render the same without retagging.
package main

import (
	"flag"
	"fmt"
	"os"

	"rentalplatform/deploy/k8s"
)

func main() {
	overlay := flag.String("overlay", "dev", "the overlay: a folder of deploy/k8s/overlays")
	prefix := flag.String("image-prefix", "", "images are this + program (empty: rentalplatform/)")
	tag := flag.String("image-tag", "", "the images' tag (empty: dev)")
	root := flag.String("root", "deploy/k8s", "the folder of base/ and overlays/")
	flag.Parse()
	m, err := k8s.Render(*root+"/overlays/"+*overlay, k8s.Images{Prefix: *prefix, Tag: *tag})
	if err == nil {
		var out []byte
		if out, err = m.AsYaml(); err == nil {
			_, err = os.Stdout.Write(out)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
}
