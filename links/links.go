// Package links spells the addresses of the web app's pages that other parts
// of ctalk hand to people: in tool results, notifications, Slack messages,
// mails and approval links. Every layer may import it; it imports nothing of
// ctalk's. Each function takes base, the server's public URL without a
// trailing slash, or "" for a path on the same site.
package links

import (
	"fmt"
	"net/url"
)

// Question is the page of question msgID, where its recipient answers or
// decides and its asker follows it.
func Question(base, msgID string) string { return base + "/inbox/" + url.PathEscape(msgID) }

// Draft is the page where the recipient of question msgID decides on its
// draft version: the question's page, at that draft.
func Draft(base, msgID string, version int) string {
	return fmt.Sprintf("%s#v%d", Question(base, msgID), version)
}

// HeldPost is the page where the author of held channel post id decides on
// it.
func HeldPost(base, id string) string { return base + "/inbox/posts#" + url.PathEscape(id) }

// Channel is the page of the channel named name.
func Channel(base, name string) string { return base + "/channels/" + url.PathEscape(name) }

// Admin is the admin page: members, the organization's settings and its
// admin password.
func Admin(base string) string { return base + "/admin" }

// OrgExport is the admin page's section that downloads the organization's
// data: the download itself is a form posted with the page's CSRF token,
// so that no other site can start one, and a link can only lead to it.
func OrgExport(base string) string { return base + "/admin#org-data" }

// MemberAdmin is the admin page of member userID, where an admin resets
// their password or changes their role.
func MemberAdmin(base, userID string) string {
	return base + "/admin/members/" + url.PathEscape(userID)
}

// Tokens is the page where a person makes personal tokens for their agents.
func Tokens(base string) string { return base + "/tokens" }

// AuditExport is the download of the org's audit log in format (jsonl or
// csv) with filters (user_id, tool, outcome, since, until; empty ones left
// out), which an admin opens signed in.
func AuditExport(base, format string, filters map[string]string) string {
	q := url.Values{"format": {format}}
	for k, v := range filters {
		if v != "" {
			q.Set(k, v)
		}
	}
	return base + "/admin/audit/export?" + q.Encode()
}
