// Command webhooks-svc serves the webhook endpoints API behind the gateway.
package main

// main runs the service until SIGINT or SIGTERM; `webhooks-svc -healthcheck` asks its own /healthz
// (the image's HEALTHCHECK).
func main() { spec().Main(run) }
