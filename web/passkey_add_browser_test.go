package web_test

import (
	"context"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/api/apitest"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/mail/mailtest"
	"github.com/ctalk/ctalk/orgs"
)

// withMailAtLocalhost has the server send its mail to m, with links to
// itself under the name "localhost", where passkeys work over http.
func withMailAtLocalhost(m *mailtest.Server) func(*app.Wiring) {
	return func(w *app.Wiring) {
		w.Mail = m.Config()
		w.API.PublicURL = apitest.SelfLocalhost
	}
}

// rogueRegistration is what an agent's own script does in a tab signed
// in with its person's password, as static/passkey.js would: begin a
// registration (window.rogueBegin answers the begin's status and body),
// then, called again, create the passkey on the tab's authenticator and
// finish (window.rogueFinish).
const rogueRegistration = `
(() => {
  const csrf = document.querySelector("[data-csrf]").getAttribute("data-csrf");
  const b64 = s => { s = s.replace(/-/g, "+").replace(/_/g, "/"); while (s.length % 4) s += "="; return Uint8Array.from(atob(s), c => c.charCodeAt(0)).buffer; };
  const txt = buf => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  const call = async (path, body) => {
    const r = await fetch(path, {method: "POST", credentials: "same-origin", headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf}, body: JSON.stringify(body || {})});
    return [r.status, await r.json()];
  };
  window.rogueBegin = async () => { const [status, v] = await call("/passkeys/register/begin"); window.rogueCeremony = v; return status + " " + JSON.stringify(v); };
  window.rogueFinish = async () => {
    const o = window.rogueCeremony, pk = Object.assign({}, o.options.publicKey);
    pk.challenge = b64(pk.challenge);
    pk.user = Object.assign({}, pk.user, {id: b64(pk.user.id)});
    pk.excludeCredentials = (pk.excludeCredentials || []).map(d => Object.assign({}, d, {id: b64(d.id)}));
    const cred = await navigator.credentials.create({publicKey: pk});
    const r = cred.response;
    const answer = {id: cred.id, rawId: txt(cred.rawId), type: cred.type, clientExtensionResults: cred.getClientExtensionResults(),
      response: {clientDataJSON: txt(r.clientDataJSON), attestationObject: txt(r.attestationObject), transports: r.getTransports()}};
    const [status, v] = await call("/passkeys/register/finish", {ceremony: o.ceremony, credential: answer, name: "Agent's own"});
    return status + " " + JSON.stringify(v);
  };
  return true;
})()`

// rogue runs fn of rogueRegistration in the tab ctx and returns what it
// answered.
func rogue(t *testing.T, ctx context.Context, fn string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](fn+"()", chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", fn, err)
	}
	return v
}

// mailTo waits for the n-th mail (counting from 1) to addr whose subject
// contains want, among the others the server sends (notifications), and
// returns it.
func mailTo(t *testing.T, box *mailtest.Server, n int, addr, want string) mailtest.Received {
	t.Helper()
	var found []mailtest.Received
	testkit.WaitFor(t, 10*time.Second, "a mail to "+addr+" saying "+want, func() (bool, error) {
		found = found[:0]
		for _, m := range box.Messages() {
			if len(m.To) == 1 && m.To[0] == addr && strings.Contains(m.Header.Get("Subject"), want) {
				found = append(found, m)
			}
		}
		return len(found) >= n, nil
	})
	return found[n-1]
}

