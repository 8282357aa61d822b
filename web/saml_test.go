package web_test

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/beevik/etree"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/sso"
	"github.com/ctalk/ctalk/web"
)

// atSAMLProvider opens the provider's address in c's browser and returns
// the page it answers with: the form that posts its response back.
func atSAMLProvider(t *testing.T, c *client, authURL string) string {
	t.Helper()
	resp, err := c.http.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	code, page := read(t, resp)
	if code != http.StatusOK {
		t.Fatalf("the SAML provider answered %d: %s", code, page)
	}
	return page
}

// postSAML posts the provider's form in page from c's browser, as a
// browser posts another site's form (its Origin, Sec-Fetch-Site
// cross-site), following redirects, and returns the final page.
func postSAML(t *testing.T, c *client, idp *testkit.SAMLProvider, page string) (int, string) {
	t.Helper()
	action, form := testkit.SAMLForm(t, page)
	return postSAMLForm(t, c, idp, action, form)
}

// postSAMLChanged posts the provider's form in page as postSAML does, its
// response changed by change first, as an attacker who holds a response
// of their own changes it.
func postSAMLChanged(t *testing.T, c *client, idp *testkit.SAMLProvider, page string, change func(t *testing.T, response *etree.Element)) (int, string) {
	t.Helper()
	action, form := testkit.SAMLForm(t, page)
	raw, err := base64.StdEncoding.DecodeString(form.Get("SAMLResponse"))
	if err != nil {
		t.Fatal(err)
	}
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(raw); err != nil {
		t.Fatal(err)
	}
	change(t, doc.Root())
	if raw, err = doc.WriteToBytes(); err != nil {
		t.Fatal(err)
	}
	form.Set("SAMLResponse", base64.StdEncoding.EncodeToString(raw))
	return postSAMLForm(t, c, idp, action, form)
}

// postSAMLForm posts form to action from c's browser, as a browser posts
// another site's form (its Origin, Sec-Fetch-Site cross-site), following
// redirects, and returns the final page.
func postSAMLForm(t *testing.T, c *client, idp *testkit.SAMLProvider, action string, form url.Values) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, action, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", idp.URL)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return read(t, resp)
}

// samlBegin begins a sign-in at org's provider in c's browser and returns
// the provider's page.
func samlBegin(t *testing.T, c *client, org string) string {
	t.Helper()
	return atSAMLProvider(t, c, ssoBegin(t, c, "/sso/start", url.Values{"org": {org}}))
}

// samlSignIn signs in c through org's SAML provider and returns the final
// page.
func samlSignIn(t *testing.T, c *client, idp *testkit.SAMLProvider, org string) (int, string) {
	t.Helper()
	return postSAML(t, c, idp, samlBegin(t, c, org))
}

// configureSAML has admin set up idp by its metadata URL, with the given
// options, and proves domain unless it is "".
func configureSAML(t *testing.T, s *site, admin *client, idp *testkit.SAMLProvider, domain string, extra url.Values) {
	t.Helper()
	form := url.Values{"kind": {"saml"}, "metadata_url": {idp.URL + "/metadata"}}
	for k, v := range extra {
		form[k] = v
	}
	if code, body := admin.post("/admin/sso", form); code != http.StatusOK || !strings.Contains(body, "Single sign-on saved") {
		t.Fatalf("saving SAML: %d %s", code, body)
	}
	if domain != "" {
		s.proveDomain(t, admin, domain)
	}
}

// samlSite starts a site with single sign-on and the org acme, whose bob
// has the address bob@acme.test, and a SAML provider.
func samlSite(t *testing.T, engine db.Engine) (*site, *testkit.SAMLProvider) {
	t.Helper()
	s := startSSO(t, engine)
	s.org(t, "acme")
	if _, err := s.Orgs.SetEmail(dbtest.Operator(), "acme", "bob", "bob@acme.test"); err != nil {
		t.Fatal(err)
	}
	return s, testkit.NewSAMLProvider(t)
}

