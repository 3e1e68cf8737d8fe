package main

import (
	"errors"
	"fmt"

	"rentalplatform/libs/config"
	"rentalplatform/libs/service"
	"rentalplatform/libs/validate"

	"rentalplatform/collections-svc/internal/domain"
)

// spec names collections-svc and its defaults of the settings every service shares.
func spec() service.Spec {
	return service.Spec{Name: "collections-svc", HTTPAddr: "127.0.0.1:8092", MongoDatabase: "collections"}
}

// Config is everything collections-svc reads from the environment (docs/operations.md,
// "Environment variables").
type Config struct {
	config.Base
	service.QueueConfig
	// Partner is the collection partner new cases are submitted to (collection_partner).
	Partner domain.Partner
}

// The partner shown until one is configured: a placeholder that says so, on reserved
// example domains and a fictional number.
var defaultPartner = domain.Partner{
	Name:  "Example Collections (set COLLECTIONS_PARTNER_*)",
	Email: "partner@example.com",
	Phone: "+15555550100",
	Site:  "https://partner.example.com",
}

func loadConfig(getenv config.Getenv) (Config, error) {
	base, baseErr := config.LoadBase(getenv, spec().Defaults())
	r := config.NewReader(getenv)
	cfg := Config{
		Base:        base,
		QueueConfig: service.ReadQueueConfig(r),
		Partner: domain.Partner{
			Name:  r.String("COLLECTIONS_PARTNER_NAME", defaultPartner.Name),
			Email: r.String("COLLECTIONS_PARTNER_EMAIL", defaultPartner.Email),
			Phone: r.String("COLLECTIONS_PARTNER_PHONE", defaultPartner.Phone),
			Site:  r.String("COLLECTIONS_PARTNER_SITE", defaultPartner.Site),
		},
	}
	errs := []error{baseErr, r.Err()}
	if cfg.Partner.Name == "" {
		errs = append(errs, fmt.Errorf("COLLECTIONS_PARTNER_NAME must be 1 to %d characters", domain.MaxNameLen))
	} else if err := validate.Text("COLLECTIONS_PARTNER_NAME", cfg.Partner.Name, domain.MaxNameLen, false); err != nil {
		errs = append(errs, err)
	}
	// The site is shown in the normal form of the API's one URL parser, as any URL a client
	// gives is.
	site, siteErr := validate.ParseHTTPSURL("COLLECTIONS_PARTNER_SITE", cfg.Partner.Site, 2048)
	if siteErr == nil {
		cfg.Partner.Site = site.String()
	}
	for _, check := range []error{
		validate.Email("COLLECTIONS_PARTNER_EMAIL", cfg.Partner.Email),
		validate.Phone("COLLECTIONS_PARTNER_PHONE", cfg.Partner.Phone),
		siteErr,
	} {
		if check != nil {
			errs = append(errs, check)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}
