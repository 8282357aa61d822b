package slackapp_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/api/apitest"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/outbound"
	"github.com/ctalk/ctalk/internal/testkit"
)

// env is a ctalk server on a real port, wired to a stand-in for Slack,
// with org acme (john, umar, kim, in human approval mode) connected to the
// workspace TACME, and org other (olga) to TOTHER.
type env struct {
	t     *testing.T
	srv   *apitest.Server
	slack *testkit.Slack
}

const (
	acmeSecret  = "acme-signing-secret-0123456789"
	otherSecret = "other-signing-secret-0123456789"
)

// settleGrace is the tests' Config.SettleGrace: long beside a decision's
// own update of a DM on this machine, short beside a test.
const settleGrace = 2 * time.Second

func newEnv(t *testing.T, d *db.DB, limited ...string) *env {
	t.Helper()
	st := testkit.NewSlack(t, limited...)
	srv := apitest.Start(t, d, func(w *app.Wiring) {
		w.API.PublicURL = apitest.SelfURL
		w.Slack.APIURL = st.URL + "/api/"
		w.Slack.HTTP = outbound.Client(outbound.Options{AllowLoopback: true})
		w.Slack.MaxRetryAfter = 5 * time.Second
		w.Slack.SettleGrace = settleGrace
	})
	e := &env{t: t, srv: srv, slack: st}
	now := d.Now()
	for _, o := range []struct{ org, mode string }{{"acme", "human"}, {"other", "human"}} {
		e.exec(`INSERT INTO orgs (id, name, admin_password_hash, approval_mode, created_at) VALUES ($1, $1, 'x', $2, $3)`, o.org, o.mode, now)
	}
	for _, u := range [][2]string{{"acme", "john"}, {"acme", "umar"}, {"acme", "kim"}, {"other", "olga"}} {
		e.exec(`INSERT INTO users (org_id, id, name, password_hash, role, created_at, updated_at) VALUES ($1, $2, $2, 'x', 'admin', $3, $3)`, u[0], u[1], now)
	}
	e.connect("acme", "xoxb-TACME-1", acmeSecret)
	e.connect("other", "xoxb-TOTHER-1", otherSecret)
	return e
}

func (e *env) exec(query string, args ...any) {
	e.t.Helper()
	if _, err := dbtest.Exec(e.srv.DB, query, args...); err != nil {
		e.t.Fatal(err)
	}
}

func caller(org, user string) ctalk.Caller { return ctalk.Caller{OrgID: org, UserID: user} }

func (e *env) connect(org, token, secret string) {
	e.t.Helper()
	c := caller(org, "admin")
	c.Admin = true
	if err := e.srv.Slack.Connect(dbtest.Operator(), c, token, secret); err != nil {
		e.t.Fatal(err)
	}
}

// link links user of org to slackUser through the DM's link, as a person
// does.
func (e *env) link(org, user, slackUser string) {
	e.t.Helper()
	ctx := dbtest.Operator()
	before := len(e.slack.Of("chat.postMessage"))
	if err := e.srv.Slack.StartLink(ctx, caller(org, user), slackUser); err != nil {
		e.t.Fatal(err)
	}
	dm := e.slack.Await(e.t, "chat.postMessage", before+1, nil)[before]
	_, token, ok := strings.Cut(dm.Form.Get("text"), "/profile/slack/confirm/")
	if !ok {
		e.t.Fatalf("the DM has no link: %q", dm.Form.Get("text"))
	}
	token, _, _ = strings.Cut(token, "\n")
	if err := e.srv.Slack.ConfirmLink(ctx, caller(org, user), token); err != nil {
		e.t.Fatal(err)
	}
}

// drafted is umar's question to john with a draft of john's agent.
func (e *env) drafted(question, draft string) string {
	e.t.Helper()
	ctx := dbtest.Operator()
	q, err := e.srv.Inbox.Ask(ctx, caller("acme", "umar"), inbox.Ask{To: "john", Text: question})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, _, err := e.srv.Inbox.Propose(ctx, caller("acme", "john"), q.ID, draft); err != nil {
		e.t.Fatal(err)
	}
	return q.ID
}

// status is the status of question id.
func (e *env) status(id string) (status, answer string) {
	e.t.Helper()
	r, err := e.srv.Inbox.Review(dbtest.Operator(), caller("acme", "john"), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return r.Status, r.Answer
}

// signed is a request to path with body, signed with secret as Slack
// signs, at the time at.
func signed(path, body, secret string, at time.Time) (*http.Request, error) {
	r, err := http.NewRequest(http.MethodPost, path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + ts + ":" + body))
	r.Header.Set("X-Slack-Request-Timestamp", ts)
	r.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	if strings.HasPrefix(body, "{") {
		r.Header.Set("Content-Type", "application/json")
	} else {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return r, nil
}

var triggers atomic.Int64

// press is the interaction body of slackUser of team pressing action with
// value, as Slack posts it.
func press(team, slackUser, action, value string) string {
	p := map[string]any{
		"type": "block_actions", "trigger_id": fmt.Sprintf("trigger-%d", triggers.Add(1)),
		"team": map[string]any{"id": team}, "user": map[string]any{"id": slackUser},
		"container": map[string]any{"type": "message", "channel_id": "D" + slackUser, "message_ts": "1700000000.000001"},
		"actions":   []map[string]any{{"type": "button", "action_id": action, "block_id": "decide", "value": value}},
	}
	b, _ := json.Marshal(p)
	return url.Values{"payload": {string(b)}}.Encode()
}

// submit is the interaction body of slackUser submitting the modal of
// action with text.
func submit(team, slackUser, action, value, text string) string {
	p := map[string]any{
		"type": "view_submission", "trigger_id": fmt.Sprintf("trigger-%d", triggers.Add(1)),
		"team": map[string]any{"id": team}, "user": map[string]any{"id": slackUser},
		"view": map[string]any{"type": "modal", "callback_id": action, "private_metadata": value,
			"state": map[string]any{"values": map[string]any{"text": map[string]any{"text": map[string]any{"type": "plain_text_input", "value": text}}}}},
	}
	b, _ := json.Marshal(p)
	return url.Values{"payload": {string(b)}}.Encode()
}

// post sends body to path signed with secret at at, and returns the
// status and the answer.
func (e *env) post(path, body, secret string, at time.Time) (int, string) {
	e.t.Helper()
	r, err := signed(e.srv.URL+path, body, secret, at)
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// dmOf waits for the DM of question id with a draft and returns it.
func (e *env) dmOf(id string) testkit.SlackCall {
	e.t.Helper()
	return e.slack.Await(e.t, "chat.postMessage", 1, func(c testkit.SlackCall) bool {
		return strings.Contains(c.Form.Get("blocks"), id) || strings.Contains(c.Form.Get("blocks"), "approve")
	})[0]
}

// stored waits until ctalk recorded n DMs of question id, which a decision
// then updates (a DM recorded after a decision says what and when only).
func (e *env) stored(id string, n int) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got int
		if err := e.srv.DB.QueryRow(dbtest.Operator(), `SELECT COUNT(*) FROM slack_messages WHERE message_id = $1`, id).Scan(&got); err != nil {
			e.t.Fatal(err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%d DMs of %s recorded, want %d", got, id, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
