package ctalk

import (
	"strings"
	"unicode/utf8"
)

// Text trims s and checks that it is valid UTF-8 without NUL characters (which
// Postgres cannot store) and at most max characters long. A required text
// may not be empty. field names the argument in the error message.
//
// Returns EInvalid.
func Text(field, s string, max int, required bool) (string, error) {
	s = strings.TrimSpace(s)
	if required && s == "" {
		return "", Errorf(EInvalid, "%s is required and may not be empty", field)
	}
	if !utf8.ValidString(s) {
		return "", Errorf(EInvalid, "%s is not valid UTF-8 text", field)
	}
	if strings.ContainsRune(s, 0) {
		return "", Errorf(EInvalid, "%s contains a NUL character; remove it", field)
	}
	if n := utf8.RuneCountInString(s); n > max {
		return "", Errorf(EInvalid, "%s is %d characters; at most %d are allowed, so shorten it", field, n, max)
	}
	return s, nil
}

// Shorten cuts s to at most n bytes, on a character boundary, marking the
// cut with "...", for quoting caller input in error messages.
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
