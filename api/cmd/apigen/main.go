// Command apigen writes the API's OpenAPI documents (api/openapi.yaml and .json,
// api/admin.openapi.yaml and .json) from their sources in api/src (package build).
//
//	go run ./api/cmd/apigen [-root api]
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"rentalplatform/api/build"
)

func main() {
	root := flag.String("root", "api", "the api folder")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, "apigen:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	files, err := build.Files(root)
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := os.WriteFile(filepath.Join(root, name), files[name], 0o644); err != nil {
			return err
		}
		fmt.Println("apigen: wrote", filepath.Join(root, name))
	}
	return nil
}
