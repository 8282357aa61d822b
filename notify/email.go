package notify

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"html/template"
	"strings"

	"github.com/ctalk/ctalk/mail"
)

// Mailer sends the email channel; mail.Sender is one.
type Mailer = mail.Sender

var emailHTML = template.Must(template.New("email").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="color-scheme" content="light dark"><title>{{.Title}}</title></head>
<body style="font-family:system-ui,sans-serif;line-height:1.5;max-width:36rem">
<p><strong>{{.Title}}</strong></p>
{{if .Text}}<blockquote style="margin:0 0 1em;padding-left:1em;border-left:3px solid #888;white-space:pre-wrap">{{.Text}}</blockquote>{{end}}
<p><a href="{{.URL}}" style="display:inline-block;padding:.5em 1em;border:1px solid #2563eb;border-radius:4px">Open in ctalk</a></p>
<p style="font-size:small;color:#666">You get this because of your notification settings in ctalk.{{if .Unsubscribe}} <a href="{{.Unsubscribe}}">Stop these emails</a>.{{end}}</p>
</body></html>`))

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
		Headers:   map[string]string{},
	}
	if err := s.thread(ctx, e, &msg); err != nil {
		return msg, err
	}
	unsub := ""
	if e.Kind != KindWebhookDisabled {
		unsub = s.unsubscribe(e, &msg)
	}
	msg.Text = emailText(m, unsub)
	var html bytes.Buffer
	if err := emailHTML.Execute(&html, struct {
		message
		Unsubscribe string
	}{m, unsub}); err != nil {
		return msg, permanent("render: %v", err)
	}
	msg.HTML = html.String()
	return msg, nil
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

// emailText is the text part of a mail saying m.
func emailText(m message, unsub string) string {
	var text strings.Builder
	text.WriteString(m.Title + "\n\n")
	if m.Text != "" {
		for _, line := range strings.Split(m.Text, "\n") {
			text.WriteString("> " + line + "\n")
		}
		text.WriteString("\n")
	}
	fmt.Fprintf(&text, "Open in ctalk: %s\n\n-- \nYou get this because of your notification settings in ctalk.\n", m.URL)
	if unsub != "" {
		fmt.Fprintf(&text, "Stop these emails: %s\n", unsub)
	}
	return text.String()
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

var digestHTML = template.Must(template.New("digest").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="color-scheme" content="light dark"><title>{{len .Items}} notifications from ctalk</title></head>
<body style="font-family:system-ui,sans-serif;line-height:1.5;max-width:36rem">
{{range .Items}}<p><strong>{{.Title}}</strong></p>
{{if .Text}}<blockquote style="margin:0 0 .5em;padding-left:1em;border-left:3px solid #888;white-space:pre-wrap">{{.Text}}</blockquote>{{end}}
<p><a href="{{.URL}}">Open in ctalk</a></p>
{{end}}<p style="font-size:small;color:#666">Several notifications came within a few minutes, so they come as one mail. <a href="{{.Settings}}">Your notification settings</a>.</p>
</body></html>`))

// sendDigest sends several mails to one address as one: its Message-ID
// names the first of them, so a retry of the same digest is the same mail.
func (s *Service) sendDigest(ctx context.Context, group []*delivery) error {
	if s.cfg.Mail == nil {
		return permanent("this server sends no email")
	}
	var items []message
	var text strings.Builder
	fmt.Fprintf(&text, "%d notifications from ctalk\n\n", len(group))
	kinds := map[Kind]bool{}
	for _, d := range group {
		m, err := s.compose(ctx, d.Event)
		if err != nil {
			return temporary("compose: %v", err)
		}
		items = append(items, m)
		kinds[d.Event.Kind] = true
		text.WriteString(m.Title + "\n")
		for _, line := range strings.Split(m.Text, "\n") {
			if line != "" {
				text.WriteString("> " + line + "\n")
			}
		}
		text.WriteString("Open in ctalk: " + m.URL + "\n\n")
	}
	settings := s.link("/profile/notifications")
	fmt.Fprintf(&text, "-- \nSeveral notifications came within a few minutes, so they come as one mail.\nYour notification settings: %s\n", settings)
	first := group[0]
	msg := mail.Message{
		To:        first.Target,
		Subject:   fmt.Sprintf("%d notifications from ctalk: %s and more", len(group), items[0].Title),
		Text:      text.String(),
		MessageID: "digest." + first.ID + "@" + s.host(),
		Headers:   map[string]string{},
	}
	if len(kinds) == 1 && first.Event.Kind != KindWebhookDisabled {
		s.unsubscribe(first.Event, &msg)
	}
	var html bytes.Buffer
	if err := digestHTML.Execute(&html, struct {
		Items    []message
		Settings string
	}{items, settings}); err != nil {
		return permanent("render: %v", err)
	}
	msg.HTML = html.String()
	return mailFailure(s.cfg.Mail.Send(ctx, msg))
}