// TestSAMLSignIn: an admin sets up a SAML provider by its metadata URL
// (bad metadata, or an address that is not public, is refused), sees the
// entity ID and ACS URL to enter, and ctalk serves the org's SP metadata
// with its signing certificate, never its key; the provider, which wants
// signed requests, signs in the admin's test login, after which single
// sign-on can be required; a member signs in by their email's domain and
// can no longer use a password; a transient NameID is refused; the same
// metadata pasted keeps the test and the requirement; just-in-time
// members are made; the admin's password opens only the break-glass.
func TestSAMLSignIn(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		ctx := dbtest.Operator()
		s, idp := samlSite(t, engine)
		alice := s.newClient(t, "acme", "alice")
		for _, tc := range []struct {
			name string
			form url.Values
			want string
		}{
			{"not metadata", url.Values{"kind": {"saml"}, "metadata": {"<html>hello</html>"}}, "not a SAML identity provider"},
			{"no metadata", url.Values{"kind": {"saml"}}, "metadata is required"},
			{"a private address", url.Values{"kind": {"saml"}, "metadata_url": {"http://10.1.2.3/metadata"}}, "must be public"},
		} {
			if code, body := alice.post("/admin/sso", tc.form); code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
				t.Errorf("%s: %d, want 400 saying %q", tc.name, code, tc.want)
			}
		}
		configureSAML(t, s, alice, idp, "acme.test", url.Values{"link_by_email": {"on"}})
		entityID, acs := s.URL+sso.MetadataPath("acme"), s.URL+sso.ACSPath
		if _, body := alice.get("/admin/sso"); !strings.Contains(body, entityID) || !strings.Contains(body, acs) {
			t.Errorf("the admin page does not show the entity ID and ACS URL: %s", body)
		}
		code, md := s.anonymous(t).get(sso.MetadataPath("acme"))
		for _, want := range []string{`entityID="` + entityID + `"`, `Location="` + acs + `"`, `AuthnRequestsSigned="true"`, "X509Certificate"} {
			if code != http.StatusOK || !strings.Contains(md, want) {
				t.Errorf("the SP metadata (%d) lacks %s: %s", code, want, md)
			}
		}
		if code, _ := s.anonymous(t).get(sso.MetadataPath("nobody")); code != http.StatusNotFound {
			t.Errorf("the SP metadata of an org without SAML: %d, want 404", code)
		}
		if code, body := alice.post("/admin/sso/required", url.Values{"required": {"on"}}); code != http.StatusConflict {
			t.Fatalf("requiring before a test: %d %s", code, body)
		}
		idp.SetUser(testkit.SAMLUser{NameID: "idp-alice", Email: "alice@acme.test", Name: "Alice"})
		if code, body := postSAML(t, alice, idp, atSAMLProvider(t, alice, ssoBegin(t, alice, "/admin/sso/test", url.Values{}))); code != http.StatusOK || !strings.Contains(body, "Test sign-in succeeded") {
			t.Fatalf("the test sign-in: %d %s", code, body)
		}
		if code, body := alice.post("/admin/sso/required", url.Values{"required": {"on"}}); code != http.StatusUnauthorized || !strings.Contains(body, "break-glass") {
			t.Fatalf("requiring: %d %s", code, body)
		}
		alice = s.anonymous(t)
		if code, body := samlSignIn(t, alice, idp, "acme"); code != http.StatusOK || !strings.Contains(body, "alice · acme") {
			t.Fatalf("alice's sign-in through SAML: %d %s", code, body)
		}

		// bob, by his email's domain, linked by his address, returns to
		// the page he came from (as from the OAuth sign-in page).
		idp.SetUser(testkit.SAMLUser{NameID: "idp-bob", Email: "bob@acme.test", Name: "Bob"})
		bob := s.anonymous(t)
		page := atSAMLProvider(t, bob, ssoBegin(t, bob, "/sso/start", url.Values{"org": {"bob@acme.test"}, "next": {"/profile"}}))
		if code, body := postSAML(t, bob, idp, page); code != http.StatusOK || !strings.Contains(body, "bob · acme") || !strings.Contains(body, "bob@acme.test") {
			t.Fatalf("bob's sign-in: %d %s", code, body)
		}
		if code, body := s.anonymous(t).post("/signin", url.Values{"org_id": {"acme"}, "user_id": {"bob"}, "password": {userPW}}); code != http.StatusForbidden || !strings.Contains(body, "requires single sign-on") {
			t.Errorf("bob's password sign-in under sso_required: %d", code)
		}
		idp.SetUser(testkit.SAMLUser{NameID: "x-1", NameIDFormat: "urn:oasis:names:tc:SAML:2.0:nameid-format:transient", Email: "bob@acme.test"})
		if code, body := samlSignIn(t, s.anonymous(t), idp, "acme"); code != http.StatusUnauthorized || !strings.Contains(body, "transient") {
			t.Errorf("a transient NameID: %d %s", code, body)
		}

		// The same metadata pasted, with just-in-time members: still
		// tested and required.
		configureSAML(t, s, alice, idp, "", url.Values{"metadata_url": {""}, "metadata": {idp.Metadata(t)}, "link_by_email": {"on"}, "jit": {"on"}})
		if on, err := s.SSO.Required(ctx, "acme"); err != nil || !on {
			t.Errorf("the same metadata pasted turned sso_required off: %v %v", on, err)
		}
		idp.SetUser(testkit.SAMLUser{NameID: "idp-dave", Email: "dave@acme.test", Name: "Dave Doe"})
		if code, _ := samlSignIn(t, s.anonymous(t), idp, "acme"); code != http.StatusOK {
			t.Fatalf("dave's first sign-in: %d", code)
		}
		if u, err := s.Orgs.User(ctx, "acme", "dave"); err != nil || u.Name != "Dave Doe" || u.Email != "dave@acme.test" {
			t.Errorf("the member made just in time: %+v %v", u, err)
		}
		if code, body := s.anonymous(t).post("/signin", url.Values{"org_id": {"acme"}, "user_id": {"alice"}, "password": {userPW}}); code != http.StatusUnauthorized || !strings.Contains(body, "break-glass") {
			t.Errorf("alice's password sign-in under sso_required: %d", code)
		}
		time.Sleep(100 * time.Millisecond)
		if _, page := alice.get("/admin/sso"); strings.Contains(page, "PRIVATE KEY") || strings.Contains(s.logs.String(), "PRIVATE KEY") {
			t.Error("the SP's private key was shown or logged")
		}
	})
}

