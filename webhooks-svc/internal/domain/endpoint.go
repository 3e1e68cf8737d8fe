package domain

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"rentalplatform/libs/events"
	"rentalplatform/libs/eventtype"
	"rentalplatform/libs/validate"
)

// Limits on what a client may store on an endpoint.
const (
	MaxURLLen         = 2048
	MaxDescriptionLen = 5000
)

// Status says whether an endpoint receives deliveries.
type Status string

// Endpoint statuses.
const (
	StatusEnabled  Status = "enabled"
	StatusDisabled Status = "disabled"
)

// Endpoint is a URL that receives the account's events of the types it subscribes to.
// Its fields change only through its methods, which keep it valid.
type Endpoint struct {
	id            string
	account       string
	livemode      bool
	url           string
	enabledEvents []string
	status        Status
	secret        string
	apiVersion    string
	description   string // "" when unset
	metadata      map[string]string
	created       time.Time

	// previousSecret still signs deliveries, next to secret, until previousSecretExpires
	// (after a rotation).
	previousSecret        string
	previousSecretExpires time.Time
	// failingSince is when the first failed delivery after the last success was; zero while
	// deliveries succeed.
	failingSince time.Time
	// deleted: the endpoint is gone for the API; its record stays only until the event that
	// says so has been published.
	deleted bool

	// Recorder keeps the webhook_endpoint.* events raised since the endpoint was loaded or
	// created; the repository stores them, rendered, in the endpoint's outbox in the same
	// write as the change.
	events.Recorder
}

// NewParams is everything needed to create an endpoint: the client's input (URL through
// Metadata) and what the application assigns (ID, Account, Livemode, Secret, Created).
type NewParams struct {
	ID       string
	Account  string
	Livemode bool
	Secret   string
	Created  time.Time

	URL string
	// CheckHost, when set, is the application's guard against URLs on internal addresses,
	// given the host of the parsed URL (so that nobody parses it again); its error is returned
	// as it is.
	CheckHost func(host string) error
	// EnabledEvents: nil means the client did not send it (parameter_missing); an empty,
	// non-nil slice was sent empty (parameter_invalid).
	EnabledEvents []string
	Description   *string
	APIVersion    *string // nil: events.APIVersion
	// Metadata: a key whose value is "" is not stored, as on update.
	Metadata map[string]string
}

// New validates the client's input and returns an enabled endpoint, which raised
// webhook_endpoint.created. The first rule broken is reported as an Invalid *domainerr.Error
// naming the parameter.
func New(p NewParams) (*Endpoint, error) {
	if p.ID == "" || p.Account == "" || p.Secret == "" || p.Created.IsZero() {
		return nil, fmt.Errorf("domain.New: id, account, secret and created are required")
	}
	if p.URL == "" {
		return nil, missing("url")
	}
	url, err := parseURL(p.URL, p.CheckHost)
	if err != nil {
		return nil, err
	}
	if p.EnabledEvents == nil {
		return nil, missing("enabled_events")
	}
	enabled, err := normalizeEvents(p.EnabledEvents)
	if err != nil {
		return nil, err
	}
	var description string
	if p.Description != nil {
		if err := validateDescription(*p.Description); err != nil {
			return nil, err
		}
		description = *p.Description
	}
	version := events.APIVersion
	if p.APIVersion != nil {
		if err := validateAPIVersion(*p.APIVersion); err != nil {
			return nil, err
		}
		version = *p.APIVersion
	}
	metadata, err := mergeMetadata(nil, p.Metadata)
	if err != nil {
		return nil, err
	}
	e := &Endpoint{
		id:            p.ID,
		account:       p.Account,
		livemode:      p.Livemode,
		url:           url,
		enabledEvents: enabled,
		status:        StatusEnabled,
		secret:        p.Secret,
		apiVersion:    version,
		description:   description,
		metadata:      metadata,
		// The API shows Unix seconds; keeping only those makes a stored endpoint read back
		// equal to the one created.
		created: p.Created.Truncate(time.Second).UTC(),
	}
	e.Raise(eventtype.WebhookEndpointCreated)
	return e, nil
}

