package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/api/apitest"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/mail/mailtest"
	"github.com/ctalk/ctalk/notify"
)

// mailedLink is the link of a mailed page (invite or reset) in a mail's
// text, and its path.
var mailedLink = regexp.MustCompile(`http://[^\s/]+(/(?:invite|reset)/ctalk_[A-Za-z0-9_-]+)`)

// linkIn returns the path of the one link of kind ("invite" or "reset") in
// m, checking that its HTML part carries the same.
func linkIn(t *testing.T, m mailtest.Received, kind string) string {
	t.Helper()
	found := mailedLink.FindStringSubmatch(m.Text)
	if found == nil || !strings.HasPrefix(found[1], "/"+kind+"/") {
		t.Fatalf("no %s link in the mail's text:\n%s", kind, m.Text)
	}
	if !strings.Contains(m.HTML, found[0]) {
		t.Errorf("the HTML part lacks the link %s", found[1])
	}
	return found[1]
}

// token is the secret part of a mailed link's path.
func token(path string) string { return path[strings.LastIndexByte(path, '/')+1:] }

// noSecret fails the test when any of the secrets shows in the server's
// logs or its audit record.
func (s *site) noSecret(t *testing.T, secrets ...string) {
	t.Helper()
	rows, err := s.DB.Query(dbtest.Operator(), `SELECT tool, outcome, ids FROM audit_events`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var audit strings.Builder
	for rows.Next() {
		var tool, outcome, ids string
		if err := rows.Scan(&tool, &outcome, &ids); err != nil {
			t.Fatal(err)
		}
		audit.WriteString(tool + " " + outcome + " " + ids + "\n")
	}
	for _, secret := range secrets {
		if strings.Contains(s.logs.String(), secret) {
			t.Errorf("the log holds a link's token")
		}
		if strings.Contains(audit.String(), secret) {
			t.Errorf("the audit record holds a link's token")
		}
	}
}

// TestInviteByEmailSignsThePersonIn: an admin invites by email; the link in
// the mail lets the person choose their password and signs them in; it
// works once, and its token is nowhere but in the mail.
func TestInviteByEmailSignsThePersonIn(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		box := mailtest.Start(t)
		s := start(t, engine, withMail(box))
		s.org(t, "acme")
		alice := s.newClient(t, "acme", "alice")
		if code, body := alice.post("/admin/invites", url.Values{"email": {"Dan@Example.com"}, "user_id": {"dan"}, "name": {"Dan <b>"}, "role": {"member"}}); code != http.StatusOK || !strings.Contains(body, "Invite sent") {
			t.Fatalf("invite: %d %s", code, body)
		}
		m := box.WaitFor(t, 1)[0]
		if len(m.To) != 1 || m.To[0] != "dan@example.com" {
			t.Errorf("mailed to %v, want dan@example.com", m.To)
		}
		if !strings.Contains(m.Text, "Alice invites you to Org acme") || !strings.Contains(m.HTML, "Dan &lt;b&gt;") {
			t.Errorf("mail text:\n%s\nHTML:\n%s", m.Text, m.HTML)
		}
		link := linkIn(t, m, "invite")
		_, admin := alice.get("/admin")
		if strings.Contains(admin, token(link)) || !strings.Contains(admin, "dan@example.com") {
			t.Errorf("the admin page shows the link's token, or not the invite")
		}

		dan := s.anonymous(t)
		if code, body := dan.get(link); code != http.StatusOK || !strings.Contains(body, "Join Org acme") {
			t.Fatalf("GET the invite: %d %s", code, body)
		}
		if code, body := dan.post(link, url.Values{"password": {"dans-password"}, "confirm": {"other-password"}}); code != http.StatusBadRequest || !strings.Contains(body, "differ") {
			t.Errorf("differing passwords: %d", code)
		}
		if code, body := dan.post(link, url.Values{"password": {"short"}, "confirm": {"short"}}); code != http.StatusBadRequest {
			t.Errorf("a short password: %d %s", code, body)
		}
		code, body := dan.post(link, url.Values{"password": {"dans-password"}, "confirm": {"dans-password"}})
		if code != http.StatusOK || !strings.Contains(body, "dan · acme") {
			t.Fatalf("accept: %d %s", code, body)
		}
		if u := s.member(t, "acme", "dan"); u.Name != "Dan <b>" || u.Email != "dan@example.com" || u.Role != "member" {
			t.Errorf("the member is %+v", u)
		}
		if _, _, err := s.Auth.SignIn(dbtest.Operator(), "acme", "dan", "dans-password", "127.0.0.1"); err != nil {
			t.Errorf("sign in with the chosen password: %v", err)
		}
		again := s.anonymous(t)
		if code, body := again.get(link); code != http.StatusNotFound || !strings.Contains(body, "does not work") {
			t.Errorf("the used link: %d", code)
		}
		if code, _ := again.post(link, url.Values{"password": {"evil-password"}, "confirm": {"evil-password"}}); code != http.StatusNotFound {
			t.Errorf("posting the used link: %d", code)
		}
		if invites, _ := s.Auth.Invites(dbtest.Operator(), "acme"); len(invites) != 0 {
			t.Errorf("invites left: %v", invites)
		}
		s.waitAuditEvent(t, "acme", "alice", "web:invite_user", "ok", "dan")
		s.noSecret(t, token(link))
	})
}

