package ctalk_test

import (
	"strings"
	"testing"

	"github.com/ctalk/ctalk"
)

// TestIDsAreNeverTokens checks that an id argument holding a token, or any
// value that is not an id, is refused without being repeated, and that IsID
// accepts exactly the ids ParseID returns.
func TestIDsAreNeverTokens(t *testing.T) {
	for _, in := range []string{"ctalk_B64xD7obveAxb2cWLgdrlBDVW_qy5RVOBW45zAntKTw", " CTALK_abc ", "correct horse battery", "Hunter22!"} {
		_, err := ctalk.ParseID("user_id", in)
		if ctalk.ErrorCode(err) != ctalk.EInvalid {
			t.Fatalf("ParseID(%q) = %v; want invalid", in, err)
		}
		if msg := ctalk.ErrorMessage(err); strings.Contains(strings.ToLower(msg), strings.ToLower(strings.TrimSpace(in))) {
			t.Fatalf("ParseID(%q): the error %q repeats the value", in, msg)
		}
		if ctalk.IsID(in) {
			t.Fatalf("IsID(%q) = true", in)
		}
	}
	for in, want := range map[string]bool{"bob": true, "a-b_9": true, "Bob": false, " bob": false, "": false, "ctalk-bot": true} {
		if got := ctalk.IsID(in); got != want {
			t.Errorf("IsID(%q) = %v, want %v", in, got, want)
		}
	}
}