// TestAgentCannotAddItsOwnPasskey plays the attack of an agent that knows
// its person's password, in Chromium with virtual authenticators, on both
// engines: in an org that approves by passkey, the agent signs in with the
// password in a browser of its own and registers a passkey through the
// JSON calls; the registration is refused, whether begun after the person
// had a passkey or begun before and finished after, the agent's approval
// stops at the step-up, and the person is mailed of every passkey added or
// removed. The person adds a second passkey after verifying with the first.
func TestAgentCannotAddItsOwnPasskey(t *testing.T) {
	t.Parallel()
	inChromium(t, func(t *testing.T, chromium context.Context, engine db.Engine) {
		box := mailtest.Start(t)
		s := start(t, engine, withMailAtLocalhost(box))
		s.org(t, "acme")
		base, bg := localhost(s), dbtest.Operator()
		if _, err := s.Orgs.SetEmail(bg, "acme", "bob", "bob@example.com"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Orgs.SetSettings(bg, "acme", orgs.Settings{ApprovalMode: orgs.ApprovalHuman}); err != nil {
			t.Fatal(err)
		}

		// The agent begins a registration while bob has no passkey.
		agent := browser(t, chromium)
		authenticator(t, agent, false)
		signIn(t, agent, base, "acme", "bob")
		run(t, agent, chromedp.Navigate(base+"/profile"), chromedp.WaitVisible(chromedp.ID("passkey-name")))
		if _, err := chromedp.Run(agent, chromedp.Evaluate[bool](rogueRegistration)); err != nil {
			t.Fatal(err)
		}
		if got := rogue(t, agent, "rogueBegin"); !strings.HasPrefix(got, "200 ") {
			t.Fatalf("the begin before bob has a passkey: %s", got)
		}

		// Bob adds his passkey and is told by mail.
		ctx := browser(t, chromium)
		bobAuth := authenticator(t, ctx, false)
		signIn(t, ctx, base, "acme", "bob")
		run(t, ctx, chromedp.Navigate(base+"/profile"), chromedp.WaitVisible(chromedp.ID("passkey-name")),
			chromedp.SendKeys(chromedp.ID("passkey-name"), "Work laptop"))
		press(t, ctx, `[data-passkey="register"] button`)
		appears(t, ctx, ".passkey-item")
		if m := mailTo(t, box, 1, "bob@example.com", "A passkey was added"); !strings.Contains(m.Text, `"Work laptop"`) {
			t.Errorf("the mail of the added passkey says:\n%s", m.Text)
		}
		if _, err := s.Orgs.SetSettings(bg, "acme", orgs.Settings{ApprovalFactor: orgs.FactorPasskey}); err != nil {
			t.Fatal(err)
		}

		// The agent's ceremony begun before is refused at its finish, and
		// a new one at its begin.
		if got := rogue(t, agent, "rogueFinish"); !strings.HasPrefix(got, "403 ") || !strings.Contains(got, "fresh verification") {
			t.Fatalf("the agent's finish after bob added his passkey: %s", got)
		}
		if got := rogue(t, agent, "rogueBegin"); !strings.HasPrefix(got, "403 ") || !strings.Contains(got, "fresh verification") {
			t.Fatalf("the agent's begin once bob has a passkey: %s", got)
		}
		if keys, _ := s.Auth.Passkeys(bg, "acme", "bob"); len(keys) != 1 {
			t.Fatalf("bob's passkeys after the agent's attempts: %+v", keys)
		}
		// Its profile offers a verification first, never the registration.
		run(t, agent, chromedp.Navigate(base+"/profile"))
		appears(t, agent, "#passkey-verify-first")
		if n, _ := chromedp.Run(agent, chromedp.Evaluate[int](`document.querySelectorAll('[data-passkey="register"]').length`)); n != 0 {
			t.Error("the profile of a password session offers to add a passkey")
		}
		// Nor does it approve.
		id := s.ask(t, "alice", "bob", "Is the freeze on Monday?")
		s.propose(t, id, "Yes.")
		run(t, agent, chromedp.Navigate(base+"/inbox/"+id), chromedp.WaitVisible(chromedp.ID("approve-"+id)))
		press(t, agent, "#approve-"+id)
		appears(t, agent, `form[data-passkey-verify] [data-passkey-error]:not([hidden])`)
		if r, err := s.Inbox.Review(bg, acme("bob"), id); err != nil || r.Latest().Approved {
			t.Fatalf("the agent approved without bob's passkey (%v)", err)
		}

		// Bob verifies with his passkey, then adds one on another
		// authenticator, and is told.
		age(t, s, "bob", 6*time.Minute)
		run(t, ctx, chromedp.Navigate(base+"/profile"))
		appears(t, ctx, "#passkey-verify-first")
		press(t, ctx, `[data-passkey="verify"] button`)
		appears(t, ctx, "#passkey-name")
		run(t, ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, webauthn.RemoveVirtualAuthenticator, webauthn.RemoveVirtualAuthenticatorParams{AuthenticatorID: bobAuth})
			return err
		}))
		authenticator(t, ctx, false)
		run(t, ctx, chromedp.Navigate(base+"/profile"), chromedp.WaitVisible(chromedp.ID("passkey-name")),
			chromedp.SendKeys(chromedp.ID("passkey-name"), "Phone"))
		press(t, ctx, `[data-passkey="register"] button`)
		appears(t, ctx, ".flash")
		if keys, _ := s.Auth.Passkeys(bg, "acme", "bob"); len(keys) != 2 || keys[1].Name != "Phone" || keys[1].Pending {
			t.Fatalf("bob's passkeys after he added one: %+v", keys)
		}
		mailTo(t, box, 2, "bob@example.com", "A passkey was added")

		// Removing one tells him too.
		run(t, ctx, chromedp.Navigate(base+"/profile"), chromedp.WaitVisible(chromedp.CSS(".passkey-item button")))
		press(t, ctx, ".passkey-item button")
		appears(t, ctx, ".flash")
		if flash := shown(t, ctx, ".flash"); !strings.Contains(flash, "Passkey removed") {
			t.Fatalf("after removing, the page says %q", flash)
		}
		if m := mailTo(t, box, 1, "bob@example.com", "A passkey was removed"); !strings.Contains(m.Text, `"Work laptop"`) {
			t.Errorf("the mail of the removed passkey says:\n%s", m.Text)
		}
	})
}

