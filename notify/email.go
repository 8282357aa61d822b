package notify

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ctalk/ctalk/mail"
)

// Mailer sends the email channel; mail.Sender is one.
type Mailer = mail.Sender

// emailMail is the mail of one notification (see mail.Template: every
// value is one line, but the quoted words).
var emailMail = mail.NewTemplate(`{{.Title}}

{{if .Text}}{{quote .Text}}

{{end}}{{if .Action}}{{.Action}}

{{end}}Open in ctalk: {{.URL}}

-- 
You get this because of your notification settings in ctalk.
{{if .Unsubscribe}}Stop these emails: {{.Unsubscribe}}
{{end}}`, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="color-scheme" content="light dark"><title>{{.Title}}</title></head>
<body style="font-family:system-ui,sans-serif;line-height:1.5;max-width:36rem">
<p><strong>{{.Title}}</strong></p>
{{if .Text}}<blockquote style="margin:0 0 1em;padding-left:1em;border-left:3px solid #888;white-space:pre-wrap">{{quote .Text}}</blockquote>{{end}}
{{if .Action}}<p>{{.Action}}</p>{{end}}
<p><a href="{{.URL}}" style="display:inline-block;padding:.5em 1em;border:1px solid #2563eb;border-radius:4px">Open in ctalk</a></p>
<p style="font-size:small;color:#666">You get this because of your notification settings in ctalk.{{if .Unsubscribe}} <a href="{{.Unsubscribe}}">Stop these emails</a>.{{end}}</p>
</body></html>`)

// mailItem is a message as a mail template shows it: its words quoted.
type mailItem struct {
	Title  string
	Text   mail.Quoted
	Action string
	URL    string
}

func itemOf(m message) mailItem {
	return mailItem{Title: m.Title, Text: mail.Quoted(m.Text), Action: m.Action, URL: m.URL}
}

// sendEmail sends one delivery by email (see emailMessage).
func (s *Service) sendEmail(ctx context.Context, d *delivery) error {
	if s.cfg.Mail == nil {
		return permanent("this server sends no email")
	}
	msg, err := s.emailMessage(ctx, d)
	if err != nil {
		return err
	}
	return mailFailure(s.cfg.Mail.Send(ctx, msg))
}

// emailMessage is the mail of one delivery: a stable Message-ID (the
// delivery's, the same on every retry, so a mail system drops repeats),
// threaded under the first mail of its question to the same person, with a
// one-click unsubscribe of its kind.
func (s *Service) emailMessage(ctx context.Context, d *delivery) (mail.Message, error) {
	e := d.Event
	m, err := s.compose(ctx, e)
	if err != nil {
		return mail.Message{}, temporary("compose: %v", err)
	}
	msg := mail.Message{
		To:        d.Target,
		Subject:   m.Title,
		MessageID: d.ID + "@" + s.host(),
		Headers:   s.listHeaders(),
	}
	if err := s.thread(ctx, e, &msg); err != nil {
		return msg, err
	}
	unsub := ""
	if e.Kind != KindWebhookDisabled {
		unsub = s.unsubscribe(e, &msg)
	}
	body, err := emailMail.Render(struct {
		mailItem
		Unsubscribe string
	}{itemOf(m), unsub})
	if err != nil {
		return msg, permanent("render: %v", err)
	}
	msg.Text, msg.HTML = body.Text, body.HTML
	return msg, nil
}

// listHeaders are the headers of every notification mail: what marks it
// as sent by a machine (RFC 3834's Auto-Submitted, and Exchange's
// X-Auto-Response-Suppress), so that no vacation reply answers it, and
// the list it comes from (RFC 2919), for a person's filters.
func (s *Service) listHeaders() map[string]string {
	return map[string]string{
		"Auto-Submitted":           "auto-generated",
		"X-Auto-Response-Suppress": "All",
		"List-Id":                  "ctalk notifications <notifications." + s.host() + ">",
	}
}

// thread makes msg, the mail of e, a reply to the first mail of e's
// subject to the same person, when it is not that mail itself.
func (s *Service) thread(ctx context.Context, e *storedEvent, msg *mail.Message) error {
	if e.Subject == "" {
		return nil
	}
	var root string
	err := s.db.QueryRow(ctx, threadRootSQL, e.OrgID, e.Subject, e.UserID).Scan(&root)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return temporary("read thread: %v", err)
	}
	if root != "" && root != e.ID {
		// The root's first delivery is its email (emails come first in
		// every expansion that has one).
		ref := root + ".1@" + s.host()
		msg.InReplyTo, msg.References = ref, []string{ref}
	}
	return nil
}

// unsubscribe gives msg the one-click unsubscribe headers (RFC 8058) of e's
// kind for e's person, and returns the link; empty, and no headers, before
// the key is loaded.
func (s *Service) unsubscribe(e *storedEvent, msg *mail.Message) string {
	if s.unsubKey == nil {
		return ""
	}
	unsub := s.UnsubscribeURL(e.OrgID, e.UserID, e.Kind)
	msg.Headers["List-Unsubscribe"] = "<" + unsub + ">"
	msg.Headers["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
	return unsub
}

// mailFailure is the delivery's error of a mail the Mailer could not send.
func mailFailure(err error) error {
	switch {
	case err == nil:
		return nil
	case mail.Temporary(err):
		return temporary("%v", err)
	}
	return permanent("%v", err)
}

// digestMail is the mail of several notifications to one address.
var digestMail = mail.NewTemplate(`{{len .Items}} notifications from ctalk

{{range .Items}}{{.Title}}
{{if .Text}}{{quote .Text}}
{{end}}{{if .Action}}{{.Action}}
{{end}}Open in ctalk: {{.URL}}

{{end}}-- 
Several notifications came within a few minutes, so they come as one mail.
Your notification settings: {{.Settings}}
`, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="color-scheme" content="light dark"><title>{{len .Items}} notifications from ctalk</title></head>
<body style="font-family:system-ui,sans-serif;line-height:1.5;max-width:36rem">
{{range .Items}}<p><strong>{{.Title}}</strong></p>
{{if .Text}}<blockquote style="margin:0 0 .5em;padding-left:1em;border-left:3px solid #888;white-space:pre-wrap">{{quote .Text}}</blockquote>{{end}}
{{if .Action}}<p>{{.Action}}</p>{{end}}
<p><a href="{{.URL}}">Open in ctalk</a></p>
{{end}}<p style="font-size:small;color:#666">Several notifications came within a few minutes, so they come as one mail. <a href="{{.Settings}}">Your notification settings</a>.</p>
</body></html>`)

