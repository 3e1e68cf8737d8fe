// Package api holds the API's contract, as the gateway serves it: the OpenAPI 3.1 documents of
// the public listener and of the admin listener, and the reference page rendered from the
// public one. They are generated (`make generate`) from api/src and checked in; a test fails
// when they are stale.
package api

import (
	_ "embed"
)

// The documents and the page, as generated. Package-level because go:embed allows nothing else;
// they are read, never written.
var (
	//go:embed openapi.json
	publicJSON []byte
	//go:embed openapi.yaml
	publicYAML []byte
	//go:embed admin.openapi.json
	adminJSON []byte
	//go:embed reference.html
	reference []byte
)

// PublicJSON is the public API's OpenAPI document (GET /v1/openapi.json).
func PublicJSON() []byte { return publicJSON }

// PublicYAML is the same document as YAML (api/openapi.yaml).
func PublicYAML() []byte { return publicYAML }

// AdminJSON is the admin API's OpenAPI document (GET /admin/openapi.json on the admin listener).
func AdminJSON() []byte { return adminJSON }

// Reference is the reference page rendered from the public document (GET /docs).
func Reference() []byte { return reference }
