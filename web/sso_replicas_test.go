package web_test

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ctalk/ctalk/api/apitest"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/sso"
)

// switchboard is a load balancer in front of two replicas that sends each
// request, the identity providers' included, to the replica the test
// chose last: the public URL of both.
type switchboard struct {
	URL string
	to  atomic.Pointer[url.URL]
}

func newSwitchboard(t *testing.T) *switchboard {
	t.Helper()
	sb := &switchboard{}
	srv := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(sb.to.Load())
		r.Out.Host = r.In.Host
	}})
	t.Cleanup(srv.Close)
	sb.URL = srv.URL
	return sb
}

// use sends the requests from now on to s.
func (sb *switchboard) use(s *site) {
	u, _ := url.Parse(s.URL)
	sb.to.Store(u)
}

// ssoReplicas starts two servers with single sign-on on one Postgres
// database behind a switchboard, which sends to the first, and the org
// acme on them, whose bob has the address bob@acme.test.
func ssoReplicas(t *testing.T) (one, two *site, sb *switchboard) {
	t.Helper()
	sb = newSwitchboard(t)
	public := func(w *app.Wiring) { w.API.PublicURL = sb.URL }
	one = startSSO(t, db.Postgres, public)
	s := apitest.Start(t, one.DB, withSSO(one.dns), public)
	two = &site{URL: s.URL, DB: s.DB, Assembly: s.Assembly, logs: s.Logs, clock: one.clock, dns: one.dns}
	sb.use(one)
	one.org(t, "acme")
	if _, err := one.Orgs.SetEmail(dbtest.Operator(), "acme", "bob", "bob@acme.test"); err != nil {
		t.Fatal(err)
	}
	return one, two, sb
}

// anonymousAt is a client of the site at base, with no one signed in.
func (s *site) anonymousAt(t *testing.T, base string) *client {
	c := s.anonymous(t)
	c.base = base
	return c
}

// TestOIDCAcrossReplicas: two servers on one Postgres database behind a
// balancer. A sign-in begun on one (its state, nonce and PKCE verifier)
// completes on the other; the admin's change of the provider, or of
// sso_required, on one is what the other uses at the next request.
func TestOIDCAcrossReplicas(t *testing.T) {
	t.Parallel()
	one, two, sb := ssoReplicas(t)
	op := testkit.NewOpenIDProvider(t, "ctalk-acme", ssoSecret)
	alice := one.newClientAt(t, sb.URL, "acme", "alice")
	configureSSO(t, alice, op, url.Values{"link_by_email": {"on"}})
	one.proveDomain(t, alice, "acme.test")

	op.SetUser(testkit.OIDCUser{Subject: "idp-bob", Email: "bob@acme.test", EmailVerified: true, Name: "Bob"})
	bob := one.anonymousAt(t, sb.URL)
	back := atProvider(t, bob, ssoBegin(t, bob, "/sso/start", url.Values{"org": {"acme"}}))
	sb.use(two)
	if code, body := bob.get(strings.TrimPrefix(back, sb.URL)); code != http.StatusOK || !strings.Contains(body, "bob · acme") {
		t.Fatalf("a sign-in begun on the first server, back on the second: %d %s", code, body)
	}

	// A second provider, set on the first server, is where the second
	// sends the next sign-in.
	sb.use(one)
	op2 := testkit.NewOpenIDProvider(t, "ctalk-acme-2", ssoSecret)
	configureSSO(t, alice, op2, url.Values{"link_by_email": {"on"}})
	sb.use(two)
	if to := ssoBegin(t, one.anonymousAt(t, sb.URL), "/sso/start", url.Values{"org": {"acme"}}); !strings.HasPrefix(to, op2.URL+"/") {
		t.Errorf("the second server sends a sign-in to %s after the provider changed to %s on the first", to, op2.URL)
	}

	// sso_required, turned on by the first server, holds on the second.
	sb.use(one)
	op2.SetUser(testkit.OIDCUser{Subject: "idp-alice", Email: "alice@acme.test", EmailVerified: true, Name: "Alice"})
	back = atProvider(t, alice, ssoBegin(t, alice, "/admin/sso/test", url.Values{}))
	if code, body := alice.get(strings.TrimPrefix(back, sb.URL)); code != http.StatusOK || !strings.Contains(body, "Test sign-in succeeded") {
		t.Fatalf("the test sign-in: %d %s", code, body)
	}
	if code, body := alice.post("/admin/sso/required", url.Values{"required": {"on"}}); code != http.StatusUnauthorized || !strings.Contains(body, "break-glass") {
		t.Fatalf("requiring: %d %s", code, body)
	}
	sb.use(two)
	if code, body := one.anonymousAt(t, sb.URL).post("/signin", url.Values{"org_id": {"acme"}, "user_id": {"bob"}, "password": {userPW}}); code != http.StatusForbidden || !strings.Contains(body, "requires single sign-on") {
		t.Errorf("bob's password sign-in on the second server after sso_required on the first: %d", code)
	}
}

