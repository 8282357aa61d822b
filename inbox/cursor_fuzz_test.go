package inbox

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ctalk/ctalk"
)

// FuzzCursor checks that decodeCursor never panics, refuses what it cannot
// use with EInvalid, and that cursors round-trip: every cursor encodeCursor
// makes decodes to the same position, and every accepted cursor re-encodes
// to one that decodes to it again.
func FuzzCursor(f *testing.F) {
	issued := encodeCursor(pageCursor{At: time.Date(2026, 1, 31, 9, 0, 0, 123456789, time.UTC), ID: "q_01"})
	raw := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, s := range []string{
		"", "   ", issued, " " + issued + "\n", issued + "=", issued[:len(issued)-1], strings.ToUpper(issued),
		"not base64!", "AAAA", raw("null"), raw("{}"), raw("[]"), raw(`"x"`), raw(`{"t":null,"i":null}`),
		raw(`{"t":"0001-01-01T00:00:00Z","i":"x"}`),
		raw(`{"t":"0001-01-01T01:00:00+01:00","i":"x"}`),
		raw(`{"t":"2026-01-31T10:00:00+01:00","i":"\ud800"}`),
		raw(`{"t":"2026-01-31T10:00:00Z","i":1}`),
		raw(`{"t":"2026-01-31T10:00:00Z","i":"x","extra":[1,2,{}]}`),
		raw(`{"t":"2026-13-31T10:00:00Z","i":"x"}`),
		raw(`{"t":1e400,"i":"x"}`), raw(strings.Repeat("[", 20000)),
		base64.StdEncoding.EncodeToString([]byte(`{"t":"2026-01-31T10:00:00Z","i":"x"}`)),
	} {
		f.Add(s, int64(1769850000), int64(0), "q_01")
	}
	f.Add("", int64(-62135596800), int64(1), "")          // the first instant after the zero time
	f.Add("", int64(253402300799), int64(999999999), "x") // the last instant of year 9999
	f.Add("", int64(0), int64(0), "\u00e9\U0001f600\"\\<>&")
	f.Fuzz(func(t *testing.T, s string, sec, nsec int64, id string) {
		c, err := decodeCursor(s)
		if err != nil {
			if code := ctalk.ErrorCode(err); code != ctalk.EInvalid || ctalk.ErrorMessage(err) == "" {
				t.Fatalf("decodeCursor(%q): error %v (code %q), want %q with a message", s, err, code, ctalk.EInvalid)
			}
		} else {
			if c.At.IsZero() || c.At.Location() != time.UTC {
				t.Fatalf("decodeCursor(%q).At = %v, want a non-zero UTC time", s, c.At)
			}
			if strings.ContainsRune(c.ID, 0) {
				t.Fatalf("decodeCursor(%q).ID = %q: Postgres cannot compare a NUL", s, c.ID)
			}
			again, err := decodeCursor(encodeCursor(c))
			if err != nil || !again.At.Equal(c.At) || again.ID != c.ID {
				t.Fatalf("decodeCursor(%q) = %+v, but its re-encoding decodes to %+v, %v", s, c, again, err)
			}
		}

		// Questions are stamped with times from year 1 to 9999 and ids that
		// are text without NUL, so only those need to round-trip.
		at := time.Unix(sec, nsec).UTC()
		if at.IsZero() || at.Year() < 1 || at.Year() > 9999 || !utf8.ValidString(id) || strings.ContainsRune(id, 0) {
			return
		}
		want := pageCursor{At: at, ID: id}
		got, err := decodeCursor(encodeCursor(want))
		if err != nil || !got.At.Equal(want.At) || got.ID != want.ID {
			t.Fatalf("decodeCursor(encodeCursor(%+v)) = %+v, %v; want it back", want, got, err)
		}
	})
}
