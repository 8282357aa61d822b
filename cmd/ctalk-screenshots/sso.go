package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/xml"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/crewjam/saml"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/internal/demo"
	"github.com/ctalk/ctalk/sso"
)

// The demo organization's single sign-on: a SAML provider whose metadata
// the command makes (nothing is reached), its email domain verified at the
// command's stand-in for DNS, and a second one pending, showing the TXT
// record to publish.
const (
	ssoVerified = "acme.example"
	ssoPending  = "acme-labs.example"
	ssoIDP      = "https://sso.acme.example"
)

// dnsDemo is the command's stand-in for DNS: the TXT records the demo
// publishes, and no other name.
type dnsDemo struct {
	mu  sync.Mutex
	txt map[string][]string
}

// LookupTXT answers from the records set, NXDOMAIN for any other name.
func (r *dnsDemo) LookupTXT(_ context.Context, name string) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, ok := r.txt[strings.ToLower(name)]; ok {
		return v, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
}

func (r *dnsDemo) set(name, value string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.txt == nil {
		r.txt = map[string][]string{}
	}
	r.txt[strings.ToLower(name)+"."] = []string{value}
}

// seedSSO sets up the demo organization's single sign-on as its admin.
func seedSSO(ctx context.Context, a *app.Assembly, d *demo.Org, dns *dnsDemo) error {
	admin := ctalk.Caller{OrgID: d.OrgID, UserID: d.UserID, Admin: true}
	md, err := idpMetadata()
	if err != nil {
		return err
	}
	if _, err := a.SSO.Configure(ctx, admin, sso.Settings{Kind: sso.KindSAML, Metadata: md, LinkByEmail: true, JIT: true}); err != nil {
		return fmt.Errorf("set up SAML: %w", err)
	}
	dom, err := a.SSO.AddDomain(ctx, admin, ssoVerified)
	if err != nil {
		return err
	}
	dns.set(dom.RecordName(), dom.RecordValue())
	if _, err := a.SSO.VerifyDomain(ctx, admin, dom.ID); err != nil {
		return fmt.Errorf("verify %s: %w", ssoVerified, err)
	}
	_, err = a.SSO.AddDomain(ctx, admin, ssoPending)
	return err
}

// idpMetadata is the metadata of a SAML identity provider at ssoIDP, with
// a signing certificate made here.
func idpMetadata() (string, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", err
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sso.acme.example"}, NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return "", err
	}
	meta, _ := url.Parse(ssoIDP + "/metadata")
	login, _ := url.Parse(ssoIDP + "/sso")
	idp := &saml.IdentityProvider{Key: key, Certificate: cert, MetadataURL: *meta, SSOURL: *login}
	b, err := xml.Marshal(idp.Metadata())
	return string(b), err
}
