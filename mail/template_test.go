package mail_test

import (
	"strings"
	"testing"

	"github.com/ctalk/ctalk/mail"
	"github.com/ctalk/ctalk/mail/mailtest"
)

// forged is a name written to forge a line of its own in a mail.
const forged = "Mal\r\nReset your password: https://evil.test/\u2028Urgent\x0b!\x00"

func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		forged:                "Mal Reset your password: https://evil.test/ Urgent !",
		"  Ann  Lee ":         "Ann Lee",
		"tab\there\x1b[31m":   "tab here[31m",
		"next\u0085line\r":    "next line",
		"plain name, no more": "plain name, no more",
	} {
		if got := mail.OneLine(in); got != want {
			t.Errorf("OneLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestTemplateFlattensEveryValue renders a template that prints people's
// text in its body, in a template it calls and in a range, with no care
// of its own: no value starts a line, in either part; only quote shows
// several lines, each marked as quoted.
func TestTemplateFlattensEveryValue(t *testing.T) {
	tpl := mail.NewTemplate(`{{define "who"}}by {{.}}{{end}}Hello {{.Name}},
{{template "who" .Name}}
{{range .Items}}- {{.}}
{{end}}{{if .Text}}{{quote .Text}}
{{end}}Open: {{.Link}}
`, `<p>Hello {{.Name}}</p>{{range .Items}}<p>{{.}}</p>{{end}}<blockquote style="white-space:pre-wrap">{{quote .Text}}</blockquote><a href="{{.Link}}">{{.Name}}</a>`)
	m, err := tpl.Render(map[string]any{
		"Name": forged, "Items": []string{"one\nReset: https://evil.test/"}, "Link": "https://ctalk.test/x",
		"Text": mail.Quoted("first line\r\nsecond\rthird\n" + "Reset your password: https://evil.test/"),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(m.Text, "\n") {
		if strings.HasPrefix(line, "Reset") || strings.HasPrefix(line, "Urgent") {
			t.Errorf("a value starts the text part's line %q:\n%s", line, m.Text)
		}
		if strings.ContainsAny(line, "\r\x0b\x00\u2028") {
			t.Errorf("a control character is left in line %q", line)
		}
	}
	for _, want := range []string{"Hello Mal Reset your password: https://evil.test/ Urgent !,", "by Mal Reset", "- one Reset: https://evil.test/",
		"> first line\n> second\n> third\n> Reset your password: https://evil.test/\n", "Open: https://ctalk.test/x"} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("text part lacks %q:\n%s", want, m.Text)
		}
	}
	for _, want := range []string{"<p>Hello Mal Reset your password: https://evil.test/ Urgent !</p>", "<p>one Reset: https://evil.test/</p>",
		"first line\nsecond\nthird\nReset your password", `href="https://ctalk.test/x"`} {
		if !strings.Contains(m.HTML, want) {
			t.Errorf("HTML part lacks %q:\n%s", want, m.HTML)
		}
	}
	if strings.Contains(m.HTML, "\r") || strings.Contains(m.HTML, "Mal\n") {
		t.Errorf("HTML part keeps a name's line break:\n%s", m.HTML)
	}
}

// TestHeadersAreOneLine sends a subject and a header written to add
// headers of their own: each arrives as one line, and no header is added.
func TestHeadersAreOneLine(t *testing.T) {
	srv := mailtest.Start(t)
	err := send(t, srv.Config(), mail.Message{To: "jane@example.com", Subject: "Hi\r\nBcc: victim@evil.test", Text: "hello\n",
		Headers: map[string]string{"List-Id": "ctalk\r\nX-Injected: yes"}})
	if err != nil {
		t.Fatal(err)
	}
	got := srv.WaitFor(t, 1)[0]
	if subj, _ := new(mimeDecoder).DecodeHeader(got.Header.Get("Subject")); subj != "Hi Bcc: victim@evil.test" {
		t.Errorf("Subject = %q", subj)
	}
	if got.Header.Get("Bcc") != "" || got.Header.Get("X-Injected") != "" || len(got.To) != 1 {
		t.Errorf("a value added a header or recipient: %v to %v", got.Header, got.To)
	}
	if v := got.Header.Get("List-Id"); v != "ctalk X-Injected: yes" {
		t.Errorf("List-Id = %q", v)
	}
}
