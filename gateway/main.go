// Command gateway is the public edge of the Rental Platform API: it authenticates API keys,
// routes /v1 requests to the service that owns the resource with a signed identity, and
// serves the admin API that manages keys.
package main

import "rentalplatform/libs/service"

// main runs the gateway until SIGINT or SIGTERM; `gateway -healthcheck` asks the public
// listener's /healthz (the image's HEALTHCHECK).
func main() { service.Main("gateway", "GATEWAY_ADDR", defaultPublicAddr, run) }
