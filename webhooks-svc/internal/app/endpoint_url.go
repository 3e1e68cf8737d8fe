package app

import (
	"net/url"

	"rentalplatform/libs/netguard"

	"rentalplatform/webhooks-svc/internal/domain"
)

// checkURL refuses an endpoint URL whose host is an internal address or localhost, unless the
// guard is lifted (WEBHOOKS_ALLOW_PRIVATE). raw has passed the domain's URL rules. Where a name
// leads is checked again on every connection (netguard.Control).
func (s *Service) checkURL(raw string) error {
	if s.cfg.AllowPrivate {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return domain.URLNotAllowed("not a valid URL")
	}
	if err := netguard.CheckHost(u.Hostname()); err != nil {
		return domain.URLNotAllowed(u.Hostname() + " is a private, loopback or otherwise internal address")
	}
	return nil
}