// confirmLink is the link of a passkey's confirmation mail.
var confirmLink = regexp.MustCompile(`http://\S+(/passkeys/confirm/ctalk_[A-Za-z0-9_-]+)`)

// TestFirstPasskeyWaitsForTheMailedLink: in an org that approves by
// passkey, a person with no passkey who adds one (as an agent with their
// password could) gets a passkey that approves nothing until the link
// mailed to them is used; opening the link confirms nothing, its button
// does, once; then the passkey verifies an approval. In Chromium (on SQLite,
// see inChromium).
func TestFirstPasskeyWaitsForTheMailedLink(t *testing.T) {
	t.Parallel()
	inChromium(t, func(t *testing.T, chromium context.Context, engine db.Engine) {
		box := mailtest.Start(t)
		s := start(t, engine, withMailAtLocalhost(box))
		s.org(t, "acme")
		base, bg := localhost(s), dbtest.Operator()
		if _, err := s.Orgs.SetEmail(bg, "acme", "carol", "carol@example.com"); err != nil {
			t.Fatal(err)
		}
		ctx, id, flash := carolAddsAFirstPasskey(t, chromium, s)
		if !strings.Contains(flash, "waiting for your confirmation") {
			t.Fatalf("after adding a first passkey the page says %q", flash)
		}
		if keys, _ := s.Auth.Passkeys(bg, "acme", "carol"); len(keys) != 1 || !keys[0].Pending {
			t.Fatalf("carol's passkeys: %+v, want one waiting", keys)
		}
		m := mailTo(t, box, 1, "carol@example.com", "Confirm the new passkey")
		found := confirmLink.FindStringSubmatch(m.Text)
		if found == nil || !strings.Contains(m.HTML, found[0]) {
			t.Fatalf("no confirmation link in the mail:\n%s", m.Text)
		}
		link := found[1]

		// Unconfirmed, it approves nothing: the step-up has no passkey to ask.
		run(t, ctx, chromedp.Navigate(base+"/inbox/"+id), chromedp.WaitVisible(chromedp.ID("approve-"+id)))
		press(t, ctx, "#approve-"+id)
		appears(t, ctx, `a[href="/profile#passkeys"]`)
		if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-passkey="verify"]').length`)); n != 0 {
			t.Fatal("the step-up page offers a verification with an unconfirmed passkey")
		}
		if _, err := s.Auth.BeginPasskeyVerify(bg, &auth.Session{OrgID: "acme", UserID: "carol"}, base); err == nil {
			t.Fatal("a verification begins with an unconfirmed passkey")
		}

		// Opening the link confirms nothing; its button does, once.
		if code, body := s.anonymous(t).get(link); code != 200 || !strings.Contains(body, "Carol&#39;s phone") {
			t.Fatalf("GET the confirmation link: %d %s", code, body)
		}
		if keys, _ := s.Auth.Passkeys(bg, "acme", "carol"); !keys[0].Pending {
			t.Fatal("opening the link confirmed the passkey")
		}
		run(t, ctx, chromedp.Navigate(base+link))
		appears(t, ctx, `form button[type="submit"]`)
		press(t, ctx, `form button[type="submit"]`)
		appears(t, ctx, `a[href="/signin"]`)
		if keys, _ := s.Auth.Passkeys(bg, "acme", "carol"); keys[0].Pending {
			t.Fatal("the link's button did not confirm the passkey")
		}
		if code, _ := s.anonymous(t).post(link, url.Values{}); code != 404 {
			t.Errorf("the used link again: %d, want 404", code)
		}

		// Now it verifies the approval.
		carolApprovesWithHerPasskey(t, ctx, s, id)
		s.noSecret(t, token(link))
	})
}

