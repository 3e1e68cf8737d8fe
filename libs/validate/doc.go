// Package validate holds the checks of parameter formats the API shares across services:
// free text (Text: the one rule on control characters and invalid UTF-8 for every name,
// address line, reference and description), metadata (its key count and the length and
// characters of keys and values), ISO 4217 currency codes, ISO 3166-1 alpha-2 country codes,
// E.164 phone numbers, YYYY-MM-DD dates, email addresses and https:// URLs (ParseHTTPSURL,
// the one URL parser, which returns the URL to store). Every service calls these from its domain instead of
// writing its own, so the same input is accepted, canonicalised and refused with the same
// code and message whichever resource it is sent to.
//
// Each check takes the dotted name of the parameter it validates ("currency",
// "applicant.email", "requests[3].currency") and returns nil or a *domainerr.Error of kind
// Invalid naming that parameter, with a message for API users that starts "Invalid <param>:"
// and says what is expected and what was given. Checks that canonicalise (Currency,
// Country, Date) return the value to store. The package imports only the standard library
// and domainerr, so domain packages may use it.
//
// An empty string is refused as invalid ("must not be empty"), except by Text, whose fields
// decide for themselves whether empty is allowed; a caller that treats an absent parameter
// differently (domainerr.Missing, or "not given") decides so before calling.
package validate
