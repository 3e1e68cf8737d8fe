//go:build tools

// Package tools pins Docker Compose v2, built from its Go module by `make compose-tool` into
// bin/docker-compose for `make compose-test` (docs/operations.md says why v2 and not Debian's
// Python docker-compose v1). It is a module of its own, outside go.work, so that Compose's
// large dependency graph never changes the versions the platform's modules build with; the
// exclude lines are Compose's own (`go install …@version` refuses a module that has them).
package tools

import _ "github.com/docker/compose/v2/cmd"
