package ctalk

import (
	"net/mail"
	"strings"
)

// MaxEmailLen is the longest email address (RFC 5321's path limit).
const MaxEmailLen = 254

// ParseEmail normalizes an email address: it trims surrounding space and
// lower-cases it, and requires a bare address such as jane@example.com (no
// display name, no angle brackets). field names the argument in the error.
//
// Returns EInvalid when s is not such an address.
func ParseEmail(field, s string) (string, error) {
	addr := strings.ToLower(strings.TrimSpace(s))
	if addr == "" {
		return "", Errorf(EInvalid, "%s is required: an address such as jane@example.com", field)
	}
	if len(addr) > MaxEmailLen {
		return "", Errorf(EInvalid, "%s is %d characters long; an email address has at most %d", field, len(addr), MaxEmailLen)
	}
	a, err := mail.ParseAddress(addr)
	if err != nil || a.Address != addr || a.Name != "" || !strings.Contains(addr[strings.LastIndexByte(addr, '@')+1:], ".") {
		return "", Errorf(EInvalid, "%s is not an email address such as jane@example.com (the address alone, without a name or <>)", field)
	}
	return addr, nil
}
