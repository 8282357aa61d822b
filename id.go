package ctalk

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"time"
)

// MaxIDLen is the longest organization or user id.
const MaxIDLen = 64

// tokenPrefix starts every ctalk token (auth.TokenPrefix); no id may start
// with it, so that a token passed by mistake as an id is refused, and never
// echoed or recorded as one.
const tokenPrefix = "ctalk_"

// ParseID normalizes an organization or user id: it trims surrounding space
// and lower-cases the rest, then requires 1 to 64 of a-z, 0-9, '-' and '_',
// not starting with "ctalk_" (the prefix of tokens). field names the
// argument in the error message, which never repeats a value that breaks
// the rule: it may be a password or a token given in the wrong argument.
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
			return "", Errorf(EInvalid, "%s has the character %q; use only a-z, 0-9, '-' or '_' (1 to %d characters)", field, r, MaxIDLen)
		}
	}
	if strings.HasPrefix(id, tokenPrefix) {
		return "", Errorf(EInvalid, "%s starts with %q, as ctalk tokens do, and no id does; send a token only in the Authorization header or as auth_token", field, tokenPrefix)
	}
	return id, nil
}

// IsID reports whether s is an organization or user id exactly as ParseID
// returns one, so that it may be recorded or quoted without revealing
// anything else a caller mistyped into an id argument.
func IsID(s string) bool {
	id, err := ParseID("id", s)
	return err == nil && id == s
}

// SortedID returns prefix and 24 hex digits: 8 bytes of the wall clock's
// time in nanoseconds, then 4 random bytes. Such ids sort by when they were
// made, so that a new row's key lands on the last page of its table's key
// index, which the last new row wrote too, rather than on a page of its
// own: on SQLite every page a transaction changes is written to the log
// again at its commit. Two ids made in one nanosecond differ unless their
// 4 random bytes match. They are not secrets: they tell when they were
// made, and what they name is found only within its org.
func SortedID(prefix string) string {
	var b [12]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixNano()))
	rand.Read(b[8:])
	return prefix + hex.EncodeToString(b[:])
}
