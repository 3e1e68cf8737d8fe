// Command verification-svc serves the verification sessions and reports API behind the gateway.
package main

// main runs the service until SIGINT or SIGTERM; `verification-svc -healthcheck` asks its own /healthz
// (the image's HEALTHCHECK).
func main() { spec().Main(run) }