// TestSAMLRefusals: the ACS refuses a response signed with a key the
// provider's metadata does not list, an assertion for another audience,
// for another org's SP, or expired, an assertion accepted once already, a
// response posted again, or in a browser that did not begin its sign-in,
// or that began another, and a response the provider sent unasked
// (IdP-initiated). Each refusal says which check failed and signs nobody
// in.
func TestSAMLRefusals(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s, idp := samlSite(t, engine)
		s.org(t, "beta")
		configureSAML(t, s, s.newClient(t, "acme", "alice"), idp, "acme.test", url.Values{"link_by_email": {"on"}})
		configureSAML(t, s, s.newClient(t, "beta", "alice"), idp, "beta.test", url.Values{"link_by_email": {"on"}})
		idp.SetUser(testkit.SAMLUser{NameID: "idp-bob", Email: "bob@acme.test"})

		signedOut := func(t *testing.T, c *client) {
			t.Helper()
			if _, body := c.get("/inbox"); strings.Contains(body, `class="who"`) {
				t.Error("a refused sign-in signed someone in")
			}
		}
		refused := func(t *testing.T, c *client, code int, body, want string) {
			t.Helper()
			if code != http.StatusUnauthorized || !strings.Contains(body, want) {
				t.Errorf("%d, want 401 saying %q: %s", code, want, body)
			}
			signedOut(t, c)
		}
		for _, tc := range []struct {
			name  string
			fault testkit.SAMLFault
			want  string
		}{
			{"bad signature", testkit.SAMLFault{ForeignKey: true}, "signature is not by a certificate"},
			{"wrong audience", testkit.SAMLFault{Audience: "https://elsewhere.example/sp"}, "another service provider (audience)"},
			{"another org's SP", testkit.SAMLFault{Audience: s.URL + sso.MetadataPath("beta")}, "another service provider (audience)"},
			{"expired", testkit.SAMLFault{Expired: true}, "expired"},
			{"wrong issuer", testkit.SAMLFault{Issuer: "https://elsewhere.example/idp"}, "another identity provider (issuer)"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := s.anonymous(t)
				idp.Fault(tc.fault)
				code, body := samlSignIn(t, c, idp, "acme")
				refused(t, c, code, body, tc.want)
			})
		}

		t.Run("replayed assertion", func(t *testing.T) {
			// The provider issues one assertion ID twice, each in a
			// response to a request of its own: the second is refused by
			// the assertion's single use alone.
			idp.Fault(testkit.SAMLFault{AssertionID: "id-assertion-once"})
			if code, body := samlSignIn(t, s.anonymous(t), idp, "acme"); code != http.StatusOK {
				t.Fatalf("the first use of the assertion: %d %s", code, body)
			}
			c := s.anonymous(t)
			idp.Fault(testkit.SAMLFault{AssertionID: "id-assertion-once"})
			code, body := samlSignIn(t, c, idp, "acme")
			refused(t, c, code, body, "accepted once already")
		})

		t.Run("replayed response", func(t *testing.T) {
			c := s.anonymous(t)
			page := samlBegin(t, c, "acme")
			requestID := c.cookie("ctalk_sso")
			if code, body := postSAML(t, c, idp, page); code != http.StatusOK {
				t.Fatalf("the sign-in itself: %d %s", code, body)
			}
			// Posted again, with the request's cookie set once more.
			again := s.anonymous(t)
			u, _ := url.Parse(s.URL)
			again.http.Jar.SetCookies(u, []*http.Cookie{{Name: "ctalk_sso", Value: requestID, Path: "/"}})
			code, body := postSAML(t, again, idp, page)
			refused(t, again, code, body, "used already")
		})

		t.Run("foreign browser", func(t *testing.T) {
			page := samlBegin(t, s.anonymous(t), "acme")
			c := s.anonymous(t)
			code, body := postSAML(t, c, idp, page)
			refused(t, c, code, body, "not begun in this browser")
		})

		t.Run("another browser's request", func(t *testing.T) {
			// A response to the attacker's request, posted from a browser
			// that began a sign-in of its own (login CSRF).
			victim, attacker := s.anonymous(t), s.anonymous(t)
			samlBegin(t, victim, "acme")
			page := samlBegin(t, attacker, "acme")
			code, body := postSAML(t, victim, idp, page)
			refused(t, victim, code, body, "does not answer the sign-in this browser began")
		})

		t.Run("IdP-initiated", func(t *testing.T) {
			c := s.anonymous(t)
			samlBegin(t, c, "acme")
			page := atSAMLProvider(t, c, idp.URL+"/initiated?sp="+url.QueryEscape(s.URL+sso.MetadataPath("acme")))
			code, body := postSAML(t, c, idp, page)
			refused(t, c, code, body, "IdP-initiated")
			// Without a sign-in begun, the browser holds no request.
			c = s.anonymous(t)
			code, body = postSAML(t, c, idp, atSAMLProvider(t, c, idp.URL+"/initiated?sp="+url.QueryEscape(s.URL+sso.MetadataPath("acme"))))
			refused(t, c, code, body, "not from the identity provider")
		})
	})
}

