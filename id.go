package ctalk

import "strings"

// MaxIDLen is the longest organization or user id.
const MaxIDLen = 64

// ParseID normalizes an organization or user id: it trims surrounding space
// and lower-cases the rest, then requires 1 to 64 of a-z, 0-9, '-' and '_'.
// field names the argument in the error message.
//
// Returns EInvalid when the id breaks the rule.
func ParseID(field, s string) (string, error) {
	id := strings.ToLower(strings.TrimSpace(s))
	if id == "" {
		return "", Errorf(EInvalid, "%s is required: use 1 to %d characters of a-z, 0-9, '-' or '_'", field, MaxIDLen)
	}
	if len(id) > MaxIDLen {
		return "", Errorf(EInvalid, "%s is %d characters long; use 1 to %d characters of a-z, 0-9, '-' or '_'", field, len(id), MaxIDLen)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return "", Errorf(EInvalid, "%s %q has the character %q; use only a-z, 0-9, '-' or '_' (1 to %d characters)", field, Shorten(s, 80), r, MaxIDLen)
		}
	}
	return id, nil
}
