package main

import "rentalplatform/libs/service"

// spec names collections-svc and its defaults; so far it reads only the settings every service shares
// (docs/architecture.md).
func spec() service.Spec {
	return service.Spec{Name: "collections-svc", HTTPAddr: "127.0.0.1:8092", MongoDatabase: "collections"}
}