// Changes is an update request; nil fields are left as they are.
type Changes struct {
	URL *string
	// CheckHost, when set, guards the new URL's host as NewParams.CheckHost does.
	CheckHost     func(host string) error
	EnabledEvents []string // nil: unchanged; empty: refused
	Status        *string
	Description   *string // "" removes the description
	// Metadata is merged into the endpoint's: a key set to "" is removed, other keys are
	// added or replaced, keys not named are kept.
	Metadata map[string]string
}

// Validate checks the changes on their own, before the endpoint is read, so bad input is
// refused the same way whether or not the endpoint exists. Update checks them again, with the
// rules that depend on the endpoint (the merged metadata size).
func (c Changes) Validate() error {
	_, err := c.validate()
	return err
}

// validate is Validate that also returns the new URL in its normal form ("" when unchanged).
func (c Changes) validate() (url string, err error) {
	if c.URL != nil {
		if *c.URL == "" {
			return "", invalid(CodeParameterInvalid, "url", "Invalid url: must not be empty.")
		}
		if url, err = parseURL(*c.URL, c.CheckHost); err != nil {
			return "", err
		}
	}
	if c.EnabledEvents != nil {
		if _, err := normalizeEvents(c.EnabledEvents); err != nil {
			return "", err
		}
	}
	if c.Status != nil {
		if _, err := ParseStatus(*c.Status); err != nil {
			return "", err
		}
	}
	if c.Description != nil {
		if err := validateDescription(*c.Description); err != nil {
			return "", err
		}
	}
	return url, validateMetadata(c.Metadata)
}

// Update applies changes after validating all of them: either every change is applied or,
// with an error, none is. A change of anything the endpoint shows raises
// webhook_endpoint.updated, with the previous values of what changed; changes that leave it
// as it was raise nothing.
func (e *Endpoint) Update(c Changes) error {
	url, err := c.validate()
	if err != nil {
		return err
	}
	var events []string
	if c.EnabledEvents != nil {
		events, _ = normalizeEvents(c.EnabledEvents) // validated above
	}
	metadata, err := mergeMetadata(e.metadata, c.Metadata)
	if err != nil {
		return err
	}
	was := e.shown()
	if c.URL != nil {
		e.url = url
	}
	if events != nil {
		e.enabledEvents = events
	}
	if c.Description != nil {
		e.description = *c.Description
	}
	e.metadata = metadata
	if c.Status != nil {
		s, _ := ParseStatus(*c.Status) // validated above
		if s == StatusEnabled {
			e.Enable()
		} else {
			e.Disable()
		}
	}
	if !e.shown().equal(was) {
		e.RaiseUpdate(eventtype.WebhookEndpointUpdated)
	}
	return nil
}

// shown is what the API shows of an endpoint that Update can change.
type shown struct {
	url, description string
	enabledEvents    []string
	status           Status
	metadata         map[string]string
}

func (e *Endpoint) shown() shown {
	return shown{url: e.url, description: e.description, enabledEvents: e.enabledEvents, status: e.status, metadata: e.metadata}
}

func (s shown) equal(o shown) bool {
	return s.url == o.url && s.description == o.description && slices.Equal(s.enabledEvents, o.enabledEvents) &&
		s.status == o.status && maps.Equal(s.metadata, o.metadata)
}

// Enable resumes deliveries. Enabling an enabled endpoint is allowed and changes nothing.
// Enabling a disabled one restarts the auto-disable clock, so an endpoint disabled for failing
// gets a full period to recover.
func (e *Endpoint) Enable() {
	if e.status != StatusEnabled {
		e.failingSince = time.Time{}
	}
	e.status = StatusEnabled
}

// Disable stops deliveries; events keep being recorded. Disabling a disabled endpoint is
// allowed and changes nothing.
func (e *Endpoint) Disable() { e.status = StatusDisabled }

// RotateSecret makes secret the signing secret. The previous one keeps signing deliveries,
// next to the new one, for keepOld (none when keepOld is 0), so receivers can switch without
// missing a delivery. Only the secret being replaced is kept: one still kept from an earlier
// rotation stops signing now.
func (e *Endpoint) RotateSecret(secret string, now time.Time, keepOld time.Duration) {
	e.previousSecret, e.previousSecretExpires = "", time.Time{}
	if keepOld > 0 {
		e.previousSecret, e.previousSecretExpires = e.secret, now.Add(keepOld).UTC()
	}
	e.secret = secret
}

