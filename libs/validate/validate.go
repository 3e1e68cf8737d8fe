package validate

import (
	"unicode/utf8"

	"rentalplatform/libs/domainerr"
)

// maxShown bounds how much of a refused value a message repeats, so a megabyte of garbage
// does not come back in the error.
const maxShown = 64

func invalid(param, format string, args ...any) error {
	return domainerr.InvalidParam(param, format, args...)
}

func empty(param string) error {
	return domainerr.InvalidParam(param, "Invalid %s: must not be empty.", param)
}

// Shown returns s as an error message may repeat it: cut to 64 characters, with "..." when
// cut, so a megabyte of garbage does not come back in the error.
func Shown(s string) string { return shown(s) }

// shown returns s as a message repeats it: cut to maxShown characters, with "..." when cut.
func shown(s string) string {
	if utf8.RuneCountInString(s) <= maxShown {
		return s
	}
	n := 0
	for i := range s {
		if n == maxShown {
			return s[:i] + "..."
		}
		n++
	}
	return s
}