// TestInviteResendRevokeExpire: a resend kills the earlier link, a revoke
// kills the link, and a link a week old no longer works but can be resent.
func TestInviteResendRevokeExpire(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		box := mailtest.Start(t)
		s := start(t, engine, withMail(box))
		s.org(t, "acme")
		alice := s.newClient(t, "acme", "alice")
		for _, id := range []string{"dan", "erin"} {
			if code, body := alice.post("/admin/invites", url.Values{"email": {id + "@example.com"}, "user_id": {id}, "name": {id}}); code != http.StatusOK {
				t.Fatalf("invite %s: %d %s", id, code, body)
			}
		}
		mails := box.WaitFor(t, 2)
		first, erin := linkIn(t, mails[0], "invite"), linkIn(t, mails[1], "invite")
		if code, body := alice.post("/admin/invites/dan/resend", url.Values{}); code != http.StatusOK || !strings.Contains(body, "earlier link no longer works") {
			t.Fatalf("resend: %d %s", code, body)
		}
		second := linkIn(t, box.WaitFor(t, 3)[2], "invite")
		anon := s.anonymous(t)
		if code, _ := anon.get(first); code != http.StatusNotFound {
			t.Errorf("the link replaced by a resend: %d", code)
		}
		if code, _ := anon.get(second); code != http.StatusOK {
			t.Errorf("the resent link: %d", code)
		}
		if code, _ := alice.post("/admin/invites/erin/revoke", url.Values{}); code != http.StatusOK {
			t.Fatalf("revoke: %d", code)
		}
		if code, _ := anon.get(erin); code != http.StatusNotFound {
			t.Errorf("the revoked link: %d", code)
		}
		if code, body := alice.post("/admin/invites/erin/revoke", url.Values{}); code != http.StatusNotFound || !strings.Contains(body, "no invite") {
			t.Errorf("revoking twice: %d", code)
		}

		s.clock.advance(auth.InviteTTL + time.Minute)
		alice = s.newClient(t, "acme", "alice") // her session of a week ago ended
		if code, _ := anon.get(second); code != http.StatusNotFound {
			t.Errorf("the link a week old: %d", code)
		}
		if code, _ := anon.post(second, url.Values{"password": {"dans-password"}, "confirm": {"dans-password"}}); code != http.StatusNotFound {
			t.Errorf("accepting the link a week old: %d", code)
		}
		if _, body := alice.get("/admin"); !strings.Contains(body, "expired") {
			t.Errorf("the admin page does not mark the invite expired")
		}
		if code, _ := alice.post("/admin/invites/dan/resend", url.Values{}); code != http.StatusOK {
			t.Fatalf("resend the expired invite: %d", code)
		}
		third := linkIn(t, box.WaitFor(t, 4)[3], "invite")
		if code, _ := anon.post(third, url.Values{"password": {"dans-password"}, "confirm": {"dans-password"}}); code != http.StatusOK {
			t.Errorf("accepting the link sent again: %d", code)
		}
		s.noSecret(t, token(first), token(second), token(third), token(erin))
	})
}

