package web_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/sso"
)

// TestLapsedDomainIsAudited: the server's own re-check finds that a
// verified domain's TXT record is gone a day after it was verified: the
// domain is pending again on the admin page, with its record to publish,
// and its org's audit log says so.
func TestLapsedDomainIsAudited(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := startSSO(t, engine, func(w *app.Wiring) { w.SSO.RecheckEvery = 20 * time.Millisecond })
		s.org(t, "acme")
		alice := s.newClient(t, "acme", "alice")
		configureSSO(t, alice, testkit.NewOpenIDProvider(t, "ctalk-acme", ssoSecret), url.Values{"link_by_email": {"on"}})
		s.proveDomain(t, alice, "acme.test")
		s.dns.SetTXT("_ctalk.acme.test")
		s.clock.advance(sso.DomainRecheck + time.Minute)
		s.waitAuditEvent(t, "acme", "", "sso:domain_lapsed", "ok", "dom_")
		// A day later, alice signs in anew.
		if _, page := s.newClient(t, "acme", "alice").get("/admin/sso"); recordShown.FindStringSubmatch(page) == nil {
			t.Errorf("the admin page does not show the lapsed domain pending with its record:\n%s", page)
		}
	})
}
