package auth_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestClientLabel: the name a client gives itself is kept as one line of
// at most MaxLabelLen characters, whatever it sends.
func TestClientLabel(t *testing.T) {
	long := strings.Repeat("é", auth.MaxLabelLen+20)
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"claude-code 2.1.3", "claude-code 2.1.3"},
		{"  evil\nSubject: x\r\n\tagent\u0000 ", "evil Subject: x agent"},
		{"bad \xff byte", "bad byte"},
		{long, strings.Repeat("é", auth.MaxLabelLen-1) + "…"},
	} {
		got := auth.ClientLabel(auth.WithClientLabel(dbtest.Operator(), c.in))
		if got != c.want {
			t.Errorf("label of %q = %q, want %q", c.in, got, c.want)
		}
		if utf8.RuneCountInString(got) > auth.MaxLabelLen {
			t.Errorf("label of %q is %d characters", c.in, utf8.RuneCountInString(got))
		}
	}
	if got := auth.ClientLabel(dbtest.Operator()); got != "" {
		t.Errorf("no label = %q", got)
	}
}
