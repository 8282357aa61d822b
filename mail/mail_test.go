package mail_test

import (
	"context"
	"mime"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/mail"
	"github.com/ctalk/ctalk/mail/mailtest"
)

func send(t *testing.T, c mail.Config, m mail.Message) error {
	t.Helper()
	s, err := mail.New(c)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s.Send(context.Background(), m)
}

func TestSendArrivesWithPartsAndHeaders(t *testing.T) {
	for name, opts := range map[string][]mailtest.Option{
		"plain":             nil,
		"starttls and auth": {mailtest.WithSTARTTLS(), mailtest.WithAuth("ctalk", "s3cret p@ss")},
	} {
		t.Run(name, func(t *testing.T) {
			srv := mailtest.Start(t, opts...)
			err := send(t, srv.Config(), mail.Message{
				To:         "Jane Doe <jane@example.com>",
				Subject:    "Umar asks you: ready for Friday?",
				Text:       "Umar asks you: ready for Friday?\n\nOpen: https://ctalk.test/q/1\n",
				HTML:       `<p>Umar asks you: <b>ready for Friday?</b></p>`,
				MessageID:  "q1.e2@ctalk.test",
				InReplyTo:  "q1@ctalk.test",
				References: []string{"q1@ctalk.test"},
				Headers: map[string]string{
					"List-Unsubscribe":      "<https://ctalk.test/unsubscribe/x>",
					"List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
				},
			})
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			got := srv.WaitFor(t, 1)[0]
			if got.From != "ctalk@ctalk.test" || len(got.To) != 1 || got.To[0] != "jane@example.com" {
				t.Errorf("envelope from %q to %q", got.From, got.To)
			}
			for h, want := range map[string]string{
				"Subject":               "Umar asks you: ready for Friday?",
				"Message-Id":            "<q1.e2@ctalk.test>",
				"In-Reply-To":           "<q1@ctalk.test>",
				"References":            "<q1@ctalk.test>",
				"List-Unsubscribe":      "<https://ctalk.test/unsubscribe/x>",
				"List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
			} {
				v := got.Header.Get(h)
				if h == "Subject" {
					v, _ = new(mimeDecoder).DecodeHeader(v)
				}
				if v != want {
					t.Errorf("%s = %q, want %q", h, v, want)
				}
			}
			if !strings.Contains(got.Text, "Open: https://ctalk.test/q/1") {
				t.Errorf("text part = %q", got.Text)
			}
			if !strings.Contains(got.HTML, "<b>ready for Friday?</b>") {
				t.Errorf("HTML part = %q", got.HTML)
			}
			if !strings.Contains(got.Header.Get("Content-Type"), "multipart/alternative") {
				t.Errorf("Content-Type = %q, want multipart/alternative", got.Header.Get("Content-Type"))
			}
		})
	}
}

