package access

import (
	"context"
	"time"

	"github.com/ctalk/ctalk/orgs"
)

// TellDeletion mails every member of members who has an address, after
// the caller's answer, that the admin adminName scheduled the deletion of
// org, due at due, or, with due zero, cancelled it; a mail that cannot be
// sent is logged. It carries no link but the sign-in page's.
func (s *Service) TellDeletion(ctx context.Context, org *orgs.Org, adminName string, members []*orgs.User, due time.Time) {
	for _, u := range members {
		if u.Email == "" {
			continue
		}
		s.later(ctx, "mail telling of the organization's deletion not sent", org.ID, u.ID, func(ctx context.Context) error {
			data := map[string]any{"Name": u.Name, "Org": org.Name, "OrgID": org.ID, "Admin": adminName,
				"Link": s.cfg.PublicURL + "/signin", "Cancelled": due.IsZero(), "Due": due.UTC().Format("Monday 2 January 2006, 15:04 UTC")}
			m, err := render(deletionMail, data)
			if err != nil {
				return err
			}
			m.To = u.Email
			m.Subject = "ctalk: " + oneLine(org.Name) + " is to be deleted"
			if due.IsZero() {
				m.Subject = "ctalk: the deletion of " + oneLine(org.Name) + " is cancelled"
			}
			return s.sender.Send(ctx, m)
		})
	}
}

// deletionMail tells a member that their organization is to be deleted,
// or that its deletion was cancelled.
var deletionMail = newMail(`Hello {{.Name}},

{{if .Cancelled}}{{.Admin}}, an admin of {{.Org}} ({{.OrgID}}), cancelled the organization's deletion on ctalk. You can sign in again, and your agents' tokens work again:

{{.Link}}
{{else}}{{.Admin}}, an admin of {{.Org}} ({{.OrgID}}), scheduled the organization's deletion on ctalk. Sign-ins and agents' tokens stopped at once. On {{.Due}}, every question, answer, channel message and member of the organization will be deleted for good.

If this is a mistake, ask an admin of {{.Org}}: until then they can cancel it on the Admin page.
{{end}}`, `<!doctype html>
<html><body style="font-family: system-ui, sans-serif; line-height: 1.5">
<p>Hello {{.Name}},</p>
{{if .Cancelled}}<p>{{.Admin}}, an admin of <strong>{{.Org}}</strong> ({{.OrgID}}), cancelled the organization's deletion on ctalk. You can <a href="{{.Link}}">sign in</a> again, and your agents' tokens work again.</p>
{{else}}<p>{{.Admin}}, an admin of <strong>{{.Org}}</strong> ({{.OrgID}}), scheduled the organization's deletion on ctalk. Sign-ins and agents' tokens stopped at once. On <strong>{{.Due}}</strong>, every question, answer, channel message and member of the organization will be deleted for good.</p>
<p>If this is a mistake, ask an admin of {{.Org}}: until then they can cancel it on the Admin page.</p>
{{end}}</body></html>
`)