// TestSAMLAcrossReplicas: two servers on one Postgres database behind a
// balancer. An assertion accepted by one is refused by the other as a
// replay; a sign-in begun on one completes on the other; the SAML key
// rolled on one is the one the other's metadata names and signs with at
// once, and a sign-in begun on it before the roll still completes there.
func TestSAMLAcrossReplicas(t *testing.T) {
	t.Parallel()
	one, two, sb := ssoReplicas(t)
	idp := testkit.NewSAMLProvider(t)
	alice := one.newClientAt(t, sb.URL, "acme", "alice")
	configureSAML(t, one, alice, idp, "acme.test", url.Values{"link_by_email": {"on"}})
	idp.SetUser(testkit.SAMLUser{NameID: "idp-bob", Email: "bob@acme.test", Name: "Bob"})

	// The provider issues one assertion ID twice, each in a response to a
	// sign-in of its own: the first on the first server, the second on
	// the second.
	idp.Fault(testkit.SAMLFault{AssertionID: "id-assertion-once"})
	if code, body := samlSignIn(t, one.anonymousAt(t, sb.URL), idp, "acme"); code != http.StatusOK || !strings.Contains(body, "bob · acme") {
		t.Fatalf("the first use of the assertion, on the first server: %d %s", code, body)
	}
	sb.use(two)
	idp.Fault(testkit.SAMLFault{AssertionID: "id-assertion-once"})
	if code, body := samlSignIn(t, one.anonymousAt(t, sb.URL), idp, "acme"); code != http.StatusUnauthorized || !strings.Contains(body, "accepted once already") {
		t.Errorf("the assertion again, on the second server: %d, want 401 saying it was accepted once already: %s", code, body)
	}

	// Begun on the second server, the key rolled on the first, posted
	// back to the second.
	bob := one.anonymousAt(t, sb.URL)
	inFlight := samlBegin(t, bob, "acme")
	sb.use(one)
	var oldCert string
	if err := one.DB.QueryRow(dbtest.Operator(), `SELECT sp_cert FROM sso_providers WHERE org_id = 'acme'`).Scan(&oldCert); err != nil {
		t.Fatal(err)
	}
	if code, page := alice.post("/admin/sso/roll-key", url.Values{}); code != http.StatusOK || !strings.Contains(page, "SAML signing key rolled") {
		t.Fatalf("rolling on the first server: %d %s", code, page)
	}
	var newCert string
	if err := one.DB.QueryRow(dbtest.Operator(), `SELECT sp_cert FROM sso_providers WHERE org_id = 'acme'`).Scan(&newCert); err != nil {
		t.Fatal(err)
	}
	sb.use(two)
	_, md := one.anonymousAt(t, sb.URL).get(sso.MetadataPath("acme"))
	if strings.Count(md, derOf(newCert)) != 2 || strings.Count(md, derOf(oldCert)) != 1 {
		t.Errorf("the second server's metadata after the roll on the first names the new certificate %d times (want 2), the old %d (want 1):\n%s",
			strings.Count(md, derOf(newCert)), strings.Count(md, derOf(oldCert)), md)
	}
	if code, body := postSAML(t, bob, idp, inFlight); code != http.StatusOK || !strings.Contains(body, "bob · acme") {
		t.Errorf("the sign-in in flight at the roll, back on the second server: %d %s", code, body)
	}
	// Begun on the second server, checked by the provider against the
	// first's metadata (the new certificate alone would do), posted back
	// to the first.
	c := one.anonymousAt(t, sb.URL)
	authURL := ssoBegin(t, c, "/sso/start", url.Values{"org": {"acme"}})
	if !signedBy(t, authURL, newCert) {
		t.Error("the second server signed its AuthnRequest with another key than the one rolled on the first")
	}
	sb.use(one)
	if code, body := postSAML(t, c, idp, atSAMLProvider(t, c, authURL)); code != http.StatusOK || !strings.Contains(body, "bob · acme") {
		t.Errorf("a sign-in after the roll, begun on the second server: %d %s", code, body)
	}
}

// derOf is the base64 DER of a PEM certificate, as metadata holds it.
func derOf(certPEM string) string {
	b, _ := pem.Decode([]byte(certPEM))
	return base64.StdEncoding.EncodeToString(b.Bytes)
}

// signedBy reports whether the AuthnRequest of authURL, of the
// HTTP-Redirect binding, is signed by the key of the PEM certificate.
func signedBy(t *testing.T, authURL, certPEM string) bool {
	t.Helper()
	u, err := url.Parse(authURL)
	if err != nil {
		t.Fatal(err)
	}
	var signed []string
	for _, name := range []string{"SAMLRequest", "RelayState", "SigAlg"} {
		for _, part := range strings.Split(u.RawQuery, "&") {
			if strings.HasPrefix(part, name+"=") {
				signed = append(signed, part)
			}
		}
	}
	sig, err := base64.StdEncoding.DecodeString(u.Query().Get("Signature"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode([]byte(certPEM))
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(strings.Join(signed, "&")))
	return rsa.VerifyPKCS1v15(cert.PublicKey.(*rsa.PublicKey), crypto.SHA256, sum[:], sig) == nil
}