// TestInviteMailRefusedCreatesNothing: when the mail server refuses, the
// admin is told why and no invite is left; without SMTP, the page says so.
func TestInviteMailRefusedCreatesNothing(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		box := mailtest.Start(t)
		s := start(t, engine, withMail(box))
		s.org(t, "acme")
		alice := s.newClient(t, "acme", "alice")
		box.RefuseFor(550, time.Hour)
		code, body := alice.post("/admin/invites", url.Values{"email": {"dan@example.com"}, "user_id": {"dan"}, "name": {"Dan"}})
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "could not send the invite to dan@example.com") || !strings.Contains(body, "550") {
			t.Errorf("refused mail: %d %s", code, body)
		}
		if invites, _ := s.Auth.Invites(dbtest.Operator(), "acme"); len(invites) != 0 {
			t.Errorf("an invite was left: %+v", invites[0])
		}
		box.RefuseFor(0, 0)
		if code, _ := alice.post("/admin/invites", url.Values{"email": {"dan@example.com"}, "user_id": {"dan"}, "name": {"Dan"}}); code != http.StatusOK {
			t.Errorf("inviting again once the server accepts: %d", code)
		}
	})
	t.Run("without SMTP", func(t *testing.T) {
		s := start(t, db.SQLite)
		s.org(t, "acme")
		alice := s.newClient(t, "acme", "alice")
		if _, body := alice.get("/admin"); !strings.Contains(body, "people cannot be invited") || strings.Contains(body, `action="/admin/invites"`) {
			t.Errorf("the admin page offers invites without SMTP or PUBLIC_URL")
		}
		if code, body := alice.post("/admin/invites", url.Values{"email": {"dan@example.com"}, "user_id": {"dan"}, "name": {"Dan"}}); code != http.StatusServiceUnavailable || !strings.Contains(body, "PUBLIC_URL") {
			t.Errorf("invite without SMTP or PUBLIC_URL: %d", code)
		}
		if _, body := s.anonymous(t).get("/signin"); strings.Contains(body, "/forgot") {
			t.Errorf("the sign-in page offers a reset without SMTP")
		}
		if _, body := s.anonymous(t).get("/forgot"); !strings.Contains(body, "sends no email") {
			t.Errorf("/forgot without SMTP does not say so")
		}
		testkit.Fail(t, s.agent(t, "acme", "alice"), "invite_user", map[string]any{"org_id": "acme", "email": "dan@example.com", "user_id": "dan", "name": "Dan"},
			"unavailable: this server sends no email (its operator has not set SMTP_URL)")
	})
}

// shownLink is the invite link the admin page shows once.
var shownLink = regexp.MustCompile(`id="invite-link" value="http://[^"/]+(/invite/ctalk_[A-Za-z0-9_-]+)"`)

// linkShown returns the path of the invite link a page shows.
func linkShown(t *testing.T, body string) string {
	t.Helper()
	m := shownLink.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the page shows no invite link:\n%s", body)
	}
	return m[1]
}

