package ctalk

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text trims s and checks that it is valid UTF-8 without NUL characters (which
// Postgres cannot store) and at most max characters long. A required text
// may not be empty. field names the argument in the error message.
//
// Returns EInvalid.
func Text(field, s string, max int, required bool) (string, error) {
	s = strings.TrimSpace(s)
	if required && s == "" {
		return "", Errorf(EInvalid, "%s is required and may not be empty", field)
	}
	if !utf8.ValidString(s) {
		return "", Errorf(EInvalid, "%s is not valid UTF-8 text", field)
	}
	if strings.ContainsRune(s, 0) {
		return "", Errorf(EInvalid, "%s contains a NUL character; remove it", field)
	}
	if n := utf8.RuneCountInString(s); n > max {
		return "", Errorf(EInvalid, "%s is %d characters; at most %d are allowed, so shorten it", field, n, max)
	}
	return s, nil
}

// Shorten cuts s to at most n bytes, on a character boundary, marking the
// cut with "...", for quoting caller input in error messages.
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// Markers around the code of a character that Visible makes visible.
const (
	markOpen  = '⟦'
	markClose = '⟧'
)

// Visible returns s as a person must read it to approve it: every character
// that cannot be seen or that changes how the text around it reads is
// replaced by a visible marker naming it, such as ⟦U+202E⟧ for a
// right-to-left override (⟦byte FF⟧ for a byte that is not UTF-8), and n
// counts them. Marked are control and format
// characters (bidirectional controls, zero-width spaces and joiners, the
// byte order mark, tag characters), line and paragraph separators,
// unassigned and private-use code points, invisible fillers and variation
// selectors, and bytes that are not UTF-8; line feeds, tabs and a carriage
// return before a line feed are kept. A literal ⟦ is marked too, so that
// every ⟦ in the result opens a marker.
//
// It is for display only: what is stored and sent stays the exact text.
func Visible(s string) (shown string, n int) {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		badByte := r == utf8.RuneError && size == 1
		hidden := badByte || invisible(r) || r == markOpen || (r == '\r' && !strings.HasPrefix(s[i+size:], "\n"))
		if hidden {
			if n == 0 {
				b.Grow(len(s) + 16)
				b.WriteString(s[:i])
			}
			n++
			if badByte {
				fmt.Fprintf(&b, "%cbyte %02X%c", markOpen, s[i], markClose)
			} else {
				fmt.Fprintf(&b, "%cU+%04X%c", markOpen, r, markClose)
			}
		} else if n > 0 {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	if n == 0 {
		return s, 0
	}
	return b.String(), n
}

// invisible reports whether r cannot be seen, or changes the reading of the
// text around it, in a page that shows white space as it is.
func invisible(r rune) bool {
	switch {
	case r == '\n' || r == '\t' || r == '\r':
		return false // '\r' alone is handled by Visible
	case r == 0x034F, // combining grapheme joiner
		r == 0x115F || r == 0x1160 || r == 0x3164 || r == 0xFFA0, // Hangul fillers
		r >= 0x180B && r <= 0x180F,                               // Mongolian variation selectors and vowel separator
		r >= 0xFE00 && r <= 0xFE0D,                               // variation selectors, but not the emoji ones (FE0E, FE0F)
		r >= 0xE0100 && r <= 0xE01EF:                             // variation selectors supplement
		return true
	}
	// Graphic covers letters, marks, numbers, punctuation, symbols and
	// spaces; the rest is control, format, separator, surrogate, private
	// use and unassigned.
	return !unicode.IsGraphic(r)
}
