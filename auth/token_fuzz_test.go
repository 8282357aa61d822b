package auth_test

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/auth"
)

// tokenLen is the length of every token: the prefix and 256 bits in
// unpadded base64url.
var tokenLen = len(auth.TokenPrefix) + base64.RawURLEncoding.EncodedLen(32)

// FuzzToken checks that WellFormed never panics, accepts every fresh token
// and only strings NewToken could have made, and that HashToken is always 64
// hex characters.
func FuzzToken(f *testing.F) {
	fresh, _ := auth.NewToken()
	body := fresh[len(auth.TokenPrefix):]
	for _, s := range []string{
		"", "ctalk_", fresh, strings.ToUpper(fresh), " " + fresh, fresh + " ", fresh[:len(fresh)-1],
		fresh + "A", "CTALK_" + body, "ctalk-" + body, "xxxxx_" + body,
		auth.TokenPrefix + strings.Repeat("A", 43), auth.TokenPrefix + strings.Repeat("_", 43),
		auth.TokenPrefix + strings.Repeat("+", 43), auth.TokenPrefix + strings.Repeat("=", 43),
		auth.TokenPrefix + strings.Repeat("A", 42) + "B", // non-zero padding bits
		auth.TokenPrefix + strings.Repeat("A", 42) + "\n",
		auth.TokenPrefix + strings.Repeat("A", 41) + "\r\n",
		auth.TokenPrefix + strings.Repeat("é", 21) + "A", "\xff\xfe", strings.Repeat("ctalk_", 9),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if h := auth.HashToken(s); len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
			t.Fatalf("HashToken(%q) = %q, want 64 lower-case hex characters", s, h)
		}
		if !auth.WellFormed(s) {
			return
		}
		if !strings.HasPrefix(s, auth.TokenPrefix) || len(s) != tokenLen {
			t.Fatalf("WellFormed(%q): want the prefix %q and %d bytes", s, auth.TokenPrefix, tokenLen)
		}
		b, err := base64.RawURLEncoding.DecodeString(s[len(auth.TokenPrefix):])
		if err != nil || len(b) != 32 || auth.TokenPrefix+base64.RawURLEncoding.EncodeToString(b) != s {
			t.Fatalf("WellFormed(%q): not the canonical encoding of 32 bytes, so no NewToken makes it", s)
		}
	})
}

// TestNewTokenWellFormed checks that fresh tokens are well-formed, distinct
// and stored under the hash of the raw token.
func TestNewTokenWellFormed(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		raw, hash := auth.NewToken()
		if !auth.WellFormed(raw) {
			t.Fatalf("WellFormed(%q) = false for a fresh token", raw)
		}
		if seen[raw] {
			t.Fatalf("NewToken returned %q twice", raw)
		}
		seen[raw] = true
		if _, err := hex.DecodeString(hash); err != nil || len(hash) != 64 || hash != auth.HashToken(raw) {
			t.Fatalf("NewToken hash %q, want HashToken(raw) = %q", hash, auth.HashToken(raw))
		}
	}
}