// TestInviteLinkToHandOver: an admin makes an invite link instead of a
// mail (on a server without SMTP, the only way): the page shows it once,
// it works once under the rules of a mailed invite, a new link replaces
// it, and it is in no mail, log, audit record or later page.
func TestInviteLinkToHandOver(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		box := mailtest.Start(t)
		s := start(t, engine, withMail(box))
		s.org(t, "acme")
		alice := s.newClient(t, "acme", "alice")
		code, body := alice.post("/admin/invites", url.Values{"email": {"dan@example.com"}, "user_id": {"dan"}, "name": {"Dan <b>"}, "deliver": {"link"}})
		if code != http.StatusOK || !strings.Contains(body, "Invite link for Dan &lt;b&gt;") {
			t.Fatalf("make a link: %d %s", code, body)
		}
		first := linkShown(t, body)
		if _, again := alice.get("/admin"); strings.Contains(again, token(first)) || !strings.Contains(again, "dan@example.com") {
			t.Errorf("the admin page shows the link again, or not the invite")
		}
		// The same rules as a mailed invite: the id is taken while it waits.
		if code, body := alice.post("/admin/invites", url.Values{"email": {"dan2@example.com"}, "user_id": {"dan"}, "name": {"Dan"}, "deliver": {"link"}}); code != http.StatusConflict || strings.Contains(body, `id="invite-link"`) {
			t.Errorf("a second invite of dan: %d", code)
		}
		code, body = alice.post("/admin/invites/dan/resend", url.Values{"deliver": {"link"}})
		if code != http.StatusOK {
			t.Fatalf("new link: %d %s", code, body)
		}
		second := linkShown(t, body)
		anon := s.anonymous(t)
		if code, _ := anon.get(first); code != http.StatusNotFound {
			t.Errorf("the link a new one replaced: %d", code)
		}
		if code, _ := anon.post(second, url.Values{"password": {"dans-password"}, "confirm": {"dans-password"}}); code != http.StatusOK {
			t.Fatalf("accept the link: %d", code)
		}
		if u := s.member(t, "acme", "dan"); u.Email != "dan@example.com" || u.Role != "member" {
			t.Errorf("the member is %+v", u)
		}
		if code, _ := s.anonymous(t).get(second); code != http.StatusNotFound {
			t.Errorf("the used link: %d", code)
		}
		if n := len(box.Messages()); n != 0 {
			t.Errorf("%d mails sent for invites by link", n)
		}
		// A member is no admin, here as for mailed invites.
		bob := s.newClient(t, "acme", "bob")
		if code, body := bob.post("/admin/invites", url.Values{"email": {"eve@example.com"}, "user_id": {"eve"}, "name": {"Eve"}, "deliver": {"link"}}); code == http.StatusOK || strings.Contains(body, "/invite/ctalk_") {
			t.Errorf("a member made an invite link: %d", code)
		}
		s.waitAuditEvent(t, "acme", "alice", "web:invite_user", "ok", "dan")
		s.noSecret(t, token(first), token(second))
	})
	t.Run("without SMTP", func(t *testing.T) {
		s := start(t, db.SQLite, func(w *app.Wiring) { w.API.PublicURL = apitest.SelfURL })
		s.org(t, "acme")
		alice := s.newClient(t, "acme", "alice")
		if _, body := alice.get("/admin"); !strings.Contains(body, "This server sends no email, so you get their link") || strings.Contains(body, `value="mail"`) {
			t.Errorf("the admin page offers invites by email without SMTP")
		}
		code, body := alice.post("/admin/invites", url.Values{"email": {"dan@example.com"}, "user_id": {"dan"}, "name": {"Dan"}})
		if code != http.StatusOK {
			t.Fatalf("make a link without SMTP: %d %s", code, body)
		}
		link := linkShown(t, body)
		if code, body := alice.post("/admin/invites/dan/resend", url.Values{"deliver": {"mail"}}); code != http.StatusOK || !strings.Contains(body, `id="invite-link"`) {
			t.Errorf("a resend without SMTP makes no new link: %d", code)
		}
		if code, _ := s.anonymous(t).get(link); code != http.StatusNotFound {
			t.Errorf("the replaced link: %d", code)
		}
	})
}

// TestInviteUserTool: the admin tool mails the invite; its result, like the
// audit record, never holds the link.
func TestInviteUserTool(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		box := mailtest.Start(t)
		s := start(t, engine, withMail(box))
		s.org(t, "acme")
		alice := s.agent(t, "acme", "alice")
		res := testkit.OK(t, alice, "invite_user", map[string]any{"org_id": "acme", "email": "dan@example.com", "user_id": "dan", "name": "Dan"})
		link := linkIn(t, box.WaitFor(t, 1)[0], "invite")
		b, _ := json.Marshal(res)
		if text := string(b); strings.Contains(text, token(link)) || strings.Contains(text, "/invite/") || !strings.Contains(text, "dan@example.com") {
			t.Errorf("the tool's result: %s", text)
		}
		testkit.Fail(t, alice, "invite_user", map[string]any{"org_id": "acme", "email": "dan2@example.com", "user_id": "dan", "name": "Dan"}, "conflict")
		testkit.Fail(t, alice, "invite_user", map[string]any{"org_id": "acme", "email": "bob@example.com", "user_id": "bob", "name": "Bob"}, "conflict")
		testkit.Fail(t, alice, "invite_user", map[string]any{"org_id": "acme", "email": "not an address", "user_id": "fay", "name": "Fay"}, "invalid")
		// An agent invites no admin: an address it reads would make one.
		testkit.Fail(t, alice, "invite_user", map[string]any{"org_id": "acme", "email": "eve@example.com", "user_id": "eve", "name": "Eve", "role": "admin"}, "inviting an admin is for a person")
		bob := s.agent(t, "acme", "bob")
		testkit.Fail(t, bob, "invite_user", map[string]any{"org_id": "acme", "email": "fay@example.com", "user_id": "fay", "name": "Fay"}, "")
		code, _ := s.anonymous(t).post(link, url.Values{"password": {"dans-password"}, "confirm": {"dans-password"}})
		if code != http.StatusOK || s.member(t, "acme", "dan").Role != "member" {
			t.Errorf("accepting the tool's invite: %d", code)
		}
		s.noSecret(t, token(link))
	})
}

