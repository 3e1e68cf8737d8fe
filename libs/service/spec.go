package service

import "rentalplatform/libs/config"

// Spec is what the shared runtime needs to know of one service: its name (in logs, traces and
// the MongoDB application name) and its defaults for HTTP_ADDR and MONGODB_DATABASE. A
// service's loadConfig reads the shared settings with them (config.LoadBase(getenv,
// spec().Defaults())) beside its own, and its run() starts with Start(ctx, spec().Name, …).
type Spec struct {
	Name          string // "payments-svc"
	HTTPAddr      string // default HTTP_ADDR, "127.0.0.1:8093"
	MongoDatabase string // default MONGODB_DATABASE, "payments"
}

// Defaults are the service's defaults of the shared settings.
func (s Spec) Defaults() config.Defaults {
	return config.Defaults{HTTPAddr: s.HTTPAddr, MongoDatabase: s.MongoDatabase}
}
