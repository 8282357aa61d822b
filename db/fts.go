package db

import (
	"strings"

	"github.com/ctalk/ctalk"
)

// FTSQuery writes a web-search style query in FTS5's syntax: each word and
// each "quoted phrase" becomes an FTS5 string, so that no character of the
// query is read as an operator; all must match, and -word excludes a word.
//
// Returns EInvalid when nothing is left to search for.
func FTSQuery(q string) (string, error) {
	// FTS5 reads its query as a C string, so a NUL would end it inside a
	// term; callers refuse NULs before this, and here they only separate.
	q = strings.ReplaceAll(q, "\x00", " ")
	var must, not []string
	for q = strings.TrimSpace(q); q != ""; q = strings.TrimSpace(q) {
		neg := false
		if q[0] == '-' {
			neg, q = true, q[1:]
		}
		var term string
		if strings.HasPrefix(q, `"`) {
			end := strings.IndexByte(q[1:], '"')
			if end < 0 {
				term, q = q[1:], ""
			} else {
				term, q = q[1:end+1], q[end+2:]
			}
		} else {
			end := strings.IndexAny(q, " \t\r\n")
			if end < 0 {
				end = len(q)
			}
			term, q = q[:end], q[end:]
		}
		if strings.IndexFunc(term, isWordRune) < 0 {
			continue
		}
		term = `"` + strings.ReplaceAll(term, `"`, `""`) + `"`
		if neg {
			not = append(not, term)
		} else {
			must = append(must, term)
		}
	}
	if len(must) == 0 {
		return "", ctalk.Errorf(ctalk.EInvalid, "query has no word to search for; give at least one word that must appear")
	}
	out := strings.Join(must, " AND ")
	for _, t := range not {
		out += " NOT " + t
	}
	return out, nil
}

func isWordRune(r rune) bool {
	return r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 127
}
