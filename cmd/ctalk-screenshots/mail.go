package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/ctalk/ctalk/mail"
)

// mailPath is where the screenshots' server shows the mail of mailbox.Show.
const mailPath = "/demo-mail"

// mailbox is the demo server's mail sender: it keeps every mail the server
// sends, as its notifications worker built them, and serves the HTML part
// of the latest one to an address whose subject has a given text at
// mailPath?to=...&subject=....
type mailbox struct {
	mu   sync.Mutex
	sent []mail.Message
}

// Send keeps m.
func (b *mailbox) Send(_ context.Context, m mail.Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sent = append(b.sent, m)
	return nil
}

// find returns the latest mail to to whose subject holds subject.
func (b *mailbox) find(to, subject string) (mail.Message, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := len(b.sent) - 1; i >= 0; i-- {
		if m := b.sent[i]; m.To == to && strings.Contains(m.Subject, subject) && m.HTML != "" {
			return m, true
		}
	}
	return mail.Message{}, false
}

// wait returns once a mail to to whose subject holds subject was sent, or
// an error after d.
func (b *mailbox) wait(ctx context.Context, to, subject string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		if _, ok := b.find(to, subject); ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the demo sent no mail %q to %s within %s", subject, to, d)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (b *mailbox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m, ok := b.find(r.URL.Query().Get("to"), r.URL.Query().Get("subject"))
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(m.HTML))
}

// mailURL is the path of the mail to to whose subject holds subject.
func mailURL(to, subject string) string {
	return mailPath + "?" + url.Values{"to": {to}, "subject": {subject}}.Encode()
}
