package testkit

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/xml"
	"html"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/crewjam/saml"
	dsig "github.com/russellhaering/goxmldsig"
)

// SAMLUser is the person a SAMLProvider signs in.
type SAMLUser struct {
	NameID string
	// NameIDFormat is persistent when empty.
	NameIDFormat string
	Email, Name  string
}

// SAMLFault changes the next assertion a SAMLProvider issues, so that a
// test can see the service provider refuse it. The assertion is signed
// after the change, as the provider's own.
type SAMLFault struct {
	Audience string // another audience
	Expired  bool   // issued, and valid until, ten minutes ago
	// ForeignKey signs with a key the provider's metadata does not list.
	ForeignKey bool
	// AssertionID gives the assertion this ID rather than a new one.
	AssertionID string
	// Issuer names another issuer in the assertion.
	Issuer string
	// Plain leaves the assertion unencrypted, as providers do unless told
	// the service provider's encryption key, so that a test can read and
	// change it.
	Plain bool
}

// SAMLProvider is a real SAML 2.0 identity provider (crewjam/saml's) on a
// loopback port: its metadata at /metadata, single sign-on at /sso with
// the HTTP-Redirect binding, which signs in User at once (no page) and
// answers with the HTTP-POST binding's form, and an IdP-initiated sign-in
// at /initiated?sp=ENTITY-ID. It reads a service provider's metadata from
// its entity ID, which ctalk serves there, and wants signed requests.
type SAMLProvider struct {
	*httptest.Server
	idp, foreign *saml.IdentityProvider

	mu    sync.Mutex
	user  SAMLUser
	fault SAMLFault
}

// NewSAMLProvider starts a provider, closed with the test.
func NewSAMLProvider(t testing.TB) *SAMLProvider {
	t.Helper()
	p := &SAMLProvider{}
	mux := http.NewServeMux()
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Close)
	base, _ := url.Parse(p.URL)
	p.idp, p.foreign = p.newIDP(t, base), p.newIDP(t, base)
	mux.HandleFunc("GET /metadata", p.idp.ServeMetadata)
	mux.HandleFunc("GET /sso", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		idp := p.idp
		if p.fault.ForeignKey {
			idp = p.foreign
		}
		p.mu.Unlock()
		idp.ServeSSO(w, r)
	})
	mux.HandleFunc("GET /initiated", func(w http.ResponseWriter, r *http.Request) {
		p.idp.ServeIDPInitiated(w, r, r.URL.Query().Get("sp"), "")
	})
	return p
}

// newIDP makes an identity provider at base with a key of its own.
func (p *SAMLProvider) newIDP(t testing.TB, base *url.URL) *saml.IdentityProvider {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test identity provider"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &saml.IdentityProvider{
		Key: key, Certificate: cert, SignatureMethod: dsig.RSASHA256SignatureMethod,
		MetadataURL: *base.JoinPath("metadata"), SSOURL: *base.JoinPath("sso"),
		ServiceProviderProvider: spMetadata{}, SessionProvider: p, AssertionMaker: p,
		WantAuthnRequestsSigned: true,
	}
}

// SetUser sets who the provider signs in next.
func (p *SAMLProvider) SetUser(u SAMLUser) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.user = u
}

// Fault makes the next assertion faulty as f says.
func (p *SAMLProvider) Fault(f SAMLFault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = f
}

// Metadata is the provider's metadata XML, as an admin pastes it.
func (p *SAMLProvider) Metadata(t testing.TB) string {
	t.Helper()
	b, err := xml.MarshalIndent(p.idp.Metadata(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// GetSession implements saml.SessionProvider: User, signed in now.
func (p *SAMLProvider) GetSession(http.ResponseWriter, *http.Request, *saml.IdpAuthnRequest) *saml.Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	format := p.user.NameIDFormat
	if format == "" {
		format = string(saml.PersistentNameIDFormat)
	}
	var id [16]byte
	rand.Read(id[:])
	now := time.Now()
	return &saml.Session{ID: hex.EncodeToString(id[:]), CreateTime: now, ExpireTime: now.Add(time.Hour), Index: "1",
		NameID: p.user.NameID, NameIDFormat: format, UserEmail: p.user.Email, UserCommonName: p.user.Name}
}

// MakeAssertion implements saml.AssertionMaker: crewjam's assertion, with
// the fault set, which it then clears.
func (p *SAMLProvider) MakeAssertion(req *saml.IdpAuthnRequest, session *saml.Session) error {
	if err := (saml.DefaultAssertionMaker{}).MakeAssertion(req, session); err != nil {
		return err
	}
	p.mu.Lock()
	f := p.fault
	p.fault = SAMLFault{}
	p.mu.Unlock()
	a := req.Assertion
	if f.Audience != "" {
		for i := range a.Conditions.AudienceRestrictions {
			a.Conditions.AudienceRestrictions[i].Audience.Value = f.Audience
		}
	}
	if f.AssertionID != "" {
		a.ID = f.AssertionID
	}
	if f.Issuer != "" {
		a.Issuer.Value = f.Issuer
	}
	if f.Plain {
		var keys []saml.KeyDescriptor
		for _, k := range req.SPSSODescriptor.KeyDescriptors {
			if k.Use != "encryption" && k.Use != "" {
				keys = append(keys, k)
			}
		}
		req.SPSSODescriptor.KeyDescriptors = keys
	}
	if f.Expired {
		then := time.Now().Add(-10 * time.Minute)
		a.IssueInstant, a.Conditions.NotBefore, a.Conditions.NotOnOrAfter = then, then.Add(-time.Minute), then.Add(time.Minute)
		for i := range a.Subject.SubjectConfirmations {
			if d := a.Subject.SubjectConfirmations[i].SubjectConfirmationData; d != nil {
				d.NotOnOrAfter = then.Add(time.Minute)
			}
		}
		for i := range a.AuthnStatements {
			a.AuthnStatements[i].AuthnInstant = then
		}
	}
	return nil
}

// spMetadata reads a service provider's metadata from its entity ID.
type spMetadata struct{}

func (spMetadata) GetServiceProvider(_ *http.Request, id string) (*saml.EntityDescriptor, error) {
	resp, err := http.Get(id)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, os.ErrNotExist
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	ed := &saml.EntityDescriptor{}
	if err := xml.Unmarshal(b, ed); err != nil {
		return nil, err
	}
	return ed, nil
}

var (
	samlFormAction   = regexp.MustCompile(`<form method="post" action="([^"]+)"`)
	samlFormResponse = regexp.MustCompile(`name="SAMLResponse" value="([^"]+)"`)
)

// SAMLForm reads the HTTP-POST binding's form in a provider's page: where
// it posts, and the response it carries.
func SAMLForm(t testing.TB, page string) (action string, form url.Values) {
	t.Helper()
	a, r := samlFormAction.FindStringSubmatch(page), samlFormResponse.FindStringSubmatch(page)
	if a == nil || r == nil {
		t.Fatalf("no SAML response form in the provider's page: %.500s", page)
	}
	return html.UnescapeString(a[1]), url.Values{"SAMLResponse": {html.UnescapeString(r[1])}}
}
