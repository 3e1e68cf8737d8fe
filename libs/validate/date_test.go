package validate

import (
	"regexp"
	"testing"
	"time"
)

var dateCases = []struct {
	in    string
	valid bool
}{
	{"2024-01-31", true},
	{"2024-02-29", true}, // leap year
	{"2000-02-29", true}, // divisible by 400
	{"1970-01-01", true},
	{"0001-01-01", true},
	{"9999-12-31", true},
	{"", false},
	{"2023-02-29", false}, // not a leap year
	{"1900-02-29", false}, // divisible by 100, not 400
	{"2023-02-30", false},
	{"2023-04-31", false},
	{"2023-13-01", false},
	{"2023-00-10", false},
	{"2023-01-00", false},
	{"2023-01-32", false},
	{"2023-1-5", false},
	{"23-01-05", false},
	{"2023/01/05", false},
	{"05.01.2023", false},
	{"20230105", false},
	{"2023-01-05T00:00:00Z", false},
	{"2023-01-05 ", false},
	{" 2023-01-05", false},
	{"+023-01-05", false},
	{"-023-01-05", false},
	{"２０２３-01-05", false}, // full-width digits
	{"2023-01-0５", false},
}

func TestDate(t *testing.T) {
	t.Parallel()
	for _, tc := range dateCases {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := Date("due_date", tc.in)
			if !tc.valid {
				wantErr(t, err, invalidCode, "due_date")
				if !got.IsZero() {
					t.Fatalf("refused but returned %v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Location() != time.UTC || got.Hour() != 0 || got.Minute() != 0 || got.Second() != 0 || got.Nanosecond() != 0 {
				t.Fatalf("Date(%q) = %v, want midnight UTC", tc.in, got)
			}
			if got.Format(time.DateOnly) != tc.in {
				t.Fatalf("Date(%q) = %v", tc.in, got)
			}
		})
	}
	if got, _ := Date("d", "2024-03-05"); !got.Equal(time.Date(2024, 3, 5, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("Date(2024-03-05) = %v", got)
	}
}

func TestDateMessages(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"05.01.2023": "Invalid date_of_birth: expected a date in YYYY-MM-DD form (e.g. '2024-01-31'), got '05.01.2023'.",
		"2023-02-30": "Invalid date_of_birth: '2023-02-30' is not a calendar date.",
		"":           "Invalid date_of_birth: must not be empty.",
	} {
		_, err := Date("date_of_birth", in)
		if got := err.Error(); got != "parameter_invalid (param date_of_birth): "+want {
			t.Errorf("Date(%q): %q", in, got)
		}
	}
}

var dateShape = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)

func FuzzDate(f *testing.F) {
	for _, tc := range dateCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Date("due_date", s)
		if err != nil {
			fuzzErr(t, err, "due_date")
			return
		}
		if !dateShape.MatchString(s) || got.Format(time.DateOnly) != s || got.Location() != time.UTC ||
			!got.Equal(got.Truncate(24*time.Hour)) {
			t.Fatalf("Date(%q) = %v", s, got)
		}
	})
}
