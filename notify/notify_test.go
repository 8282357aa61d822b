package notify_test

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/mail"
	"github.com/ctalk/ctalk/mail/mailtest"
	"github.com/ctalk/ctalk/notify"
)

// people is the test's directory: acme's members a (Ann) and b (Bo).
var people = map[string][2]string{"a": {"Ann", "ann@acme.test"}, "b": {"Bo", "bo@acme.test"}, "m": {malName, ""}}

// malName is a display name written to ping a whole Slack channel and plant
// a link where a notification shows it.
const malName = "Mal <!channel> <https://evil.test|Reset password>"

func directory(_ context.Context, orgID, userID string) (string, string, error) {
	p, ok := people[userID]
	if orgID != "acme" || !ok {
		return "", "", ctalk.Errorf(ctalk.ENotFound, "no such member")
	}
	return p[0], p[1], nil
}

func seed(t testing.TB, d *db.DB) {
	t.Helper()
	now := d.Now()
	err := d.Tx(dbtest.Operator(), func(tx db.Querier) error {
		if _, err := tx.Exec(dbtest.Operator(), `INSERT INTO orgs (id, name, admin_password_hash, created_at) VALUES ('acme', 'Acme', 'x', $1)`, now); err != nil {
			return err
		}
		for _, u := range []string{"a", "b"} {
			if _, err := tx.Exec(dbtest.Operator(), `INSERT INTO users (org_id, id, name, password_hash, role, created_at, updated_at) VALUES ('acme', $1, $1, 'x', 'member', $2, $2)`, u, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// newService returns a Service over d that mails to srv (none when nil)
// and may post webhooks to loopback, with retries in milliseconds.
func newService(t testing.TB, d *db.DB, srv *mailtest.Server, adjust ...func(*notify.Config)) *notify.Service {
	t.Helper()
	cfg := notify.DefaultConfig()
	cfg.PublicURL = "https://ctalk.test"
	cfg.AllowHTTP = true
	cfg.RetryBase, cfg.RetryMax = time.Millisecond, 5*time.Millisecond
	// Every mail its own, unless a test of digests sets a window.
	cfg.DigestWindow = 0
	if srv != nil {
		m, err := mail.New(srv.Config())
		if err != nil {
			t.Fatal(err)
		}
		cfg.Mail = m
	}
	for _, f := range adjust {
		f(&cfg)
	}
	s := notify.NewService(d, cfg, directory)
	if err := s.Start(dbtest.Operator()); err != nil {
		t.Fatal(err)
	}
	return s
}

func queue(t testing.TB, d *db.DB, s *notify.Service, evs ...notify.Event) {
	t.Helper()
	if err := d.Tx(dbtest.Operator(), func(tx db.Querier) error { return s.Queue(dbtest.Operator(), tx, evs...) }); err != nil {
		t.Fatal(err)
	}
}

func count(t testing.TB, d *db.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := d.QueryRow(dbtest.Operator(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func drain(t testing.TB, s *notify.Service) {
	t.Helper()
	if err := s.Drain(dbtest.Operator()); err != nil {
		t.Fatal(err)
	}
}

func question(id string) notify.Event {
	return notify.Event{Kind: notify.KindQuestion, OrgID: "acme", UserID: "b", Actor: "a", Subject: id,
		Text: "Is the release on Friday?\nSecond line, private.", Link: "/inbox/" + id}
}

// TestRollbackQueuesNothing queues an event in a transaction that rolls
// back, then in one that commits: only the second is queued.
func TestRollbackQueuesNothing(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(t, d, mailtest.Start(t))
		ctx := dbtest.Operator()
		boom := errors.New("the change failed")
		err := d.Tx(ctx, func(tx db.Querier) error {
			if err := s.Queue(ctx, tx, question("q_1")); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("got %v", err)
		}
		if n := count(t, d, `SELECT COUNT(*) FROM notify_events`); n != 0 {
			t.Fatalf("a rolled-back change queued %d events", n)
		}
		queue(t, d, s, question("q_2"))
		if n := count(t, d, `SELECT COUNT(*) FROM notify_events`); n != 1 {
			t.Fatalf("a committed change queued %d events, want 1", n)
		}
	})
}

// TestEmailArrivesWithHeaders sends a question and a later event of the
// same question to a real SMTP server: text and HTML parts, the first line
// only, a stable Message-ID, the second threaded under the first, and a
// one-click unsubscribe.
func TestEmailArrivesWithHeaders(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		srv := mailtest.Start(t)
		s := newService(t, d, srv)
		queue(t, d, s, question("q_1"))
		drain(t, s)
		draft := question("q_1")
		draft.Kind, draft.Text = notify.KindDraft, "Yes, on Friday."
		queue(t, d, s, draft)
		drain(t, s)
		got := srv.WaitFor(t, 2)
		first, second := got[0], got[1]
		if to := first.To; len(to) != 1 || to[0] != "bo@acme.test" {
			t.Errorf("To = %v", to)
		}
		if subj := first.Header.Get("Subject"); subj != "Ann asks you a question" {
			t.Errorf("Subject = %q", subj)
		}
		if !strings.Contains(first.Text, "Is the release on Friday?") || strings.Contains(first.Text, "Second line") {
			t.Errorf("the text part does not carry exactly the first line:\n%s", first.Text)
		}
		if !strings.Contains(first.Text, "https://ctalk.test/inbox/q_1") || !strings.Contains(first.HTML, "https://ctalk.test/inbox/q_1") {
			t.Errorf("no link to the question in both parts:\n%s\n%s", first.Text, first.HTML)
		}
		id := first.Header.Get("Message-Id")
		if !strings.HasSuffix(id, "@ctalk.test>") {
			t.Errorf("Message-ID = %q", id)
		}
		if irt := second.Header.Get("In-Reply-To"); irt != id {
			t.Errorf("In-Reply-To = %q, want the first mail's %q", irt, id)
		}
		if refs := second.Header.Get("References"); !strings.Contains(refs, id) {
			t.Errorf("References = %q, want %q", refs, id)
		}
		if p := first.Header.Get("List-Unsubscribe-Post"); p != "List-Unsubscribe=One-Click" {
			t.Errorf("List-Unsubscribe-Post = %q", p)
		}
		lu := first.Header.Get("List-Unsubscribe")
		if !strings.HasPrefix(lu, "<https://ctalk.test"+notify.UnsubscribePath+"?t=") {
			t.Errorf("List-Unsubscribe = %q", lu)
		}
		for _, m := range got {
			for _, secret := range []string{"whsec_", "password", "token="} {
				if strings.Contains(string(m.Data), secret) {
					t.Errorf("a mail carries %q", secret)
				}
			}
		}
	})
}

// TestSMTPRefusingDelaysThenDelivers has the SMTP server refuse with 451
// until the queue has retried twice: the mail then arrives once.
func TestSMTPRefusingDelaysThenDelivers(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		srv := mailtest.Start(t)
		srv.RefuseFor(451, time.Hour)
		s := newService(t, d, srv)
		queue(t, d, s, question("q_1"))
		ctx := dbtest.Operator()
		for count(t, d, `SELECT COALESCE(MAX(attempts), 0) FROM notify_deliveries WHERE status = 'pending'`) < 3 {
			if _, err := s.Step(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(srv.Messages()); n != 0 {
			t.Fatalf("%d mails arrived while the server refused", n)
		}
		srv.RefuseFor(0, 0)
		for count(t, d, `SELECT COUNT(*) FROM notify_deliveries WHERE status = 'sent'`) == 0 {
			if _, err := s.Step(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(srv.Messages()); n != 1 {
			t.Fatalf("%d mails arrived, want 1", n)
		}
		if n := count(t, d, `SELECT COUNT(*) FROM notify_deliveries WHERE status = 'failed'`); n != 0 {
			t.Fatalf("%d deliveries failed for good over a temporary refusal", n)
		}
	})
}

// TestPermanentSMTPRefusalFails has the server answer 550: the delivery
// fails at once, logged with the reason, and is not retried.
func TestPermanentSMTPRefusalFails(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		srv := mailtest.Start(t)
		srv.RefuseFor(550, time.Hour)
		s := newService(t, d, srv)
		queue(t, d, s, question("q_1"))
		drain(t, s)
		log, err := s.DeliveryLog(dbtest.Operator(), ctalk.Caller{OrgID: "acme", UserID: "b"}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != 1 || log[0].Status != "failed" || log[0].Attempts != 1 || log[0].Error == "" {
			t.Fatalf("delivery log = %+v, want one failed attempt with its reason", log)
		}
	})
}

// receiver is a real HTTP server on loopback that checks every request's
// Standard Webhooks signature against the secret it is given, and keeps
// the bodies by webhook-id.
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	secret  string
	status  int
	bodies  map[string][]byte
	hits    map[string]int
	badSigs int
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{status: http.StatusOK, bodies: map[string][]byte{}, hits: map[string]int{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		id, ts, sig := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp"), req.Header.Get("webhook-signature")
		r.mu.Lock()
		defer r.mu.Unlock()
		if code := verifySignature(r.secret, id, ts, sig, body); code != 0 {
			r.badSigs++
			w.WriteHeader(code)
			return
		}
		r.hits[id]++
		r.bodies[id] = body
		w.WriteHeader(r.status)
	}))
	t.Cleanup(r.Close)
	return r
}

// verifySignature checks a request's Standard Webhooks headers as a
// receiver does, with secret: 0 when they hold, else the status to answer.
func verifySignature(secret, id, ts, sig string, body []byte) int {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if id == "" || !hmac.Equal([]byte(sig), []byte(want)) {
		return http.StatusUnauthorized
	}
	var unix int64
	if _, err := fmt.Sscan(ts, &unix); err != nil || time.Since(time.Unix(unix, 0)).Abs() > 5*time.Minute {
		return http.StatusBadRequest
	}
	return 0
}

func (r *receiver) only(t *testing.T) map[string]any {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.badSigs != 0 || len(r.bodies) != 1 {
		t.Fatalf("receiver got %d bodies and %d bad signatures, want 1 and 0", len(r.bodies), r.badSigs)
	}
	for _, b := range r.bodies {
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("body is not JSON: %s", b)
		}
		return v
	}
	return nil
}

// TestWebhookFormatsSigned posts one question to a person's webhook in each
// format: the receiver verifies the signature and finds the format's shape.
func TestWebhookFormatsSigned(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(t, d, nil)
		ctx := dbtest.Operator()
		for i, format := range []string{notify.FormatJSON, notify.FormatSlack, notify.FormatTeams} {
			t.Run(format, func(t *testing.T) {
				r := newReceiver(t)
				w, secret, err := s.AddWebhook(ctx, "acme", "b", "b", r.URL, format)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(secret, "whsec_") {
					t.Fatalf("secret %q", secret)
				}
				r.secret = secret
				queue(t, d, s, question(fmt.Sprint("q_", i)))
				drain(t, s)
				if err := s.DeleteWebhook(ctx, "acme", "b", w.ID); err != nil {
					t.Fatal(err)
				}
				v := r.only(t)
				raw, _ := json.Marshal(v)
				switch format {
				case notify.FormatJSON:
					if v["type"] != "question" || v["title"] != "Ann asks you a question" || v["text"] != "Is the release on Friday?" || v["url"] != fmt.Sprintf("https://ctalk.test/inbox/q_%d", i) {
						t.Errorf("JSON body %s", raw)
					}
				case notify.FormatSlack:
					blocks, _ := v["blocks"].([]any)
					if len(blocks) != 1 {
						t.Fatalf("Slack body %s", raw)
					}
					acc, _ := blocks[0].(map[string]any)["accessory"].(map[string]any)
					if v["text"] != "Ann asks you a question" || acc["type"] != "button" || acc["url"] != fmt.Sprintf("https://ctalk.test/inbox/q_%d", i) {
						t.Errorf("Slack body %s", raw)
					}
				case notify.FormatTeams:
					atts, _ := v["attachments"].([]any)
					if v["type"] != "message" || len(atts) != 1 {
						t.Fatalf("Teams body %s", raw)
					}
					att := atts[0].(map[string]any)
					card, _ := att["content"].(map[string]any)
					actions, _ := card["actions"].([]any)
					if att["contentType"] != "application/vnd.microsoft.card.adaptive" || card["type"] != "AdaptiveCard" || len(actions) != 1 ||
						actions[0].(map[string]any)["url"] != fmt.Sprintf("https://ctalk.test/inbox/q_%d", i) {
						t.Errorf("Teams body %s", raw)
					}
				}
			})
		}
	})
}

// TestWebhookBodiesEscapePeoplesText sends a question from a member named
// to ping a Slack channel and plant a link, with words that try the same,
// to a person's and the org's Slack and Teams webhooks: every value Slack
// formats, the top-level text that its notification shows included, has
// Slack's markup escaped, and Teams shows them in TextRuns, which read no
// Markdown.
func TestWebhookBodiesEscapePeoplesText(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(t, d, nil)
		ctx := dbtest.Operator()
		for i, format := range []string{notify.FormatSlack, notify.FormatTeams} {
			for _, owner := range []string{"b", ""} {
				t.Run(format+"/"+cmp.Or(owner, "org"), func(t *testing.T) {
					r := newReceiver(t)
					w, secret, err := s.AddWebhook(ctx, "acme", owner, "b", r.URL, format)
					if err != nil {
						t.Fatal(err)
					}
					r.secret = secret
					q := question(fmt.Sprintf("q_%d%s", i, owner))
					q.Actor, q.Text = "m", "<!here> & [Reset password](https://evil.test) **now**"
					queue(t, d, s, q)
					drain(t, s)
					if err := s.DeleteWebhook(ctx, "acme", owner, w.ID); err != nil {
						t.Fatal(err)
					}
					v := r.only(t)
					raw, _ := json.Marshal(v)
					switch format {
					case notify.FormatSlack:
						want := "Mal &lt;!channel&gt; &lt;https://evil.test|Reset password&gt; asks you a question"
						if owner == "" {
							want = "For Bo: " + want
						}
						if v["text"] != want {
							t.Errorf("top-level text %q, want %q", v["text"], want)
						}
						for _, s := range jsonStrings(v) {
							if strings.ContainsAny(strings.ReplaceAll(s, "\n>", "\n"), "<>") {
								t.Errorf("a Slack field keeps markup: %q", s)
							}
						}
					case notify.FormatTeams:
						body := v["attachments"].([]any)[0].(map[string]any)["content"].(map[string]any)["body"].([]any)
						for _, el := range body {
							el := el.(map[string]any)
							if el["type"] != "RichTextBlock" {
								t.Errorf("a card element of people's text is a %v, which reads Markdown: %s", el["type"], raw)
							}
						}
						if !strings.Contains(string(raw), `"type":"TextRun"`) || strings.Contains(string(raw), `"type":"TextBlock"`) {
							t.Errorf("Teams body %s", raw)
						}
					}
				})
			}
		}
	})
}

