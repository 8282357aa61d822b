package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/orgs"
)

// addPasskey stores a passkey record for userID directly: enough for the
// pages that list passkeys or count them, not for a ceremony.
func (s *site) addPasskey(t *testing.T, userID, id string) {
	t.Helper()
	ctx := dbtest.Operator()
	err := s.DB.Write(ctx, func(q db.Querier) error {
		_, err := q.Exec(ctx, `INSERT INTO passkeys (id, org_id, user_id, user_handle, name, credential, created_at) VALUES ($1, 'acme', $2, 'aGFuZGxl', 'Phone', '{}', $3)`,
			id, userID, time.Now().UTC())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRemovingTheOnlyPasskeyNeedsThePassword: without a fresh verification
// a removal asks for one and removes nothing; a wrong password removes
// nothing either; the password removes the person's only passkey. Another
// person's passkey is not found.
func TestRemovingTheOnlyPasskeyNeedsThePassword(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		s.addPasskey(t, "bob", "bobkey")
		s.addPasskey(t, "carol", "carolkey")
		bob, ctx := s.newClient(t, "acme", "bob"), dbtest.Operator()
		code, body := bob.post("/profile/passkeys/bobkey/remove", url.Values{})
		if code != http.StatusUnauthorized || !strings.Contains(body, "Verify it is you") {
			t.Fatalf("removal without a verification: %d %s", code, body)
		}
		code, body = bob.post("/profile/passkeys/bobkey/remove", url.Values{"password": {"not-his-password"}})
		if code != http.StatusUnauthorized || !strings.Contains(body, "This is not your password") {
			t.Fatalf("removal with a wrong password: %d %s", code, body)
		}
		if keys, _ := s.Auth.Passkeys(ctx, "acme", "bob"); len(keys) != 1 {
			t.Fatalf("the passkey was removed without a verification")
		}
		if code, _ := bob.post("/profile/passkeys/carolkey/remove", url.Values{"password": {userPW}}); code != http.StatusNotFound {
			t.Fatalf("removing carol's passkey: %d, want 404", code)
		}
		if keys, _ := s.Auth.Passkeys(ctx, "acme", "carol"); len(keys) != 1 {
			t.Fatalf("bob removed carol's passkey")
		}
		code, body = bob.post("/profile/passkeys/bobkey/remove", url.Values{"password": {userPW}})
		if code != http.StatusOK || !strings.Contains(body, "Passkey removed") {
			t.Fatalf("removal with the password: %d %s", code, body)
		}
		if keys, _ := s.Auth.Passkeys(ctx, "acme", "bob"); len(keys) != 0 {
			t.Fatalf("passkeys after removal: %+v", keys)
		}
	})
}

// TestRequirePasskeyGuidesAtSignIn: in an org that requires passkeys, a
// member signing in with a password without one lands on their profile's
// passkeys; with one, where they were going.
func TestRequirePasskeyGuidesAtSignIn(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		on := true
		if _, err := s.Orgs.SetSettings(dbtest.Operator(), "acme", orgs.Settings{RequirePasskey: &on}); err != nil {
			t.Fatal(err)
		}
		_, body := s.anonymous(t).post("/signin", url.Values{"org_id": {"acme"}, "user_id": {"bob"}, "password": {userPW}, "next": {"/asked"}})
		if !strings.Contains(body, "asks every member to have a passkey") || !strings.Contains(body, `id="passkeys"`) {
			t.Fatalf("bob without a passkey lands on %s", body)
		}
		s.addPasskey(t, "carol", "carolkey")
		_, body = s.anonymous(t).post("/signin", url.Values{"org_id": {"acme"}, "user_id": {"carol"}, "password": {userPW}, "next": {"/asked"}})
		if strings.Contains(body, "asks every member to have a passkey") || !strings.Contains(body, "<title>Asked") {
			t.Fatalf("carol with a passkey lands on %s", body)
		}
	})
}

// passkeyFactorSite starts a site whose org acme approves in human mode
// with the passkey factor, where bob, who has a passkey, has a draft of an
// answer to alice's question id waiting for his approval.
func passkeyFactorSite(t *testing.T, engine db.Engine) (s *site, id string) {
	t.Helper()
	s = start(t, engine)
	s.org(t, "acme")
	if _, err := s.Orgs.SetSettings(dbtest.Operator(), "acme", orgs.Settings{ApprovalMode: orgs.ApprovalHuman, ApprovalFactor: orgs.FactorPasskey}); err != nil {
		t.Fatal(err)
	}
	id = s.ask(t, "alice", "bob", "Ship it?")
	s.propose(t, id, "Yes.")
	s.addPasskey(t, "bob", "bobkey")
	return s, id
}

