package validate

import "time"

// Date checks that s is a calendar date written exactly YYYY-MM-DD (ASCII digits, zero
// padded, no time or zone) and returns it as midnight UTC. Dates that do not exist, such as
// 2023-02-30, are refused.
func Date(param, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, empty(param)
	}
	if !isDateShape(s) {
		return time.Time{}, invalid(param, "Invalid %s: expected a date in YYYY-MM-DD form (e.g. '2024-01-31'), got '%s'.", param, shown(s))
	}
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, invalid(param, "Invalid %s: '%s' is not a calendar date.", param, s)
	}
	return d, nil
}

// isDateShape reports whether s is dddd-dd-dd in ASCII digits. time.Parse with DateOnly
// refuses other shapes too, but checking the shape first tells the caller which mistake was
// made: the wrong form, or a well-formed date that does not exist.
func isDateShape(s string) bool {
	if len(s) != len(time.DateOnly) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if i == 4 || i == 7 {
			if s[i] != '-' {
				return false
			}
		} else if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
