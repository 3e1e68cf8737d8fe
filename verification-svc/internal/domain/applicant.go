package domain

import (
	"time"

	"rentalplatform/libs/domainerr"
	"rentalplatform/libs/validate"
)

// Redacted replaces every personal field of a redacted session.
const Redacted = "[redacted]"

// Length limits of the applicant's text fields, in characters. The spec sets none; these fit
// any real name or address line and keep one session's document small.
const (
	MaxNameLen       = 100
	MaxLineLen       = 200
	MaxCityLen       = 100
	MaxStateLen      = 100
	MaxPostalCodeLen = 20
	MaxURLLen        = 2048
)

// earliestBirth bounds date_of_birth from below: an earlier date is a typo, not an applicant.
var earliestBirth = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)

// Applicant is the person a session verifies. Optional fields are "" when not given.
type Applicant struct {
	FirstName   string
	LastName    string
	Email       string
	DateOfBirth string // YYYY-MM-DD
	Phone       string // E.164
	Address     *Address
}

// Address is the applicant's postal address. Line2 and State are "" when not given.
type Address struct {
	Line1      string
	Line2      string
	City       string
	State      string
	PostalCode string
	Country    string // ISO 3166-1 alpha-2, upper case
}

// ApplicantParams is the applicant as a client sent it: nil fields were not sent.
type ApplicantParams struct {
	FirstName   *string
	LastName    *string
	Email       *string
	DateOfBirth *string
	Phone       *string
	Address     *AddressParams
}

// AddressParams is the address as a client sent it.
type AddressParams struct {
	Line1      *string
	Line2      *string
	City       *string
	State      *string
	PostalCode *string
	Country    *string
}

// newApplicant checks the applicant against today (the session's creation day, for the date of
// birth) and returns it; the first rule broken is reported naming its dotted parameter.
func newApplicant(p *ApplicantParams, today time.Time) (Applicant, error) {
	if p == nil {
		return Applicant{}, domainerr.Missing("applicant")
	}
	var a Applicant
	var err error
	if a.FirstName, err = text("applicant.first_name", p.FirstName, true, MaxNameLen); err != nil {
		return Applicant{}, err
	}
	if a.LastName, err = text("applicant.last_name", p.LastName, true, MaxNameLen); err != nil {
		return Applicant{}, err
	}
	if p.Email == nil {
		return Applicant{}, domainerr.Missing("applicant.email")
	}
	if err := validate.Email("applicant.email", *p.Email); err != nil {
		return Applicant{}, err
	}
	a.Email = *p.Email
	if p.DateOfBirth != nil {
		if err := dateOfBirth(*p.DateOfBirth, today); err != nil {
			return Applicant{}, err
		}
		a.DateOfBirth = *p.DateOfBirth
	}
	if p.Phone != nil {
		if err := validate.Phone("applicant.phone", *p.Phone); err != nil {
			return Applicant{}, err
		}
		a.Phone = *p.Phone
	}
	if p.Address != nil {
		addr, err := newAddress(p.Address)
		if err != nil {
			return Applicant{}, err
		}
		a.Address = &addr
	}
	return a, nil
}

func newAddress(p *AddressParams) (Address, error) {
	var a Address
	var err error
	for _, f := range []struct {
		param    string
		in       *string
		out      *string
		required bool
		max      int
	}{
		{"applicant.address.line1", p.Line1, &a.Line1, true, MaxLineLen},
		{"applicant.address.line2", p.Line2, &a.Line2, false, MaxLineLen},
		{"applicant.address.city", p.City, &a.City, true, MaxCityLen},
		{"applicant.address.state", p.State, &a.State, false, MaxStateLen},
		{"applicant.address.postal_code", p.PostalCode, &a.PostalCode, true, MaxPostalCodeLen},
	} {
		if *f.out, err = text(f.param, f.in, f.required, f.max); err != nil {
			return Address{}, err
		}
	}
	// The spec names the country among the address's four fields; a tenant check cannot place
	// an address without it, so it is required.
	if p.Country == nil {
		return Address{}, domainerr.Missing("applicant.address.country")
	}
	if a.Country, err = validate.Country("applicant.address.country", *p.Country); err != nil {
		return Address{}, err
	}
	return a, nil
}

// text checks a single-line free-text field: required ones must be sent; a sent value must
// not be blank and must pass validate.Text with max characters. It is stored as sent.
func text(param string, v *string, required bool, max int) (string, error) {
	if v == nil {
		if required {
			return "", domainerr.Missing(param)
		}
		return "", nil
	}
	if validate.TrimSpace(*v, false) == "" {
		return "", invalid(param, "Invalid %s: must not be empty or blank.", param)
	}
	if err := validate.Text(param, *v, max, false); err != nil {
		return "", err
	}
	return *v, nil
}

// dateOfBirth checks a YYYY-MM-DD calendar date strictly before today and not before 1900.
func dateOfBirth(s string, today time.Time) error {
	const param = "applicant.date_of_birth"
	d, err := validate.Date(param, s)
	if err != nil {
		return err
	}
	day := time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, time.UTC)
	if !d.Before(day) {
		return invalid(param, "Invalid %s: must be a date in the past, got '%s'.", param, s)
	}
	if d.Before(earliestBirth) {
		return invalid(param, "Invalid %s: must be on or after %s, got '%s'.", param, earliestBirth.Format(time.DateOnly), s)
	}
	return nil
}

// redacted returns the applicant with every field that was given replaced by Redacted.
func (a Applicant) redacted() Applicant {
	r := func(s string) string {
		if s == "" {
			return ""
		}
		return Redacted
	}
	out := Applicant{FirstName: r(a.FirstName), LastName: r(a.LastName), Email: r(a.Email),
		DateOfBirth: r(a.DateOfBirth), Phone: r(a.Phone)}
	if a.Address != nil {
		out.Address = &Address{Line1: r(a.Address.Line1), Line2: r(a.Address.Line2), City: r(a.Address.City),
			State: r(a.Address.State), PostalCode: r(a.Address.PostalCode), Country: r(a.Address.Country)}
	}
	return out
}

func (a Applicant) clone() Applicant {
	if a.Address != nil {
		addr := *a.Address
		a.Address = &addr
	}
	return a
}