// jsonStrings are the strings of a decoded JSON value, at any depth.
func jsonStrings(v any) []string {
	var out []string
	switch v := v.(type) {
	case string:
		out = append(out, v)
	case map[string]any:
		for _, x := range v {
			out = append(out, jsonStrings(x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, jsonStrings(x)...)
		}
	}
	return out
}

// TestWebhookRetryKeepsID has the receiver fail with 503 once: the retry
// carries the same webhook-id, so the receiver can drop a repeat.
func TestWebhookRetryKeepsID(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(t, d, nil)
		ctx := dbtest.Operator()
		r := newReceiver(t)
		r.status = http.StatusServiceUnavailable
		_, secret, err := s.AddWebhook(ctx, "acme", "b", "b", r.URL, notify.FormatJSON)
		if err != nil {
			t.Fatal(err)
		}
		r.secret = secret
		queue(t, d, s, question("q_1"))
		for count(t, d, `SELECT COUNT(*) FROM notify_deliveries WHERE attempts >= 2`) == 0 {
			if _, err := s.Step(ctx); err != nil {
				t.Fatal(err)
			}
		}
		r.mu.Lock()
		r.status = http.StatusOK
		r.mu.Unlock()
		for count(t, d, `SELECT COUNT(*) FROM notify_deliveries WHERE status = 'sent'`) == 0 {
			if _, err := s.Step(ctx); err != nil {
				t.Fatal(err)
			}
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.hits) != 1 {
			t.Fatalf("retries used %d webhook ids, want 1", len(r.hits))
		}
		for _, n := range r.hits {
			if n < 3 {
				t.Fatalf("the receiver saw %d requests, want the failures and the success under one id", n)
			}
		}
	})
}

