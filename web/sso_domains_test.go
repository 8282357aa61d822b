package web_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestSSODomainsProvenByDNS, over real HTTP: an admin adds an email domain
// on /admin/sso and sees the TXT record to publish; until ctalk finds it
// (missing, or another value: refused, saying what to publish), an address
// at the domain reaches no provider from the sign-in page; verified, it
// does. Another org's admin cannot verify or remove the domain (404), nor
// claim it; a member cannot add one (403). Each addition and verification,
// refused or not, is in the audit log with the domain's id.
func TestSSODomainsProvenByDNS(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		ctx := dbtest.Operator()
		op := testkit.NewOpenIDProvider(t, "ctalk-acme", ssoSecret)
		s := startSSO(t, engine)
		s.org(t, "acme")
		s.org(t, "beta")
		if _, err := s.Orgs.SetEmail(ctx, "acme", "bob", "bob@acme.test"); err != nil {
			t.Fatal(err)
		}
		alice := s.newClient(t, "acme", "alice")
		configureSSO(t, alice, op, url.Values{"link_by_email": {"on"}})

		if code, body := alice.post("/admin/sso/domains", url.Values{"domain": {"not a domain"}}); code != http.StatusBadRequest || !strings.Contains(body, `id="sso-domain-error"`) {
			t.Errorf("a domain that is not one: %d", code)
		}
		if code, _ := s.newClient(t, "acme", "bob").post("/admin/sso/domains", url.Values{"domain": {"acme.test"}}); code != http.StatusForbidden {
			t.Errorf("a member adding a domain: %d, want 403", code)
		}
		code, body := alice.post("/admin/sso/domains", url.Values{"domain": {"acme.test"}})
		m := recordShown.FindStringSubmatch(body)
		if code != http.StatusOK || m == nil || !strings.Contains(body, "Publish its TXT record") {
			t.Fatalf("adding acme.test: %d %s", code, body)
		}
		record, value, verify := m[1], m[2], m[3]
		domainID := strings.Split(verify, "/")[4]

		// Pending: the sign-in page sends nobody on by the address.
		if code, body := s.anonymous(t).post("/sso/start", url.Values{"org": {"bob@acme.test"}}); code != http.StatusNotFound || !strings.Contains(body, "no organization signs in acme.test") {
			t.Errorf("an address at a pending domain: %d %s", code, body)
		}
		if code, body := alice.post(verify, url.Values{}); code != http.StatusBadRequest || !strings.Contains(body, "no TXT record at "+record) || !strings.Contains(body, value) {
			t.Errorf("verifying before the record: %d %s", code, body)
		}
		s.dns.SetTXT(record, "ctalk-verification=0000")
		if code, body := alice.post(verify, url.Values{}); code != http.StatusBadRequest || !strings.Contains(body, "do not hold") {
			t.Errorf("verifying with another value: %d %s", code, body)
		}
		s.dns.SetTXT(record, value)

		// beta: acme's domain is not found, whatever it tries.
		beta := s.newClient(t, "beta", "alice")
		for _, path := range []string{verify, "/admin/sso/domains/" + domainID + "/remove"} {
			if code, _ := beta.post(path, url.Values{}); code != http.StatusNotFound {
				t.Errorf("beta posting %s: %d, want 404", path, code)
			}
		}
		if code, body := alice.post(verify, url.Values{}); code != http.StatusOK || !strings.Contains(body, "Domain verified") || !strings.Contains(body, "Verified") {
			t.Fatalf("verifying: %d %s", code, body)
		}
		if code, _ := beta.post("/admin/sso/domains", url.Values{"domain": {"acme.test"}}); code != http.StatusConflict {
			t.Errorf("beta claiming a domain acme verified: %d, want 409", code)
		}
		if _, page := beta.get("/admin/sso"); strings.Contains(page, "acme.test") {
			t.Error("beta's page shows acme's domain")
		}
		op.SetUser(testkit.OIDCUser{Subject: "idp-bob", Email: "bob@acme.test", EmailVerified: true})
		bob := s.anonymous(t)
		if code, body := ssoSignIn(t, bob, "bob@acme.test"); code != http.StatusOK || !strings.Contains(body, "bob · acme") {
			t.Errorf("bob's sign-in by a verified domain: %d %s", code, body)
		}

		var got []string
		testkit.WaitFor(t, 10*time.Second, "the domain's events in the audit log", func() (bool, error) {
			evs, _, err := s.Audit.Events(ctx, "acme", audit.Filter{Limit: 100})
			got = got[:0]
			for _, e := range evs {
				if strings.HasPrefix(e.Tool, "web:sso_domain") && slices.Contains(e.IDs, domainID) {
					got = append(got, e.Tool+" "+e.Outcome)
				}
			}
			return len(got) >= 4, err
		})
		slices.Sort(got)
		if want := []string{"web:sso_domain_add ok", "web:sso_domain_verify invalid", "web:sso_domain_verify invalid", "web:sso_domain_verify ok"}; !slices.Equal(got, want) {
			t.Errorf("audited %q, want %q", got, want)
		}
		if evs, _, _ := s.Audit.Events(ctx, "beta", audit.Filter{Limit: 100}); slices.ContainsFunc(evs, func(e audit.Event) bool { return e.Tool == "web:sso_domain_verify" && e.Outcome == "ok" }) {
			t.Error("beta's refused attempts were recorded as verifications")
		}
	})
}