func TestSendGeneratesMessageIDInSenderDomain(t *testing.T) {
	srv := mailtest.Start(t)
	if err := send(t, srv.Config(), mail.Message{To: "jane@example.com", Subject: "hi", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	id := srv.WaitFor(t, 1)[0].Header.Get("Message-Id")
	if !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, "@ctalk.test>") {
		t.Errorf("Message-ID = %q, want <random@ctalk.test>", id)
	}
}

func TestSTARTTLSRequiredRefusesServerWithout(t *testing.T) {
	srv := mailtest.Start(t) // no STARTTLS
	c := srv.Config()
	c.URL = "smtp://" + srv.Addr()
	err := send(t, c, mail.Message{To: "jane@example.com", Subject: "hi", Text: "hi"})
	if err == nil {
		t.Fatal("sent over a connection without STARTTLS")
	}
	if mail.Temporary(err) {
		t.Errorf("a server without STARTTLS reads as temporary: %v", err)
	}
	if msg := ctalk.ErrorMessage(err); !strings.Contains(msg, "STARTTLS") {
		t.Errorf("message %q does not say STARTTLS is missing", msg)
	}
	if n := len(srv.Messages()); n != 0 {
		t.Errorf("the server received %d messages", n)
	}
}

func TestTemporaryAndPermanentFailures(t *testing.T) {
	srv := mailtest.Start(t, mailtest.WithSTARTTLS(), mailtest.WithAuth("ctalk", "right"))
	m := mail.Message{To: "jane@example.com", Subject: "hi", Text: "hi"}

	srv.RefuseFor(451, time.Hour)
	err := send(t, srv.Config(), m)
	if err == nil || !mail.Temporary(err) || mail.ReplyCode(err) != 451 || ctalk.ErrorCode(err) != ctalk.EUnavailable {
		t.Errorf("451: err %v, temporary %v, code %d", err, mail.Temporary(err), mail.ReplyCode(err))
	}
	srv.RefuseFor(550, time.Hour)
	err = send(t, srv.Config(), m)
	if err == nil || mail.Temporary(err) || mail.ReplyCode(err) != 550 {
		t.Errorf("550: err %v, temporary %v, code %d", err, mail.Temporary(err), mail.ReplyCode(err))
	}
	if msg := ctalk.ErrorMessage(err); !strings.Contains(msg, "refused the message") || !strings.Contains(msg, "550") {
		t.Errorf("550 message %q", msg)
	}
	srv.RefuseFor(0, 0)
	if err := send(t, srv.Config(), m); err != nil {
		t.Errorf("after the refusal: %v", err)
	}

	bad := srv.Config()
	bad.URL = strings.Replace(bad.URL, "right", "wrong", 1)
	err = send(t, bad, m)
	if err == nil || mail.Temporary(err) {
		t.Errorf("wrong password: err %v, temporary %v", err, mail.Temporary(err))
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Errorf("the error repeats the password: %v", err)
	}

	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := l.Addr().String()
	l.Close()
	down := srv.Config()
	down.URL = "smtp+insecure://" + closed
	err = send(t, down, m)
	if err == nil || !mail.Temporary(err) || ctalk.ErrorCode(err) != ctalk.EUnavailable {
		t.Errorf("unreachable server: err %v, temporary %v", err, mail.Temporary(err))
	}
	if n := len(srv.Messages()); n != 1 {
		t.Errorf("the server kept %d messages, want 1", n)
	}
}

func TestSendRefusesBadMessages(t *testing.T) {
	srv := mailtest.Start(t)
	for name, m := range map[string]mail.Message{
		"no text":     {To: "jane@example.com", Subject: "hi"},
		"bad address": {To: "jane at example", Subject: "hi", Text: "hi"},
	} {
		if err := send(t, srv.Config(), m); ctalk.ErrorCode(err) != ctalk.EInvalid {
			t.Errorf("%s: err %v, want invalid", name, err)
		}
	}
}

func TestDisabledSenderSaysSo(t *testing.T) {
	s, err := mail.New(mail.Config{})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Send(context.Background(), mail.Message{To: "jane@example.com", Text: "hi"})
	if ctalk.ErrorCode(err) != ctalk.EUnavailable || !strings.Contains(ctalk.ErrorMessage(err), "SMTP_URL") {
		t.Errorf("disabled Send: %v", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		c    mail.Config
		want string // "" = valid
	}{
		{mail.Config{}, ""},
		{mail.Config{URL: "smtp://u:p@mail.example.com:587", From: "ctalk <ctalk@example.com>"}, ""},
		{mail.Config{URL: "smtps://u:p@mail.example.com", From: "ctalk@example.com"}, ""},
		{mail.Config{URL: "smtp+insecure://mailpit:1025", From: "ctalk@example.com"}, ""},
		{mail.Config{URL: "smtp+insecure://u:hunter2@127.0.0.1:1025", From: "ctalk@example.com"}, ""},
		{mail.Config{From: "ctalk@example.com"}, "MAIL_FROM: is set without SMTP_URL"},
		{mail.Config{URL: "smtp://u:hunter2@mail.example.com"}, "MAIL_FROM: is required"},
		{mail.Config{URL: "smtp://u:hunter2@mail.example.com", From: "not an address"}, "MAIL_FROM:"},
		{mail.Config{URL: "http://u:hunter2@mail.example.com", From: "a@b.c"}, "SMTP_URL: has the scheme"},
		{mail.Config{URL: "smtp://u:hunter2@:587", From: "a@b.c"}, "SMTP_URL: names no host"},
		{mail.Config{URL: "smtp://u:hunter2@mail.example.com:99999", From: "a@b.c"}, "SMTP_URL: has the port"},
		{mail.Config{URL: "smtp+insecure://u:hunter2@mail.example.com", From: "a@b.c"}, "unencrypted"},
		{mail.Config{URL: "smtp://u:hunter2@mail.example.com/x", From: "a@b.c"}, "path or query"},
	} {
		err := tc.c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.c, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: err %v, want %q", tc.c, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "hunter2"):
			t.Errorf("%+v: the error repeats the password: %v", tc.c, err)
		}
	}
	if r := (mail.Config{URL: "smtp://u:hunter2@mail.example.com"}).Redacted(); strings.Contains(r, "hunter2") {
		t.Errorf("Redacted = %q", r)
	}
}

type mimeDecoder = mime.WordDecoder

// TestLogSenderConfig holds that SMTP_URL=log: is valid on its own and
// gives the development sender, which never dials a mail server.
func TestLogSenderConfig(t *testing.T) {
	c := mail.Config{URL: " LOG: "}
	if err := c.Validate(); err != nil || !c.Logs() || !c.Enabled() {
		t.Fatalf("log: Validate = %v, Logs = %v, Enabled = %v", err, c.Logs(), c.Enabled())
	}
	s, err := mail.New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(context.Background(), mail.Message{To: "john@example.com", Subject: "hi", Text: "x"}); err != nil {
		t.Errorf("the log sender failed: %v", err)
	}
	if (mail.Config{URL: "smtp://mail.example.com"}).Logs() {
		t.Error("an SMTP URL counts as the log sender")
	}
}
