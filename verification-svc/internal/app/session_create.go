package app

import (
	"context"

	"rentalplatform/libs/events"
	"rentalplatform/libs/ids"
	"rentalplatform/libs/netguard"

	"rentalplatform/verification-svc/internal/domain"
)

// CreateSession is the client's input to Create (nil: not sent).
type CreateSession struct {
	Applicant   *domain.ApplicantParams
	Products    []string
	RedirectURL *string
	WebhookURL  *string
	Metadata    map[string]string
}

// Create validates the input and stores a new session with its client secret (and, with a
// webhook_url, the secret that signs the deliveries there) and the verification_session.created
// event, then queues its expiry. A live session is handed to the verification provider, if one
// is configured.
func (s *Service) Create(ctx context.Context, caller Caller, in CreateSession) (*domain.Session, error) {
	id := s.IDs.New(ids.VerificationSession)
	v, err := domain.New(domain.NewParams{
		ID: id, Account: caller.Account, Livemode: caller.Livemode, Created: s.Now(), TTL: s.cfg.TTL,
		// Stripe's form, <id>_secret_<random>: a client can tell which session a secret opens,
		// and 24 random bytes cannot be guessed.
		ClientSecret: ids.Secret(id+"_secret_", 24),
		// Standard Webhooks secrets: whsec_ + base64 of the key; 32 bytes is an HMAC-SHA256
		// key of full strength.
		WebhookSecret: ids.StdSecret("whsec_", 32),
		Applicant:     in.Applicant, Products: in.Products,
		RedirectURL: in.RedirectURL, WebhookURL: in.WebhookURL, CheckWebhookHost: s.checkWebhookHost(),
		Metadata: in.Metadata,
	})
	if err != nil {
		return nil, err
	}
	stored, err := s.Sessions.Create(events.CausedBy(ctx, caller), v)
	if err != nil {
		return nil, err
	}
	if stored != v {
		// A create retried under its Idempotency-Key: the session the first stored, whose expiry
		// is queued or the sweep's to catch (ExpireOverdue), and which a live one's provider was
		// handed then; it is not handed again.
		return stored, nil
	}
	// The session is stored: a lost task is the sweep's to catch (ExpireOverdue), so a queue
	// outage delays an expiry rather than failing the request.
	if err := s.Scheduler.ScheduleExpiry(ctx, v.ID(), v.ExpiresAt()); err != nil {
		s.Log.WarnContext(ctx, "scheduling a session's expiry; the expiry sweep will catch it", "session", v.ID(), "error", err.Error())
	}
	if v.Livemode() && s.Provider != nil {
		if err := s.Provider.Begin(ctx, v); err != nil {
			s.Log.WarnContext(ctx, "handing a live session to the verification provider", "session", v.ID(), "error", err.Error())
		}
	}
	return v, nil
}

// checkWebhookHost is the guard the domain runs on a webhook_url's host
// (domain.NewParams.CheckWebhookHost): it refuses an internal address or localhost, as webhook
// endpoints' URLs are refused (libs/netguard), unless the guard is lifted
// (VERIFICATION_WEBHOOK_ALLOW_PRIVATE), in which case it is nil. Where a name leads is checked
// again on every connection webhooks-svc makes (its WEBHOOKS_ALLOW_PRIVATE).
func (s *Service) checkWebhookHost() func(host string) error {
	if s.cfg.AllowPrivate {
		return nil
	}
	return func(host string) error {
		if err := netguard.CheckHost(host); err != nil {
			return domain.URLNotAllowed("webhook_url", host)
		}
		return nil
	}
}
