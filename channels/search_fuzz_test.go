package channels

import (
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// FuzzFTSQuery checks that whatever a caller searches for, SQLite's FTS5
// either runs the query ftsQuery writes or the caller is told the query is
// invalid: no input may reach FTS5 as a syntax error, an internal error.
func FuzzFTSQuery(f *testing.F) {
	for _, s := range []string{`retry`, `"a b" -c`, `a OR b`, `NEAR(a b)`, `a*`, `^a`, `col:a`, `"`, `-`, `""""`, `a AND`, `(a`, "\xff", `é ü`, `a"b"c`} {
		f.Add(s)
	}
	d := dbtest.Open(f, db.SQLite)
	f.Fuzz(func(t *testing.T, in string) {
		q, err := ftsQuery(in)
		if err != nil {
			if ctalk.ErrorCode(err) != ctalk.EInvalid {
				t.Fatalf("ftsQuery(%q): %v, want invalid", in, err)
			}
			return
		}
		var n int
		if err := d.QueryRow(dbtest.Operator(), `SELECT COUNT(*) FROM channel_messages_fts WHERE channel_messages_fts MATCH $1`, q).Scan(&n); err != nil {
			t.Fatalf("ftsQuery(%q) = %q, which FTS5 refuses: %v", in, q, err)
		}
	})
}