// TestWebhookGoneIsDisabledAndOwnerTold has the receiver answer 410: the
// webhook is disabled at once, nothing more is sent to it, and its owner
// gets an email saying so.
func TestWebhookGoneIsDisabledAndOwnerTold(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		srv := mailtest.Start(t)
		s := newService(t, d, srv)
		ctx := dbtest.Operator()
		// Only the webhook, so that the one mail is the notice.
		if _, err := s.SaveSettings(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, notify.Settings{Channels: map[notify.Kind][]string{notify.KindQuestion: {notify.ChannelWebhook}}}); err != nil {
			t.Fatal(err)
		}
		r := newReceiver(t)
		r.status = http.StatusGone
		_, secret, err := s.AddWebhook(ctx, "acme", "b", "b", r.URL, notify.FormatSlack)
		if err != nil {
			t.Fatal(err)
		}
		r.secret = secret
		queue(t, d, s, question("q_1"))
		drain(t, s)
		hooks, err := s.Webhooks(ctx, "acme", "b")
		if err != nil {
			t.Fatal(err)
		}
		if len(hooks) != 1 || hooks[0].DisabledAt == nil || !strings.Contains(hooks[0].DisabledReason, "410") {
			t.Fatalf("webhooks = %+v, want it disabled for the 410", hooks)
		}
		got := srv.WaitFor(t, 1)
		if subj := got[0].Header.Get("Subject"); subj != "A webhook of yours was disabled" || !strings.Contains(got[0].Text, "410") {
			t.Errorf("notice: %q\n%s", subj, got[0].Text)
		}
		if strings.Contains(got[0].Text, r.URL[len("http://"):]+"/") {
			t.Errorf("the notice shows the webhook's path")
		}
		queue(t, d, s, question("q_2"))
		drain(t, s)
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.hits) != 1 {
			t.Fatalf("a disabled webhook got %d events, want only the one before", len(r.hits))
		}
	})
}

// TestWebhookFailingForADayIsDisabled has the receiver fail with 500 for
// longer than the give-up time (the clock moved on): the webhook is
// disabled.
func TestWebhookFailingForADayIsDisabled(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(t, d, nil)
		ctx := dbtest.Operator()
		r := newReceiver(t)
		r.status = http.StatusInternalServerError
		_, secret, err := s.AddWebhook(ctx, "acme", "b", "b", r.URL, notify.FormatJSON)
		if err != nil {
			t.Fatal(err)
		}
		r.secret = secret
		queue(t, d, s, question("q_1"))
		if _, err := s.Step(ctx); err != nil {
			t.Fatal(err)
		}
		real := d.Now
		t.Cleanup(func() { d.Now = real })
		d.Now = func() time.Time { return real().Add(25 * time.Hour) }
		drain(t, s)
		hooks, _ := s.Webhooks(ctx, "acme", "b")
		if len(hooks) != 1 || hooks[0].DisabledAt == nil {
			t.Fatalf("webhooks = %+v, want it disabled after failing for a day", hooks)
		}
	})
}
