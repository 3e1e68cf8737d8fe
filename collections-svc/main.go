// Command collections-svc serves the collection cases and their files API behind the gateway.
package main

// main runs the service until SIGINT or SIGTERM; `collections-svc -healthcheck` asks its own /healthz
// (the image's HEALTHCHECK).
func main() { spec().Main(run) }
