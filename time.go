package ctalk

import (
	"strings"
	"time"
)

// ParseTime parses an optional RFC 3339 time given as name: the zero time
// for an empty value.
//
// Returns EInvalid, naming the field and the form to use, for anything else.
func ParseTime(name, v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, Errorf(EInvalid, "%s is not an RFC 3339 time; use a form like 2026-01-31T09:00:00Z", name)
	}
	return t, nil
}
