package ctalk

import (
	"strings"
	"testing"
)

// TestSortedIDsSortByTime: ids made one after another sort in that order
// (their key index is appended to), are distinct, and have the shape of
// the ids they replaced: the prefix and 24 hex digits.
func TestSortedIDsSortByTime(t *testing.T) {
	const n = 10000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = SortedID("q_")
	}
	seen := map[string]bool{}
	for i, id := range ids {
		if len(id) != len("q_")+24 || !strings.HasPrefix(id, "q_") || strings.Trim(id[2:], "0123456789abcdef") != "" {
			t.Fatalf("id %q: want q_ and 24 hex digits", id)
		}
		if seen[id] {
			t.Fatalf("id %q made twice", id)
		}
		seen[id] = true
		if i > 0 && id[:18] < ids[i-1][:18] {
			t.Fatalf("id %d (%s) sorts before the one made before it (%s)", i, id, ids[i-1])
		}
	}
}
