package web

import (
	"fmt"
	"net/url"
)

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

// AdminURL is the admin page: members, the organization's settings and its
// admin password.
func AdminURL(base string) string { return base + "/admin" }

// MemberAdminURL is the admin page of member userID, where an admin resets
// their password or changes their role.
func MemberAdminURL(base, userID string) string { return base + memberPath(userID) }

// TokensURL is the page where a person makes personal tokens for their
// agents.
func TokensURL(base string) string { return base + "/tokens" }

// AuditExportURL is the download of the org's audit log in format (jsonl
// or csv) with filters (user_id, tool, outcome, since, until), which an
// admin opens signed in.
func AuditExportURL(base, format string, filters map[string]string) string {
	q := url.Values{"format": {format}}
	for k, v := range filters {
		if v != "" {
			q.Set(k, v)
		}
	}
	return base + "/admin/audit/export?" + q.Encode()
}
