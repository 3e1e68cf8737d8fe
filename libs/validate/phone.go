package validate

// E.164 bounds on the digits after '+' (country code and subscriber number together).
//
// E.164 caps a number at 15 digits and sets no minimum. The shortest numbers in service are
// 7 digits: a 3-digit country code with a 4-digit subscriber number (Niue, +683 xxxx; Saint
// Helena, +290 xxxx). Anything shorter cannot be a dialable number, so it is refused rather
// than stored.
const (
	minPhoneDigits = 7
	maxPhoneDigits = 15
)

// Phone checks that s is a phone number in E.164 form: '+', then 7 to 15 digits of which the
// first (the start of the country code) is not 0, with no spaces or separators. The number
// is not checked against numbering plans.
func Phone(param, s string) error {
	if s == "" {
		return empty(param)
	}
	if !isE164(s) {
		return invalid(param, "Invalid %s: expected an E.164 phone number, '+' then country code and number as 7 to 15 digits without spaces or separators (e.g. '+4915112345678'), got '%s'.", param, shown(s))
	}
	return nil
}

func isE164(s string) bool {
	digits := len(s) - 1
	if s[0] != '+' || digits < minPhoneDigits || digits > maxPhoneDigits || s[1] == '0' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
