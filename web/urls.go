package web

import "fmt"

// The web app's addresses that others hand to people: agents pass them on,
// and old approval links lead to them. Each is under base, the public URL of
// the server (empty for a path on the same site).

// DraftURL is the page where the recipient of question msgID decides on
// its draft version: the question's page, at that draft.
func DraftURL(base, msgID string, version int) string {
	return fmt.Sprintf("%s/inbox/%s#v%d", base, msgID, version)
}

// HeldPostURL is the page where the author of held channel post id decides
// on it.
func HeldPostURL(base, id string) string { return base + "/inbox/posts#" + id }