// forgot posts the "forgot password" form for who in orgID.
func forgot(c *client, orgID, who string) (int, string) {
	c.t.Helper()
	return c.post("/forgot", url.Values{"org_id": {orgID}, "who": {who}})
}

// TestForgotPasswordAnswersTheSame: the answer does not tell whether the
// account exists or has an address; only a member with an address gets a
// mail, asked for by id or by address.
func TestForgotPasswordAnswersTheSame(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		box := mailtest.Start(t)
		s := start(t, engine, withMail(box))
		s.org(t, "acme")
		if _, err := s.Orgs.SetEmail(dbtest.Operator(), "acme", "bob", "Bob@Example.com"); err != nil {
			t.Fatal(err)
		}
		if _, body := s.anonymous(t).get("/signin"); !strings.Contains(body, `href="/forgot"`) {
			t.Errorf("the sign-in page has no Forgot password? link")
		}
		if _, body := s.anonymous(t).get(authorization(t, s, "Claude Code")); !strings.Contains(body, `href="/forgot"`) {
			t.Errorf("the OAuth sign-in page has no Forgot password? link")
		}
		var want string
		for i, c := range []struct{ org, who string }{
			{"acme", "bob"}, {"acme", "BOB@example.com"}, {"acme", "nobody"}, {"acme", "carol"}, {"acme", "nobody@example.com"}, {"other", "bob"},
		} {
			code, body := forgot(s.anonymous(t), c.org, c.who)
			body = strings.ReplaceAll(strings.ReplaceAll(body, c.who, "WHO"), c.org, "ORG")
			body = regexp.MustCompile(`name="csrf" value="[^"]*"`).ReplaceAllString(body, "")
			if code != http.StatusOK || !strings.Contains(body, "is on its way") {
				t.Errorf("%s/%s: %d %s", c.org, c.who, code, body)
			}
			if i == 0 {
				want = body
			} else if body != want {
				t.Errorf("%s/%s answers otherwise than acme/bob:\n%s\nwant\n%s", c.org, c.who, body, want)
			}
		}
		s.Access.Wait()
		mails := box.Messages()
		if len(mails) != 2 {
			t.Fatalf("%d mails, want 2 (bob by id and by address)", len(mails))
		}
		for _, m := range mails {
			if m.To[0] != "bob@example.com" {
				t.Errorf("a reset mailed to %v", m.To)
			}
			linkIn(t, m, "reset")
		}
		if code, body := forgot(s.anonymous(t), "acme", "not an@address"); code != http.StatusBadRequest || !strings.Contains(body, "who-error") {
			t.Errorf("a malformed address: %d", code)
		}
	})
}

