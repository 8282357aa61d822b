package ctalk_test

import (
	"strings"
	"testing"

	"github.com/ctalk/ctalk"
)

// FuzzParseID checks that ParseID never panics, and that any id it accepts is
// the trimmed, lower-cased input, follows the id rule and parses to itself.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{
		"", " ", "acme", "Acme-Corp_1", "  padded  ", "\tTab\n", "a", "-", "_",
		strings.Repeat("a", ctalk.MaxIDLen), strings.Repeat("a", ctalk.MaxIDLen+1),
		" " + strings.Repeat("B", ctalk.MaxIDLen) + " ",
		"has space", "dot.dot", "slash/", "émile", "\u212a", "\u0130stanbul", "ſ",
		"\xff\xfe", "a\x00b", "\u00a0nbsp\u00a0", "\u2028x", "ǅ", "DŽ", "ﬀ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ctalk.ParseID("org_id", s)
		if err != nil {
			if code := ctalk.ErrorCode(err); code != ctalk.EInvalid {
				t.Fatalf("ParseID(%q): error code %q, want %q", s, code, ctalk.EInvalid)
			}
			if id != "" {
				t.Fatalf("ParseID(%q) = %q with an error, want \"\"", s, id)
			}
			return
		}
		if len(id) < 1 || len(id) > ctalk.MaxIDLen {
			t.Fatalf("ParseID(%q) = %q: %d bytes, want 1 to %d", s, id, len(id), ctalk.MaxIDLen)
		}
		for i := 0; i < len(id); i++ {
			c := id[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				t.Fatalf("ParseID(%q) = %q: byte %q is outside [a-z0-9_-]", s, id, c)
			}
		}
		if want := strings.ToLower(strings.TrimSpace(s)); id != want {
			t.Fatalf("ParseID(%q) = %q, want lower(trim(input)) = %q", s, id, want)
		}
		again, err := ctalk.ParseID("org_id", id)
		if err != nil || again != id {
			t.Fatalf("ParseID(%q) = %q, %v; want it unchanged", id, again, err)
		}
	})
}