// carolAddsAFirstPasskey sets s's org acme to approve by passkey, has
// alice ask carol a question that carol's agent drafts an answer to, and
// has carol, signed in with her password in a tab with an authenticator,
// add her first passkey; it returns the tab, the question and what the
// page then says.
func carolAddsAFirstPasskey(t *testing.T, chromium context.Context, s *site) (ctx context.Context, id, flash string) {
	t.Helper()
	bg := dbtest.Operator()
	if _, err := s.Orgs.SetSettings(bg, "acme", orgs.Settings{ApprovalMode: orgs.ApprovalHuman, ApprovalFactor: orgs.FactorPasskey}); err != nil {
		t.Fatal(err)
	}
	id = s.ask(t, "alice", "carol", "Ship it?")
	if _, _, err := s.Inbox.Propose(bg, acme("carol"), id, "Yes."); err != nil {
		t.Fatal(err)
	}
	ctx = browser(t, chromium)
	authenticator(t, ctx, false)
	signIn(t, ctx, localhost(s), "acme", "carol")
	run(t, ctx, chromedp.Navigate(localhost(s)+"/profile"), chromedp.WaitVisible(chromedp.ID("passkey-name")),
		chromedp.SendKeys(chromedp.ID("passkey-name"), "Carol's phone"))
	press(t, ctx, `[data-passkey="register"] button`)
	appears(t, ctx, ".flash")
	return ctx, id, shown(t, ctx, ".flash")
}

// carolApprovesWithHerPasskey has carol approve the draft of question id
// in the tab ctx, verifying with her passkey on the page as it sends,
// and checks that the approval went through.
func carolApprovesWithHerPasskey(t *testing.T, ctx context.Context, s *site, id string) {
	t.Helper()
	run(t, ctx, chromedp.Navigate(localhost(s)+"/inbox/"+id), chromedp.WaitVisible(chromedp.ID("approve-"+id)))
	press(t, ctx, "#approve-"+id)
	appears(t, ctx, ".flash")
	if r, err := s.Inbox.Review(dbtest.Operator(), acme("carol"), id); err != nil || !r.Latest().Approved {
		t.Fatalf("carol's approval with her confirmed passkey did not go through (%v)", err)
	}
}

// TestFirstPasskeyWithNoWayButTheOperator: in an org that approves by
// passkey, on a server that sends no email, where no admin has a passkey,
// a member's first passkey stays closed: no link can be mailed, the admin
// cannot approve it, and it verifies no approval. The server's operator
// confirms it from the shell (app.Operator, behind "ctalk passkeys
// confirm"), and then it does. In Chromium (on SQLite, see
// inChromium).
func TestFirstPasskeyWithNoWayButTheOperator(t *testing.T) {
	t.Parallel()
	inChromium(t, func(t *testing.T, chromium context.Context, engine db.Engine) {
		s := start(t, engine, func(w *app.Wiring) { w.API.PublicURL = apitest.SelfLocalhost })
		s.org(t, "acme")
		base, bg := localhost(s), dbtest.Operator()
		ctx, id, flash := carolAddsAFirstPasskey(t, chromium, s)
		if !strings.Contains(flash, "waiting for an admin's approval") || !strings.Contains(flash, "operator of this ctalk server") {
			t.Fatalf("after adding a first passkey with no mail the page says %q", flash)
		}
		keys, _ := s.Auth.Passkeys(bg, "acme", "carol")
		if len(keys) != 1 || !keys[0].Pending {
			t.Fatalf("carol's passkeys: %+v, want one waiting", keys)
		}

		// Closed: the admin, who has no passkey, cannot approve it, and it
		// verifies nothing.
		if _, err := s.Auth.ApprovePasskey(bg, &auth.Session{OrgID: "acme", UserID: "alice"}, "carol", keys[0].ID); err == nil {
			t.Fatal("an admin without a passkey approved carol's")
		}
		run(t, ctx, chromedp.Navigate(base+"/inbox/"+id), chromedp.WaitVisible(chromedp.ID("approve-"+id)))
		press(t, ctx, "#approve-"+id)
		appears(t, ctx, `a[href="/profile#passkeys"]`)
		if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-passkey="verify"]').length`)); n != 0 {
			t.Fatal("the step-up page offers a verification with an unconfirmed passkey")
		}
		if r, err := s.Inbox.Review(bg, acme("carol"), id); err != nil || r.Latest().Approved {
			t.Fatalf("carol's draft was approved without a passkey (%v)", err)
		}

		// The operator confirms it; now it verifies the approval.
		op, err := app.NewOperator(s.DB, app.Wiring{API: api.Config{PublicURL: base}})
		if err != nil {
			t.Fatal(err)
		}
		p, err := op.ConfirmPasskey(bg, keys[0].ID)
		op.Close()
		if err != nil || p.OrgID != "acme" || p.UserID != "carol" || p.Name != "Carol's phone" {
			t.Fatalf("the operator's confirmation: %+v, %v", p, err)
		}
		carolApprovesWithHerPasskey(t, ctx, s, id)
	})
}
