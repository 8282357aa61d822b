package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/mail/mailtest"
	"github.com/ctalk/ctalk/orgs"
)

// fresh gives every browser session of userID in acme a passkey
// verification made now, as verifying with a passkey would.
func fresh(t *testing.T, s *site, userID string) {
	t.Helper()
	ctx := dbtest.Operator()
	err := s.DB.Write(ctx, func(q db.Querier) error {
		_, err := q.Exec(ctx, `UPDATE web_sessions SET passkey_at = $1 WHERE org_id = 'acme' AND user_id = $2`, time.Now().UTC(), userID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestEveryWeakeningNeedsAPasskey: where the org approves by passkey, an
// admin's session begun with the password (all an agent told the password
// gets) changes no setting to a value of orgs' table of weakenings: each
// asks for a passkey verification and changes nothing; the form sent with
// the org's own values saves without one; with a fresh verification each
// weakening goes through. Where the org asks for no passkey, a weakening
// needs none.
func TestEveryWeakeningNeedsAPasskey(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		ctx := dbtest.Operator()
		strong := orgs.Settings{ApprovalMode: orgs.ApprovalHuman, ChannelPostMode: orgs.ChannelPostHuman, AgentPasswordLogin: orgs.AgentLoginDisabled,
			ApprovalFactor: orgs.FactorPasskey, RequirePasskey: ptrTo(true), KnowledgeSharing: orgs.SharingAsk}
		if _, err := s.Orgs.SetSettings(ctx, "acme", strong); err != nil {
			t.Fatal(err)
		}
		form := url.Values{"approval_mode": {"human"}, "channel_post_mode": {"human"}, "agent_password_login": {"disabled"},
			"approval_factor": {"passkey"}, "require_passkey": {"on"}, "knowledge_sharing": {"ask"}, "knowledge_stale_days": {"30"}}
		with := func(k, v string) url.Values {
			out := url.Values{}
			for key, vals := range form {
				out[key] = vals
			}
			out.Set(k, v)
			return out
		}
		weakenings := [][2]string{{"approval_mode", "agent"}, {"channel_post_mode", "agent"}, {"agent_password_login", "allowed"},
			{"approval_factor", "session"}, {"require_passkey", "off"}, {"knowledge_sharing", "on"}}
		// At localhost, where the step-up page can offer her passkey.
		s.addPasskey(t, "alice", "alicekey")
		alice := s.newClientAt(t, localhost(s), "acme", "alice")
		for _, w := range weakenings {
			code, body := alice.post("/admin/settings", with(w[0], w[1]))
			if code != http.StatusUnauthorized || !strings.Contains(body, "setting "+w[0]) || !strings.Contains(body, `action="/admin/settings"`) {
				t.Errorf("%s %s with a password session: %d, want the step-up", w[0], w[1], code)
			}
		}
		if o, err := s.Orgs.Org(ctx, "acme"); err != nil {
			t.Fatal(err)
		} else if setting, _, weak := o.Settings().Weakening(); weak {
			t.Fatalf("%s was weakened by a password session", setting)
		}
		if code, body := alice.post("/admin/settings", form); code != http.StatusOK || !strings.Contains(body, "Settings saved") {
			t.Errorf("the form with the org's own values: %d", code)
		}

		fresh(t, s, "alice")
		for _, w := range weakenings {
			if code, body := alice.post("/admin/settings", with(w[0], w[1])); code != http.StatusOK || !strings.Contains(body, "Settings saved") {
				t.Errorf("%s %s after a passkey verification: %d", w[0], w[1], code)
			}
			if _, err := s.Orgs.SetSettings(ctx, "acme", strong); err != nil {
				t.Fatal(err)
			}
		}

		// An org that asks for no passkey: the session is all it asks.
		if _, err := s.Orgs.SetSettings(ctx, "acme", orgs.Settings{ApprovalFactor: orgs.FactorSession, RequirePasskey: ptrTo(false)}); err != nil {
			t.Fatal(err)
		}
		again := s.newClient(t, "acme", "alice")
		if code, _ := again.post("/admin/settings", url.Values{"approval_mode": {"agent"}}); code != http.StatusOK {
			t.Errorf("a weakening in an org that asks for no passkey: %d", code)
		}
	})
}

func ptrTo[T any](v T) *T { return &v }

// TestEmailChangesNeedAFreshVerification: changing one's own address needs
// the password (a passkey verification where the org approves by passkey),
// an admin's change of a member's address needs the admin's password (their
// passkey under the passkey factor) and never changes their own; each
// change mails the address it replaces, saying who made it. On both
// engines.
func TestEmailChangesNeedAFreshVerification(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		box := mailtest.Start(t)
		s := start(t, engine, withMail(box))
		s.org(t, "acme")
		ctx := dbtest.Operator()
		for _, id := range []string{"bob", "carol"} {
			if _, err := s.Orgs.SetEmail(ctx, "acme", id, id+"@example.com"); err != nil {
				t.Fatal(err)
			}
		}
		bob := s.newClient(t, "acme", "bob")
		for _, pw := range []string{"", "not-his-password"} {
			if code, _ := bob.post("/profile/email", url.Values{"email": {"agent@evil.test"}, "current_password": {pw}}); code != http.StatusUnauthorized {
				t.Errorf("own address with password %q: %d, want 401", pw, code)
			}
		}
		if got := s.member(t, "acme", "bob").Email; got != "bob@example.com" {
			t.Fatalf("bob's address changed without his password: %q", got)
		}
		if code, _ := bob.post("/profile/email", url.Values{"email": {"bob@new.example"}, "current_password": {userPW}}); code != http.StatusOK {
			t.Fatalf("own address with the password: %d", code)
		}
		if m := mailTo(t, box, 1, "bob@example.com", "was changed"); !strings.Contains(m.Text, "bob@new.example") || !strings.Contains(m.Text, "Someone signed in as you") {
			t.Errorf("the old address was told:\n%s", m.Text)
		}

		alice := s.newClient(t, "acme", "alice")
		if code, body := alice.post("/admin/members/carol/email", url.Values{"email": {"agent@evil.test"}}); code != http.StatusUnauthorized || !strings.Contains(body, "your own password is not right") {
			t.Errorf("an admin's change without their password: %d", code)
		}
		if code, _ := alice.post("/admin/members/alice/email", url.Values{"email": {"x@example.com"}, "your_password": {userPW}}); code != http.StatusForbidden {
			t.Errorf("an admin's own address through the admin path: %d, want 403", code)
		}
		if code, _ := alice.post("/admin/members/carol/email", url.Values{"email": {"carol@new.example"}, "your_password": {userPW}}); code != http.StatusOK {
			t.Fatalf("an admin's change with their password: %d", code)
		}
		if m := mailTo(t, box, 1, "carol@example.com", "was changed"); !strings.Contains(m.Text, "Alice, an admin of Org acme") || !strings.Contains(m.Text, "passkeys are still yours") {
			t.Errorf("carol's old address was told:\n%s", m.Text)
		}
		s.waitAuditEvent(t, "acme", "alice", "web:set_user_email", "ok", "carol")

		// Under the passkey factor the password is not enough.
		if _, err := s.Orgs.SetSettings(ctx, "acme", orgs.Settings{ApprovalFactor: orgs.FactorPasskey}); err != nil {
			t.Fatal(err)
		}
		if code, body := bob.post("/profile/email", url.Values{"email": {"agent@evil.test"}, "current_password": {userPW}}); code != http.StatusUnauthorized || !strings.Contains(body, "Verify it is you") {
			t.Errorf("own address with the password under the passkey factor: %d", code)
		}
		if code, body := alice.post("/admin/members/carol/email", url.Values{"email": {"agent@evil.test"}, "your_password": {userPW}}); code != http.StatusUnauthorized || !strings.Contains(body, "Verify it is you") {
			t.Errorf("an admin's change with the password under the passkey factor: %d", code)
		}
		if s.member(t, "acme", "bob").Email != "bob@new.example" || s.member(t, "acme", "carol").Email != "carol@new.example" {
			t.Fatal("an address changed under the passkey factor without a passkey")
		}
		fresh(t, s, "bob")
		if code, _ := bob.post("/profile/email", url.Values{"email": {"bob@third.example"}}); code != http.StatusOK {
			t.Errorf("own address after a passkey verification: %d", code)
		}
		mailTo(t, box, 1, "bob@new.example", "was changed")
	})
}