// TestPasswordResetEndsEverySession: the mailed link sets the password,
// ends every other session and token of the person, signs this browser
// in, works once, and expires after 30 minutes.
func TestPasswordResetEndsEverySession(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		box := mailtest.Start(t)
		s := start(t, engine, withMail(box))
		s.org(t, "acme")
		ctx := dbtest.Operator()
		if _, err := s.Orgs.SetEmail(ctx, "acme", "bob", "bob@example.com"); err != nil {
			t.Fatal(err)
		}
		tok, _, err := s.Auth.Login(ctx, "acme", "bob", userPW, "127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		laptop := s.newClient(t, "acme", "bob")
		carolTok, _, _ := s.Auth.Login(ctx, "acme", "carol", userPW, "127.0.0.1")

		forgot(s.anonymous(t), "acme", "bob")
		link := linkIn(t, box.WaitFor(t, 1)[0], "reset")
		phone := s.anonymous(t)
		if code, body := phone.get(link); code != http.StatusOK || !strings.Contains(body, "Choose a new password") {
			t.Fatalf("GET the reset link: %d %s", code, body)
		}
		if code, _ := phone.post(link, url.Values{"password": {"new-password-1"}, "confirm": {"new-password-2"}}); code != http.StatusBadRequest {
			t.Errorf("differing passwords: %d", code)
		}
		code, body := phone.post(link, url.Values{"password": {"new-password-1"}, "confirm": {"new-password-1"}})
		if code != http.StatusOK || !strings.Contains(body, "Your new password is set") {
			t.Fatalf("reset: %d %s", code, body)
		}
		if _, err := s.Auth.Authenticate(ctx, tok); err == nil {
			t.Error("bob's token still works after the reset")
		}
		if _, body := laptop.get("/inbox"); !strings.Contains(body, `id="password"`) {
			t.Error("bob's other browser is still signed in")
		}
		if _, err := s.Auth.Authenticate(ctx, carolTok); err != nil {
			t.Errorf("carol's token ended with bob's reset: %v", err)
		}
		if _, _, err := s.Auth.SignIn(ctx, "acme", "bob", userPW, "127.0.0.1"); err == nil {
			t.Error("the old password still works")
		}
		if _, _, err := s.Auth.SignIn(ctx, "acme", "bob", "new-password-1", "127.0.0.1"); err != nil {
			t.Errorf("the new password: %v", err)
		}
		if code, _ := s.anonymous(t).post(link, url.Values{"password": {"evil-password"}, "confirm": {"evil-password"}}); code != http.StatusNotFound {
			t.Errorf("the used link: %d", code)
		}

		forgot(s.anonymous(t), "acme", "bob")
		late := linkIn(t, box.WaitFor(t, 2)[1], "reset")
		s.clock.advance(auth.ResetTTL + time.Second)
		if code, _ := s.anonymous(t).get(late); code != http.StatusNotFound {
			t.Errorf("a link 30 minutes old: %d", code)
		}
		if code, _ := s.anonymous(t).post(late, url.Values{"password": {"new-password-3"}, "confirm": {"new-password-3"}}); code != http.StatusNotFound {
			t.Errorf("using a link 30 minutes old: %d", code)
		}
		s.noSecret(t, token(link), token(late))
	})
}

// TestForgotPasswordLimitsHoldUnderConcurrency: concurrent requests for one
// account get exactly the account's limit answered, whether or not the
// account exists, and the address's limit holds over many accounts.
func TestForgotPasswordLimitsHoldUnderConcurrency(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		box := mailtest.Start(t)
		s := start(t, engine, withMail(box))
		s.org(t, "acme")
		if _, err := s.Orgs.SetEmail(dbtest.Operator(), "acme", "bob", "bob@example.com"); err != nil {
			t.Fatal(err)
		}
		cfg := auth.DefaultConfig()
		burst := func(whos ...string) (ok, limited int) {
			t.Helper()
			codes := make(chan int, len(whos))
			var wg sync.WaitGroup
			for _, who := range whos {
				c := s.anonymous(t)
				c.get("/forgot")
				wg.Add(1)
				go func() {
					defer wg.Done()
					code, _ := c.postRaw("/forgot", url.Values{"csrf": {c.csrf()}, "org_id": {"acme"}, "who": {who}})
					codes <- code
				}()
			}
			wg.Wait()
			close(codes)
			for code := range codes {
				switch code {
				case http.StatusOK:
					ok++
				case http.StatusTooManyRequests:
					limited++
				default:
					t.Errorf("status %d", code)
				}
			}
			return ok, limited
		}
		repeat := func(who string, n int) []string {
			out := make([]string, n)
			for i := range out {
				out[i] = who
			}
			return out
		}
		if ok, limited := burst(repeat("bob", 12)...); ok != cfg.ResetMaxPerAccount || limited != 12-ok {
			t.Errorf("bob: %d answered, %d limited; want %d answered", ok, limited, cfg.ResetMaxPerAccount)
		}
		if ok, _ := burst(repeat("nobody", 12)...); ok != cfg.ResetMaxPerAccount {
			t.Errorf("nobody: %d answered; want %d, as for an account that exists", ok, cfg.ResetMaxPerAccount)
		}
		var many []string
		for i := range 15 {
			many = append(many, "someone-"+string(rune('a'+i)))
		}
		left := cfg.ResetMaxPerAddress - 2*cfg.ResetMaxPerAccount
		if ok, _ := burst(many...); ok != left {
			t.Errorf("15 accounts from one address: %d answered; want the %d the address had left", ok, left)
		}
		s.Access.Wait()
		if n := len(box.Messages()); n != cfg.ResetMaxPerAccount {
			t.Errorf("%d mails to bob, want %d", n, cfg.ResetMaxPerAccount)
		}
	})
}

