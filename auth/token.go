package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// TokenPrefix starts every ctalk token, so that secret scanners and people
// can recognize one.
const TokenPrefix = "ctalk_"

// tokenBytes is the entropy of a token: 256 bits.
const tokenBytes = 32

// tokenLen is the length of a well-formed token.
var tokenLen = len(TokenPrefix) + base64.RawURLEncoding.EncodedLen(tokenBytes)

// NewToken returns a fresh random token and the hash under which it is stored.
func NewToken() (raw, hash string) {
	var b [tokenBytes]byte
	rand.Read(b[:])
	raw = TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return raw, HashToken(raw)
}

// HashToken returns the hex SHA-256 of a token: the only form stored.
func HashToken(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}

// WellFormed reports whether raw has the shape of a ctalk token: one that
// NewToken could have made. It lets garbage be refused without a database
// round trip.
func WellFormed(raw string) bool {
	if len(raw) != tokenLen || !strings.HasPrefix(raw, TokenPrefix) {
		return false
	}
	// Strict refuses non-zero padding bits; the decoder still skips CR and
	// LF, which then leave fewer than tokenBytes bytes.
	b, err := base64.RawURLEncoding.Strict().DecodeString(raw[len(TokenPrefix):])
	return err == nil && len(b) == tokenBytes
}
