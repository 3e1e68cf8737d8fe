package app

import (
	"rentalplatform/libs/netguard"

	"rentalplatform/webhooks-svc/internal/domain"
)

// checkHost is the guard the domain runs on an endpoint URL's host (domain.NewParams.CheckHost):
// it refuses an internal address or localhost, unless the guard is lifted
// (WEBHOOKS_ALLOW_PRIVATE), in which case it is nil. Where a name leads is checked again on
// every connection (netguard.Control).
func (s *Service) checkHost() func(host string) error {
	if s.cfg.AllowPrivate {
		return nil
	}
	return func(host string) error {
		if err := netguard.CheckHost(host); err != nil {
			return domain.URLNotAllowed(host + " is a private, loopback or otherwise internal address")
		}
		return nil
	}
}