// TestEmailAddressForms: a person sets their own address on their profile,
// an admin sets a member's; an address another member has is refused next
// to its field.
func TestEmailAddressForms(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		bob := s.newClient(t, "acme", "bob")
		if code, body := bob.post("/profile/email", url.Values{"email": {"Bob@Example.com"}, "current_password": {userPW}}); code != http.StatusOK || !strings.Contains(body, "Your email address is saved") || !strings.Contains(body, `value="bob@example.com"`) {
			t.Fatalf("set my address: %d %s", code, body)
		}
		carol := s.newClient(t, "acme", "carol")
		if code, body := carol.post("/profile/email", url.Values{"email": {"bob@example.COM"}, "current_password": {userPW}}); code != http.StatusConflict || !strings.Contains(body, `id="email-error"`) {
			t.Errorf("another member's address: %d", code)
		}
		alice := s.newClient(t, "acme", "alice")
		if code, body := alice.post("/admin/members/carol/email", url.Values{"email": {"carol@example.com"}, "your_password": {userPW}}); code != http.StatusOK || !strings.Contains(body, "Email address saved") {
			t.Errorf("an admin sets carol's address: %d", code)
		}
		if code, _ := alice.post("/admin/members/carol/email", url.Values{"email": {"bob@example.com"}, "your_password": {userPW}}); code != http.StatusConflict {
			t.Errorf("an admin gives carol bob's address: %d", code)
		}
		if got := s.member(t, "acme", "carol").Email; got != "carol@example.com" {
			t.Errorf("carol's address is %q", got)
		}
		if _, body := bob.get("/people/carol"); strings.Contains(body, "carol@example.com") {
			t.Errorf("a member sees another's address")
		}
	})
}

// TestAddressChangeIsASecurityNotice: a change of a member's address, by
// themselves or an admin, queues a security notice for their webhooks and
// browsers, besides the mail to the address replaced.
func TestAddressChangeIsASecurityNotice(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine, withMail(mailtest.Start(t)))
		s.org(t, "acme")
		ctx := dbtest.Operator()
		for _, u := range []string{"bob", "carol"} {
			if _, _, err := s.Notify.AddWebhook(ctx, "acme", u, u, "https://hooks.example.com/"+u, notify.FormatJSON); err != nil {
				t.Fatal(err)
			}
		}
		bob, alice := s.newClient(t, "acme", "bob"), s.newClient(t, "acme", "alice")
		if code, _ := bob.post("/profile/email", url.Values{"email": {"bob@example.com"}, "current_password": {userPW}}); code != http.StatusOK {
			t.Fatalf("bob's address: %d", code)
		}
		if code, _ := alice.post("/admin/members/carol/email", url.Values{"email": {"carol@example.com"}, "your_password": {userPW}}); code != http.StatusOK {
			t.Fatalf("carol's address: %d", code)
		}
		for _, u := range []string{"bob", "carol"} {
			var n int
			if err := s.DB.QueryRow(ctx, `SELECT COUNT(*) FROM notify_events WHERE org_id = 'acme' AND user_id = $1 AND kind = 'security'`, u).Scan(&n); err != nil || n != 1 {
				t.Errorf("%s's security notices: %d (%v), want 1", u, n, err)
			}
		}
	})
}