// sendDigest sends several mails to one address as one: its Message-ID
// names the first of them, so a retry of the same digest is the same mail.
func (s *Service) sendDigest(ctx context.Context, group []*delivery) error {
	if s.cfg.Mail == nil {
		return permanent("this server sends no email")
	}
	var items []mailItem
	kinds := map[Kind]bool{}
	for _, d := range group {
		m, err := s.compose(ctx, d.Event)
		if err != nil {
			return temporary("compose: %v", err)
		}
		items = append(items, itemOf(m))
		kinds[d.Event.Kind] = true
	}
	body, err := digestMail.Render(struct {
		Items    []mailItem
		Settings string
	}{items, s.link("/profile/notifications")})
	if err != nil {
		return permanent("render: %v", err)
	}
	first := group[0]
	msg := mail.Message{
		To:        first.Target,
		Subject:   fmt.Sprintf("%d notifications from ctalk: %s and more", len(group), items[0].Title),
		Text:      body.Text,
		HTML:      body.HTML,
		MessageID: "digest." + first.ID + "@" + s.host(),
		Headers:   s.listHeaders(),
	}
	if len(kinds) == 1 && first.Event.Kind != KindWebhookDisabled {
		s.unsubscribe(first.Event, &msg)
	}
	return mailFailure(s.cfg.Mail.Send(ctx, msg))
}
