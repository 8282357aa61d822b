package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// goodSignup is a sign-up form with every field right.
func goodSignup() url.Values {
	return url.Values{"org_id": {"newco"}, "org_name": {"New Co"}, "admin_password": {adminPW},
		"user_id": {"nina"}, "name": {"Nina"}, "password": {userPW}, "ownership": {"billing, infra"}, "approval_mode": {"agent"}}
}

// TestSignUpErrorsByField: every mistake of the sign-up form is shown next
// to its field at once, what was typed (but passwords) stays, and nothing
// is created; a right form signs the person in and lands them in the app.
func TestSignUpErrorsByField(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		anon := s.anonymous(t)
		bad := goodSignup()
		bad.Set("org_id", "New Co!")
		bad.Set("admin_password", "too-short")
		bad.Set("password", "short")
		bad.Set("ownership", strings.Repeat("o", 201))
		code, page := anon.post("/signup", bad)
		if code != http.StatusBadRequest {
			t.Fatalf("a form with four mistakes: %d, want 400", code)
		}
		mustShow(t, "four mistakes", page, `id="org_id-error"`, `id="admin_password-error"`, `id="password-error"`, `id="ownership-error"`,
			"Nothing was created", `value="New Co!"`, `value="nina"`, "Your password must be at least 8", "The admin password must be at least 12")
		mustNotShow(t, "four mistakes", page, `id="org_name-error"`, `id="user_id-error"`, `id="name-error"`, "too-short")
		if _, err := s.Orgs.Org(dbtest.Operator(), "newco"); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Fatalf("a refused form created newco: %v", err)
		}

		// A mistake in the person's fields alone leaves no organization
		// behind without its admin.
		onlyOwnership := goodSignup()
		onlyOwnership.Set("ownership", strings.Repeat("a,", 60))
		if code, page := anon.post("/signup", onlyOwnership); code != http.StatusBadRequest || !strings.Contains(page, `id="ownership-error"`) {
			t.Fatalf("too many areas owned: %d, want 400 with the error next to ownership\n%s", code, page)
		}
		if _, err := s.Orgs.Org(dbtest.Operator(), "newco"); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Fatalf("a refused person created newco: %v", err)
		}

		// The admin chooses how answers are approved: the form assumes
		// neither mode, and refuses one it does not know.
		for _, mode := range []string{"", "people"} {
			unchosen := goodSignup()
			unchosen.Set("approval_mode", mode)
			code, page := anon.post("/signup", unchosen)
			if code != http.StatusBadRequest {
				t.Fatalf("approval mode %q: %d, want 400", mode, code)
			}
			mustShow(t, "approval mode "+mode, page, `id="approval_mode-error"`, `aria-describedby="approval_mode-error"`)
		}
		if _, err := s.Orgs.Org(dbtest.Operator(), "newco"); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Fatalf("a form without an approval mode created newco: %v", err)
		}
		// Names are one line: a stranger cannot write a line of a mail.
		twoLines := goodSignup()
		twoLines.Set("name", "Nina\r\nReset your password: https://evil.test")
		twoLines.Set("org_name", "New Co\nUrgent")
		code, page = anon.post("/signup", twoLines)
		if code != http.StatusBadRequest {
			t.Fatalf("names of two lines: %d, want 400", code)
		}
		mustShow(t, "names of two lines", page, `id="name-error"`, `id="org_name-error"`, "Your name contains a line break", "The organization name contains a line break")
		if _, err := s.Orgs.Org(dbtest.Operator(), "newco"); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Fatalf("a refused name created newco: %v", err)
		}

		// An id that is taken is the org id's mistake.
		taken := goodSignup()
		taken.Set("org_id", "acme")
		code, page = anon.post("/signup", taken)
		if code != http.StatusConflict {
			t.Fatalf("a taken org id: %d, want 409", code)
		}
		mustShow(t, "a taken org id", page, `id="org_id-error"`, "is taken")

		if code, _ := anon.postRaw("/signup", goodSignup()); code != http.StatusForbidden {
			t.Errorf("sign-up without CSRF: %d, want 403", code)
		}
		human := goodSignup()
		human.Set("approval_mode", "human")
		code, page = anon.post("/signup", human)
		if code != http.StatusOK {
			t.Fatalf("sign-up: %d\n%s", code, page)
		}
		if o, err := s.Orgs.Org(dbtest.Operator(), "newco"); err != nil || o.ApprovalMode != "human" {
			t.Errorf("newco signed up choosing human approval: %+v, %v", o, err)
		}
		mustShow(t, "after sign-up", page, `<a href="/inbox" aria-current="page"`, "nina · newco")
		if u := s.member(t, "newco", "nina"); u.Role != "admin" || strings.Join(u.Ownership, "|") != "billing|infra" {
			t.Errorf("nina: %+v, want the admin owning billing and infra", u)
		}
	})
}

// TestSignUpRules: the web form follows register_organization's rules: the
// per-address sign-up rate, and on a closed server the sign-up secret, whose
// mistake shows next to it.
func TestSignUpRules(t *testing.T) {
	t.Parallel()
	t.Run("rate", func(t *testing.T) {
		s := start(t, db.SQLite, func(w *app.Wiring) { w.Auth.SignupBurst, w.Auth.SignupRate = 2, 1e-9 })
		anon := s.anonymous(t)
		for i, id := range []string{"one", "two"} {
			f := goodSignup()
			f.Set("org_id", id)
			if code, page := anon.post("/signup", f); code != http.StatusOK {
				t.Fatalf("sign-up %d: %d\n%s", i, code, page)
			}
			anon = s.anonymous(t)
		}
		code, page := anon.post("/signup", goodSignup())
		if code != http.StatusTooManyRequests {
			t.Fatalf("third sign-up from one address: %d, want 429", code)
		}
		mustShow(t, "over the rate", page, `id="form-error"`)
	})
	t.Run("secret", func(t *testing.T) {
		s := start(t, dbtest.Engines[0], func(w *app.Wiring) { w.API.AllowOrgSignup, w.API.SignupSecret = false, "operator-secret" })
		anon := s.anonymous(t)
		_, page := anon.get("/signup")
		mustShow(t, "closed sign-up", page, `id="signup_secret"`)
		f := goodSignup()
		f.Set("signup_secret", "a guess")
		code, page := anon.post("/signup", f)
		if code != http.StatusForbidden {
			t.Fatalf("a wrong secret: %d, want 403", code)
		}
		mustShow(t, "a wrong secret", page, `id="signup_secret-error"`)
		f.Set("signup_secret", "operator-secret")
		if code, page := anon.post("/signup", f); code != http.StatusOK || !strings.Contains(page, "nina · newco") {
			t.Fatalf("the right secret: %d\n%s", code, page)
		}
	})
}