// SigningSecrets returns the secrets that sign a delivery made at now: the current one first,
// then the previous one while it has not expired.
func (e *Endpoint) SigningSecrets(now time.Time) []string {
	if e.previousSecret != "" && now.Before(e.previousSecretExpires) {
		return []string{e.secret, e.previousSecret}
	}
	return []string{e.secret}
}

// DeliverySucceeded clears the failing streak. It reports whether that changed anything.
func (e *Endpoint) DeliverySucceeded() bool {
	if e.failingSince.IsZero() {
		return false
	}
	e.failingSince = time.Time{}
	return true
}

// DeliveryFailed notes a failed attempt at now. The first failure after a success starts the
// failing streak; when every delivery has failed for disableAfter, an enabled endpoint is
// disabled, raising webhook_endpoint.disabled. It reports whether anything changed and
// whether the endpoint was disabled.
func (e *Endpoint) DeliveryFailed(now time.Time, disableAfter time.Duration) (changed, disabled bool) {
	if e.failingSince.IsZero() {
		e.failingSince = now.UTC()
		return true, false
	}
	if e.status == StatusEnabled && now.Sub(e.failingSince) >= disableAfter {
		e.disableForHealth()
		return true, true
	}
	return false, false
}

// DeliveryGone notes that the receiver answered 410 Gone: an enabled endpoint is disabled,
// raising webhook_endpoint.disabled. It reports whether the endpoint was disabled.
func (e *Endpoint) DeliveryGone() bool {
	if e.status != StatusEnabled {
		return false
	}
	e.disableForHealth()
	return true
}

// disableForHealth disables the endpoint for what its deliveries met (not at a client's
// request, which is an update): webhook_endpoint.disabled, with the previous status.
func (e *Endpoint) disableForHealth() {
	e.status = StatusDisabled
	e.RaiseUpdate(eventtype.WebhookEndpointDisabled)
}

// Delete marks the endpoint deleted, raising webhook_endpoint.deleted: it receives nothing
// more and the API no longer shows it.
func (e *Endpoint) Delete() {
	e.deleted = true
	e.Raise(eventtype.WebhookEndpointDeleted)
}

// Deleted reports whether the endpoint was deleted.
func (e *Endpoint) Deleted() bool { return e.deleted }

// ParseStatus returns the Status named s.
func ParseStatus(s string) (Status, error) {
	switch Status(s) {
	case StatusEnabled, StatusDisabled:
		return Status(s), nil
	}
	return "", invalid(CodeParameterInvalid, "status", "Invalid status: must be 'enabled' or 'disabled', got '%s'.", s)
}

// Accessors. Slices and maps are copies, so callers cannot change the endpoint behind its back.

func (e *Endpoint) ID() string                  { return e.id }
func (e *Endpoint) Account() string             { return e.account }
func (e *Endpoint) Livemode() bool              { return e.livemode }
func (e *Endpoint) URL() string                 { return e.url }
func (e *Endpoint) EnabledEvents() []string     { return slices.Clone(e.enabledEvents) }
func (e *Endpoint) Status() Status              { return e.status }
func (e *Endpoint) Secret() string              { return e.secret }
func (e *Endpoint) APIVersion() string          { return e.apiVersion }
func (e *Endpoint) Description() string         { return e.description }
func (e *Endpoint) Metadata() map[string]string { return maps.Clone(e.metadata) }
func (e *Endpoint) Created() time.Time          { return e.created }
func (e *Endpoint) FailingSince() time.Time     { return e.failingSince }

// OwnedBy reports whether the endpoint belongs to account in the given mode.
func (e *Endpoint) OwnedBy(account string, livemode bool) bool {
	return e.account == account && e.livemode == livemode
}

// State is an endpoint's stored form, for repositories.
type State struct {
	ID            string
	Account       string
	Livemode      bool
	URL           string
	EnabledEvents []string
	Status        Status
	Secret        string
	APIVersion    string
	Description   string
	Metadata      map[string]string
	Created       time.Time

	PreviousSecret        string
	PreviousSecretExpires time.Time
	FailingSince          time.Time
	Deleted               bool
}

