package ctalk_test

import (
	"testing"

	"github.com/ctalk/ctalk"
)

func TestVisible(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		n              int
	}{
		{"plain text is unchanged", "Is prod frozen?\n\tYes. Ünïcödé, 日本語, emoji ❤️ 👍", "Is prod frozen?\n\tYes. Ünïcödé, 日本語, emoji ❤️ 👍", 0},
		{"CRLF line ends are kept", "a\r\nb", "a\r\nb", 0},
		{"right-to-left override", "pay \u202Eevil\u202C now", "pay ⟦U+202E⟧evil⟦U+202C⟧ now", 2},
		{"bidi isolates and marks", "\u2066x\u2069\u200F\u061C", "⟦U+2066⟧x⟦U+2069⟧⟦U+200F⟧⟦U+061C⟧", 4},
		{"zero-width characters", "ap\u200Bpro\u200Cve\u200D\u2060\uFEFF", "ap⟦U+200B⟧pro⟦U+200C⟧ve⟦U+200D⟧⟦U+2060⟧⟦U+FEFF⟧", 5},
		{"soft hyphen", "de\u00ADny", "de⟦U+00AD⟧ny", 1},
		{"controls", "a\x1b[2Jb\x07\x7f\u0085", "a⟦U+001B⟧[2Jb⟦U+0007⟧⟦U+007F⟧⟦U+0085⟧", 4},
		{"lone carriage return", "yes\rno", "yes⟦U+000D⟧no", 1},
		{"line and paragraph separators", "a\u2028b\u2029", "a⟦U+2028⟧b⟦U+2029⟧", 2},
		{"tag characters hide text", "ok\U000E0069\U000E0067", "ok⟦U+E0069⟧⟦U+E0067⟧", 2},
		{"fillers and selectors", "\u3164\u115F\u034F\uFE01\U000E0100x", "⟦U+3164⟧⟦U+115F⟧⟦U+034F⟧⟦U+FE01⟧⟦U+E0100⟧x", 5},
		{"private use and unassigned", "\uE000\U0010FFFF", "⟦U+E000⟧⟦U+10FFFF⟧", 2},
		{"a literal marker is marked", "⟦U+202E⟧", "⟦U+27E6⟧U+202E⟧", 1},
		{"bytes that are not UTF-8", "a\xffb", "a⟦byte FF⟧b", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n := ctalk.Visible(tc.in)
			if got != tc.want || n != tc.n {
				t.Fatalf("Visible(%q) = %q, %d; want %q, %d", tc.in, got, n, tc.want, tc.n)
			}
		})
	}
}
