package orgs

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/ctalk/ctalk"
)

// DecodeOwnership returns a user's ownership from the text of its column,
// as a list that is never nil. A package that reads users.ownership in one
// of its own statements, to save a round trip, decodes it here, so that how
// orgs stores it stays orgs' concern.
func DecodeOwnership(stored string) []string {
	var own []string
	if err := json.Unmarshal([]byte(stored), &own); err != nil || own == nil {
		return []string{}
	}
	return own
}

// SplitOwnership accepts ownership as a comma-separated string.
func SplitOwnership(s string) []string {
	return strings.Split(s, ",")
}

// cleanOwnership trims the entries of an ownership list and drops the empty
// ones. A list of more than MaxOwnership entries, empty or not, is refused:
// it is junk, not a person's areas.
//
// Returns EInvalid.
func cleanOwnership(in []string) ([]string, error) {
	out := []string{}
	for i, o := range in {
		o = strings.TrimSpace(o)
		if n := utf8.RuneCountInString(o); n > MaxOwnershipLen {
			return nil, ctalk.Errorf(ctalk.EInvalid, "each ownership entry may be at most %d characters; entry %d has %d", MaxOwnershipLen, i+1, n)
		}
		if o != "" {
			out = append(out, o)
		}
	}
	switch {
	case len(out) > MaxOwnership:
		return nil, ctalk.Errorf(ctalk.EInvalid, "ownership has %d entries; at most %d are allowed, so list only the main areas", len(out), MaxOwnership)
	case len(in) > MaxOwnership:
		return nil, ctalk.Errorf(ctalk.EInvalid, "ownership has %d entries, %d of them empty; at most %d are allowed, empty or not, so drop the empty ones", len(in), len(in)-len(out), MaxOwnership)
	}
	return out, nil
}