// Rehydrate rebuilds an endpoint from storage. It is not a constructor: it trusts the state,
// which New or Update validated when it was written, so a rule tightened later does not make
// stored endpoints unreadable.
func Rehydrate(s State) *Endpoint {
	md := maps.Clone(s.Metadata)
	if md == nil {
		md = map[string]string{}
	}
	return &Endpoint{
		id:            s.ID,
		account:       s.Account,
		livemode:      s.Livemode,
		url:           s.URL,
		enabledEvents: slices.Clone(s.EnabledEvents),
		status:        s.Status,
		secret:        s.Secret,
		apiVersion:    s.APIVersion,
		description:   s.Description,
		metadata:      md,
		created:       s.Created.UTC(),

		previousSecret:        s.PreviousSecret,
		previousSecretExpires: s.PreviousSecretExpires.UTC(),
		failingSince:          s.FailingSince.UTC(),
		deleted:               s.Deleted,
	}
}

// State returns the endpoint's stored form.
func (e *Endpoint) State() State {
	return State{
		ID:            e.id,
		Account:       e.account,
		Livemode:      e.livemode,
		URL:           e.url,
		EnabledEvents: slices.Clone(e.enabledEvents),
		Status:        e.status,
		Secret:        e.secret,
		APIVersion:    e.apiVersion,
		Description:   e.description,
		Metadata:      maps.Clone(e.metadata),
		Created:       e.created,

		PreviousSecret:        e.previousSecret,
		PreviousSecretExpires: e.previousSecretExpires,
		FailingSince:          e.failingSince,
		Deleted:               e.deleted,
	}
}

// parseURL checks an endpoint URL with the API's one URL parser, then with checkHost if set,
// and returns its normal form, which is what is stored.
func parseURL(raw string, checkHost func(host string) error) (string, error) {
	u, err := validate.ParseHTTPSURL("url", raw, MaxURLLen)
	if err != nil {
		return "", err
	}
	if checkHost != nil {
		if err := checkHost(u.Hostname()); err != nil {
			return "", err
		}
	}
	return u.String(), nil
}

// normalizeEvents checks every type and drops repeats, keeping the first occurrence's order.
func normalizeEvents(in []string) ([]string, error) {
	if len(in) == 0 {
		return nil, invalid(CodeParameterInvalid, "enabled_events",
			"Invalid enabled_events: subscribe to at least one event type, or '*' for all.")
	}
	out := make([]string, 0, len(in))
	for i, t := range in {
		if t != eventtype.Wildcard && !eventtype.Known(t) {
			return nil, invalid(CodeParameterInvalid, fmt.Sprintf("enabled_events[%d]", i),
				"Invalid enabled_events[%d]: '%s' is not a known event type.", i, t)
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// validateDescription: a description is multi-line free text; "" removes it on update.
func validateDescription(d string) error {
	return validate.Text("description", d, MaxDescriptionLen, true)
}

var datePattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

func validateAPIVersion(v string) error {
	if !datePattern.MatchString(v) {
		return invalid(CodeParameterInvalid, "api_version", "Invalid api_version: expected a date like %s, got '%s'.", events.APIVersion, v)
	}
	if _, err := time.Parse(time.DateOnly, v); err != nil {
		return invalid(CodeParameterInvalid, "api_version", "Invalid api_version: '%s' is not a calendar date.", v)
	}
	if !events.SupportedAPIVersion(v) {
		return invalid(CodeParameterInvalid, "api_version", "Invalid api_version: '%s' is not a supported version (supported: %s).",
			v, strings.Join(events.APIVersions(), ", "))
	}
	return nil
}

// validateMetadata checks every entry of a create's metadata or an update's changes (the
// shared rules of libs/validate), in key order so the error reported does not depend on map
// iteration order. The key count is checked on the merged result.
func validateMetadata(m map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if err := validate.MetadataEntry("metadata", k, m[k]); err != nil {
			return err
		}
	}
	return nil
}

// mergeMetadata returns base with changes applied: "" removes a key, anything else sets it.
// It never modifies base.
func mergeMetadata(base, changes map[string]string) (map[string]string, error) {
	if err := validateMetadata(changes); err != nil {
		return nil, err
	}
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range changes {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	if err := validate.MetadataKeyCount("metadata", len(out)); err != nil {
		return nil, err
	}
	return out, nil
}