// TestSAMLForgeries: the ACS refuses responses an attacker made from a
// response the provider signed for them (eve, whom the provider knows and
// ctalk does not), each naming bob instead: with every signature taken
// away, and wrapped (XSW) in the ways known to pass checks that look for
// a signature anywhere rather than on the assertion used: the signed
// assertion moved into the response's Extensions or into the forged
// assertion's Signature Object, and a forged assertion beside the signed
// one, before it or after it (CVE-2022-41912). Each response is posted in
// the browser that began the sign-in, so that only the forgery stands in
// the way; bob has no session after any of them. The same path, changing
// nothing in a response for bob, signs him in.
func TestSAMLForgeries(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		ctx := dbtest.Operator()
		s, idp := samlSite(t, engine)
		configureSAML(t, s, s.newClient(t, "acme", "alice"), idp, "acme.test", url.Values{"link_by_email": {"on"}})
		bobSessions := func(t *testing.T) int {
			t.Helper()
			var n int
			if err := s.DB.QueryRow(ctx, `SELECT COUNT(*) FROM web_sessions WHERE org_id = 'acme' AND user_id = 'bob'`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}

		// unsign removes every signature in e.
		unsign := func(e *etree.Element) {
			for _, sig := range e.FindElements(".//Signature") {
				sig.Parent().RemoveChild(sig)
			}
		}
		// forge copies the signed assertion as one naming bob, unsigned.
		forge := func(t *testing.T, signed *etree.Element) *etree.Element {
			t.Helper()
			a := signed.Copy()
			unsign(a)
			a.CreateAttr("ID", "id-forged")
			nameID := a.FindElement("./Subject/NameID")
			if nameID == nil || nameID.Text() != "idp-eve" {
				t.Fatalf("the provider's assertion does not name eve: %v", nameID)
			}
			nameID.SetText("idp-bob")
			for _, v := range a.FindElements(".//AttributeValue") {
				if v.Text() == "eve@other.test" {
					v.SetText("bob@acme.test")
				}
			}
			return a
		}
		// signedAssertion takes the signed assertion out of the response,
		// whose own signature it drops: an attacker cannot keep it valid.
		signedAssertion := func(t *testing.T, response *etree.Element) *etree.Element {
			t.Helper()
			if sig := response.SelectElement("Signature"); sig != nil {
				response.RemoveChild(sig)
			}
			a := response.SelectElement("Assertion")
			if a == nil || a.SelectElement("Signature") == nil {
				t.Fatal("the provider's response holds no signed assertion in the clear")
			}
			response.RemoveChild(a)
			return a
		}
		for _, tc := range []struct {
			name   string
			change func(t *testing.T, response *etree.Element)
			want   string
		}{
			{"unsigned", func(t *testing.T, response *etree.Element) {
				a := signedAssertion(t, response)
				response.AddChild(forge(t, a))
			}, "neither it nor its assertion is signed"},
			{"signed assertion in Extensions", func(t *testing.T, response *etree.Element) {
				a := signedAssertion(t, response)
				ext := etree.NewElement("samlp:Extensions")
				ext.AddChild(a)
				response.InsertChildAt(response.SelectElement("Status").Index(), ext)
				response.AddChild(forge(t, a))
			}, "neither it nor its assertion is signed"},
			{"signed assertion in the forged one's Signature", func(t *testing.T, response *etree.Element) {
				a := signedAssertion(t, response)
				f := forge(t, a)
				sig := a.SelectElement("Signature").Copy()
				obj := sig.CreateElement("ds:Object")
				obj.AddChild(a)
				f.InsertChildAt(f.SelectElement("Issuer").Index()+1, sig)
				response.AddChild(f)
			}, "changed after the identity provider signed it"},
			{"forged assertion before the signed one", func(t *testing.T, response *etree.Element) {
				a := signedAssertion(t, response)
				response.AddChild(forge(t, a))
				response.AddChild(a)
			}, "it holds 2 assertions where one is allowed"},
			{"forged assertion after the signed one", func(t *testing.T, response *etree.Element) {
				a := signedAssertion(t, response)
				response.AddChild(a)
				response.AddChild(forge(t, a))
			}, "it holds 2 assertions where one is allowed"},
			{"forged assertion with the signed one's ID", func(t *testing.T, response *etree.Element) {
				a := signedAssertion(t, response)
				f := forge(t, a)
				f.CreateAttr("ID", a.SelectAttrValue("ID", ""))
				response.AddChild(f)
				response.AddChild(a)
			}, "it holds 2 assertions where one is allowed"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				idp.SetUser(testkit.SAMLUser{NameID: "idp-eve", Email: "eve@other.test", Name: "Eve"})
				idp.Fault(testkit.SAMLFault{Plain: true})
				c := s.anonymous(t)
				code, body := postSAMLChanged(t, c, idp, samlBegin(t, c, "acme"), tc.change)
				if code != http.StatusUnauthorized || !strings.Contains(body, tc.want) {
					t.Errorf("%d, want 401 saying %q: %.300s", code, tc.want, body)
				}
				if c.cookie(web.SessionCookie) != "" || c.cookie("__Host-"+web.SessionCookie) != "" {
					t.Error("a forged response set a session cookie")
				}
				if n := bobSessions(t); n != 0 {
					t.Errorf("a forged response signed bob in (%d sessions)", n)
				}
			})
		}

		// The same path, with the response's signature dropped and its
		// signed assertion put back, signs bob in when the provider
		// names him.
		idp.SetUser(testkit.SAMLUser{NameID: "idp-bob", Email: "bob@acme.test", Name: "Bob"})
		idp.Fault(testkit.SAMLFault{Plain: true})
		c := s.anonymous(t)
		code, body := postSAMLChanged(t, c, idp, samlBegin(t, c, "acme"), func(t *testing.T, response *etree.Element) {
			response.AddChild(signedAssertion(t, response))
		})
		if code != http.StatusOK || !strings.Contains(body, "bob · acme") || bobSessions(t) != 1 {
			t.Errorf("bob's own response, its assertion signed: %d, %d sessions: %.300s", code, bobSessions(t), body)
		}
	})
}
