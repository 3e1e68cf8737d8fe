// Command payments-svc serves the payment agreements and payment requests API behind the gateway.
package main

// main runs the service until SIGINT or SIGTERM; `payments-svc -healthcheck` asks its own /healthz
// (the image's HEALTHCHECK).
func main() { spec().Main(run) }