// TestPasskeyFactorHoldsWithAPassword: where approval_factor is passkey,
// a session begun with the password (all an agent told the password could
// get) approves, declines and decides posts nothing, and cannot switch the
// factor back to session; in session mode the approval is audited with the
// factor it used. Text typed into a refused form comes back on the step-up
// page, to be sent once verified.
func TestPasskeyFactorHoldsWithAPassword(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s, id := passkeyFactorSite(t, engine)
		ctx := dbtest.Operator()
		s.addPasskey(t, "alice", "alicekey")
		// At localhost, where passkeys are possible over http.
		bob := s.newClientAt(t, localhost(s), "acme", "bob")
		for _, form := range []struct {
			path string
			v    url.Values
		}{
			{"/inbox/" + id + "/approve", url.Values{"version": {"1"}}},
			{"/inbox/" + id + "/edit", url.Values{"version": {"1"}, "text": {"My own words"}}},
			{"/inbox/" + id + "/decline", url.Values{"reason": {"no"}}},
			{"/inbox/" + id + "/answer", url.Values{"text": {"no"}}},
			{"/inbox/posts/p_0123456789abcdef01234567/approve", url.Values{}},
		} {
			code, body := bob.post(form.path, form.v)
			if code != http.StatusUnauthorized || !strings.Contains(body, "asks for a passkey for every approval") || !strings.Contains(body, `action="`+form.path+`"`) {
				t.Fatalf("%s with a password session: %d %s", form.path, code, body)
			}
			if form.v.Get("text") == "My own words" && !strings.Contains(body, `value="My own words"`) {
				t.Fatalf("the step-up page lost what was typed: %s", body)
			}
		}
		if r, err := s.Inbox.Review(ctx, acme("bob"), id); err != nil || r.Latest().Approved || r.Status != "pending" {
			t.Fatalf("the question changed without a passkey: %+v %v", r, err)
		}
		alice := s.newClient(t, "acme", "alice")
		if code, body := alice.post("/admin/settings", url.Values{"approval_factor": {"session"}}); code != http.StatusUnauthorized {
			t.Fatalf("switching the factor off with a password session: %d %s", code, body)
		}
		if o, _ := s.Orgs.Org(ctx, "acme"); o.ApprovalFactor != orgs.FactorPasskey {
			t.Fatalf("approval_factor = %q after a password session's change", o.ApprovalFactor)
		}

		// In session mode the same approval goes through, audited with
		// its factor.
		if _, err := s.Orgs.SetSettings(ctx, "acme", orgs.Settings{ApprovalFactor: orgs.FactorSession}); err != nil {
			t.Fatal(err)
		}
		if code, body := bob.post("/inbox/"+id+"/approve", url.Values{"version": {"1"}}); code != http.StatusOK || !strings.Contains(body, "Approved") {
			t.Fatalf("approval in session mode: %d %s", code, body)
		}
		testkit.WaitFor(t, 10*time.Second, "the approval's audit event", func() (bool, error) {
			evs, _, err := s.Audit.Events(ctx, "acme", audit.Filter{Limit: 50})
			for _, e := range evs {
				if e.Tool == "web:approve_draft" && e.Outcome == "ok" {
					return e.Factor == "password_session", err
				}
			}
			return false, err
		})
	})
}

// TestPasskeysAtAnAddressAreNotOffered: reached at an IP address, where no
// passkey is possible, the profile offers no "Add a passkey" and the
// step-up page no ceremony, each saying to open ctalk at its name; at a
// name (localhost) both offer them. On both engines.
func TestPasskeysAtAnAddressAreNotOffered(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s, id := passkeyFactorSite(t, engine)
		for _, c := range []struct {
			base  string
			offer bool
		}{{localhost(s), true}, {s.URL, false}} {
			bob := s.newClientAt(t, c.base, "acme", "bob")
			_, profile := bob.get("/profile")
			_, stepUp := bob.post("/inbox/"+id+"/approve", url.Values{"version": {"1"}})
			for what, body := range map[string]string{"profile": profile, "step-up page": stepUp} {
				offered := strings.Contains(body, `data-passkey="register"`) || strings.Contains(body, `data-passkey="verify"`)
				said := strings.Contains(body, `id="passkeys-at-address"`)
				if offered != c.offer || said == c.offer {
					t.Fatalf("%s at %s: passkey offered %v, address note %v; want offered %v:\n%s", what, c.base, offered, said, c.offer, body)
				}
			}
		}
	})
}
