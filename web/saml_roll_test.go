package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/sso"
)

// TestSAMLKeyRoll: an admin rolls the org's SAML signing key (a member
// cannot: 403); the SP metadata then names the new certificate for signing
// and encryption and the old one for signing, the page shows both
// fingerprints, and neither private key is ever in a page, the metadata
// or the log. A sign-in in flight at the roll, whose assertion the
// provider encrypted to the old certificate, still completes; a new one
// is signed with the new key, which the provider checks. Once the grace
// has passed, the metadata names the new certificate alone. The roll is
// audited.
func TestSAMLKeyRoll(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		ctx := dbtest.Operator()
		s, idp := samlSite(t, engine)
		alice := s.newClient(t, "acme", "alice")
		if code, _ := alice.post("/admin/sso/roll-key", url.Values{}); code != http.StatusNotFound {
			t.Errorf("rolling before SAML is set up: %d, want 404", code)
		}
		configureSAML(t, s, alice, idp, "acme.test", url.Values{"link_by_email": {"on"}})
		keys := func() (key, cert string) {
			t.Helper()
			if err := s.DB.QueryRow(ctx, `SELECT sp_key, sp_cert FROM sso_providers WHERE org_id = 'acme'`).Scan(&key, &cert); err != nil {
				t.Fatal(err)
			}
			return key, cert
		}
		oldKey, oldCert := keys()

		// bob's sign-in, at the provider when the key rolls.
		idp.SetUser(testkit.SAMLUser{NameID: "idp-bob", Email: "bob@acme.test", Name: "Bob"})
		bob := s.anonymous(t)
		inFlight := samlBegin(t, bob, "acme")

		if code, _ := s.newClient(t, "acme", "bob").post("/admin/sso/roll-key", url.Values{}); code != http.StatusForbidden {
			t.Errorf("a member rolling the key: %d, want 403", code)
		}
		code, page := alice.post("/admin/sso/roll-key", url.Values{})
		if code != http.StatusOK || !strings.Contains(page, "SAML signing key rolled") || !strings.Contains(page, "still in the metadata") {
			t.Fatalf("rolling: %d %s", code, page)
		}
		newKey, newCert := keys()
		if newKey == oldKey || newCert == oldCert {
			t.Fatal("the roll kept the key")
		}
		_, md := s.anonymous(t).get(sso.MetadataPath("acme"))
		if strings.Count(md, derOf(newCert)) != 2 || strings.Count(md, derOf(oldCert)) != 1 || strings.Count(md, `use="signing"`) != 2 {
			t.Errorf("the metadata after the roll: the new certificate %d times (want 2: signing, encryption), the old %d (want 1: signing), %d signing keys:\n%s",
				strings.Count(md, derOf(newCert)), strings.Count(md, derOf(oldCert)), strings.Count(md, `use="signing"`), md)
		}

		if code, body := postSAML(t, bob, idp, inFlight); code != http.StatusOK || !strings.Contains(body, "bob · acme") {
			t.Errorf("the sign-in in flight at the roll: %d %s", code, body)
		}
		if code, body := samlSignIn(t, s.anonymous(t), idp, "acme"); code != http.StatusOK || !strings.Contains(body, "bob · acme") {
			t.Errorf("a sign-in after the roll: %d %s", code, body)
		}

		s.waitAuditEvent(t, "acme", "alice", "web:sso_roll_key", "ok", "")
		time.Sleep(100 * time.Millisecond)
		for _, k := range []string{oldKey, newKey} {
			body := strings.Join(strings.Split(strings.TrimSpace(k), "\n")[1:3], "\n")
			for where, text := range map[string]string{"the admin page": page, "the metadata": md, "the log": s.logs.String()} {
				if strings.Contains(text, body) {
					t.Errorf("%s shows a private key", where)
				}
			}
		}

		s.clock.advance(sso.KeyGrace + time.Minute)
		_, md = s.anonymous(t).get(sso.MetadataPath("acme"))
		if strings.Contains(md, derOf(oldCert)) || strings.Count(md, `use="signing"`) != 1 {
			t.Errorf("the metadata after the grace still offers the old certificate:\n%s", md)
		}
		if _, page := alice.get("/admin/sso"); strings.Contains(page, "still in the metadata") {
			t.Error("the admin page still shows the old key after the grace")
		}
	})
}
