// Package trigger holds the recipes of `rental trigger`: for every event type the platform
// emits, the test-mode API calls that cause it, as data (a table of steps per type, recipes.go),
// and a Runner that makes them.
//
// A step is one call: a method, a path, and a body written as `rental post`'s -d parameters
// (or a multipart upload). A step may name its answer (a fixture), so that later steps use its
// fields: ${agreement.id}. ${today} is the UTC date; any other ${name} is an input the caller
// gives (the one recipe that needs one is webhook_endpoint.disabled, which the API alone cannot
// cause). Every POST carries a new Idempotency-Key.
//
// The list of types is a copy of libs/eventtype's emitted types, kept apart so that the CLI's
// module does not depend on the platform's: TestEveryEmittedTypeHasARecipe reads libs/eventtype
// to keep the two equal, and the end-to-end test compares them with GET /v1/event_types.
package trigger