// TestAdminApprovesAFirstPasskey: a passkey waiting for confirmation is
// listed on the member's admin page; an admin approves it only after a
// passkey verification of their own, never their own; the member is told.
func TestAdminApprovesAFirstPasskey(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		box := mailtest.Start(t)
		s := start(t, engine, withMail(box))
		s.org(t, "acme")
		ctx := dbtest.Operator()
		if _, err := s.Orgs.SetEmail(ctx, "acme", "bob", "bob@example.com"); err != nil {
			t.Fatal(err)
		}
		for _, who := range []string{"bob", "alice"} {
			err := s.DB.Write(ctx, func(q db.Querier) error {
				_, err := q.Exec(ctx, `INSERT INTO passkeys (id, org_id, user_id, user_handle, name, credential, created_at, confirm_hash, confirm_expires_at) VALUES ($1, 'acme', $2, 'aGFuZGxl', 'Phone', '{}', $3, $4, $5)`,
					who+"key", who, time.Now().UTC(), who+"-hash", time.Now().UTC().Add(time.Hour))
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		alice := s.newClient(t, "acme", "alice")
		if _, body := alice.get("/admin/members/bob"); !strings.Contains(body, "waits for confirmation") || !strings.Contains(body, "/passkeys/bobkey/approve") {
			t.Errorf("bob's member page does not offer his waiting passkey")
		}
		if code, body := alice.post("/admin/members/bob/passkeys/bobkey/approve", url.Values{}); code != http.StatusUnauthorized || !strings.Contains(body, "Verify it is you") {
			t.Errorf("approval with a password session: %d", code)
		}
		if keys, _ := s.Auth.Passkeys(ctx, "acme", "bob"); !keys[0].Pending {
			t.Fatal("the passkey was approved without the admin's passkey")
		}
		fresh(t, s, "alice")
		if code, _ := alice.post("/admin/members/alice/passkeys/alicekey/approve", url.Values{}); code != http.StatusForbidden {
			t.Errorf("an admin approving their own passkey: %d, want 403", code)
		}
		if code, body := alice.post("/admin/members/bob/passkeys/bobkey/approve", url.Values{}); code != http.StatusOK || !strings.Contains(body, "Passkey approved") {
			t.Fatalf("approval after a passkey verification: %d", code)
		}
		if keys, _ := s.Auth.Passkeys(ctx, "acme", "bob"); keys[0].Pending {
			t.Fatal("the approved passkey still waits")
		}
		if code, _ := alice.post("/admin/members/bob/passkeys/bobkey/approve", url.Values{}); code != http.StatusNotFound {
			t.Errorf("approving it again: %d, want 404", code)
		}
		if m := mailTo(t, box, 1, "bob@example.com", "A passkey was approved"); !strings.Contains(m.Text, "Alice, an admin of Org acme (acme), approved") {
			t.Errorf("bob was told:\n%s", m.Text)
		}
		s.waitAuditEvent(t, "acme", "alice", "web:approve_passkey", "ok", "bob")
	})
}
