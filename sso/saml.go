package sso

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/beevik/etree"
	"github.com/crewjam/saml"
	"github.com/crewjam/saml/samlsp"
	dsig "github.com/russellhaering/goxmldsig"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// KindSAML is the kind of a SAML 2.0 identity provider.
const KindSAML = "saml"

// ACSPath is where SAML identity providers post their responses (the
// assertion consumer service): one address for every org, since the
// request the browser began names the sign-in it ends.
const ACSPath = "/sso/saml/acs"

// MetadataPath is the path of orgID's service provider metadata, which is
// also the org's entity ID at its identity provider (with PUBLIC_URL
// before it).
func MetadataPath(orgID string) string { return "/sso/saml/" + orgID + "/metadata" }

// maxMetadata bounds an identity provider's metadata, pasted or fetched.
const maxMetadata = 512 << 10

// idpMetadata is what ctalk reads of a SAML identity provider's metadata.
type idpMetadata struct {
	entity *saml.EntityDescriptor
	// ssoURL is the sign-in address of the HTTP-Redirect binding.
	ssoURL string
	// trust joins the entity ID, the sign-in address and the signing
	// certificates, hashed (see providerRow).
	trust string
}

// parseIDPMetadata reads an identity provider's metadata: it must name an
// entity, a sign-in address of the HTTP-Redirect binding and at least one
// signing certificate.
func parseIDPMetadata(data []byte) (*idpMetadata, error) {
	ed, err := samlsp.ParseMetadata(data)
	if err != nil || len(ed.IDPSSODescriptors) == 0 {
		return nil, ctalk.Errorf(ctalk.EInvalid, "metadata is not a SAML identity provider's: paste the metadata XML of the application at your identity provider (an EntityDescriptor with an IDPSSODescriptor)")
	}
	if ed.EntityID == "" || len(ed.EntityID) > maxURLLen {
		return nil, ctalk.Errorf(ctalk.EInvalid, "metadata names no entity ID of at most %d characters", maxURLLen)
	}
	md := &idpMetadata{entity: ed}
	var certs []string
	for _, d := range ed.IDPSSODescriptors {
		for _, sso := range d.SingleSignOnServices {
			if sso.Binding == saml.HTTPRedirectBinding && md.ssoURL == "" {
				md.ssoURL = sso.Location
			}
		}
		for _, kd := range d.KeyDescriptors {
			if kd.Use != "" && kd.Use != "signing" {
				continue
			}
			for _, c := range kd.KeyInfo.X509Data.X509Certificates {
				raw, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(c.Data), ""))
				if err != nil {
					return nil, ctalk.Errorf(ctalk.EInvalid, "metadata has a signing certificate that is not base64")
				}
				if _, err := x509.ParseCertificate(raw); err != nil {
					return nil, ctalk.Errorf(ctalk.EInvalid, "metadata has a signing certificate that is not an X.509 certificate")
				}
				certs = append(certs, base64.StdEncoding.EncodeToString(raw))
			}
		}
	}
	if md.ssoURL == "" {
		return nil, ctalk.Errorf(ctalk.EInvalid, "metadata has no SingleSignOnService with the HTTP-Redirect binding, which ctalk sends people to")
	}
	if len(certs) == 0 {
		return nil, ctalk.Errorf(ctalk.EInvalid, "metadata has no signing certificate, whose key ctalk checks the provider's signatures with")
	}
	slices.Sort(certs)
	md.trust = hash(ed.EntityID + "\n" + md.ssoURL + "\n" + strings.Join(certs, "\n"))
	return md, nil
}

// configureSAML sets the SAML provider in names: its metadata, pasted or
// fetched from its URL through the guarded client. The org's service
// provider key pair is kept when it has one, else made.
func (s *Service) configureSAML(ctx context.Context, c ctalk.Caller, in Settings, cur *current) (*Provider, error) {
	r := &providerRow{kind: KindSAML, metadata: strings.TrimSpace(in.Metadata)}
	if r.metadata == "" {
		if strings.TrimSpace(in.MetadataURL) == "" {
			return nil, ctalk.Errorf(ctalk.EInvalid, "metadata is required: paste the identity provider's SAML metadata XML, or give its metadata URL")
		}
		u, err := httpsURL("metadata URL", "https://example.okta.com/app/ID/sso/saml/metadata", in.MetadataURL, s.cfg.AllowHTTP)
		if err != nil {
			return nil, err
		}
		if r.metadata, err = s.fetchMetadata(ctx, u); err != nil {
			return nil, err
		}
		r.metadataURL = u
	}
	if len(r.metadata) > maxMetadata {
		return nil, ctalk.Errorf(ctalk.EInvalid, "metadata is over %d KB", maxMetadata>>10)
	}
	md, err := parseIDPMetadata([]byte(r.metadata))
	if err != nil {
		return nil, err
	}
	if _, err := httpsURL("metadata's sign-in address", "https://example.okta.com/app/ID/sso/saml", md.ssoURL, s.cfg.AllowHTTP); err != nil {
		return nil, err
	}
	r.issuer, r.trust = md.entity.EntityID, md.trust
	if k := cur.kept; k != nil && k.spKey != "" {
		r.spKey, r.spCert = k.spKey, k.spCert
	} else if r.spKey, r.spCert, err = newKeyPair(); err != nil {
		return nil, err
	}
	return s.save(ctx, c, in, cur, r)
}

// fetchMetadata reads the metadata at u.
func (s *Service) fetchMetadata(ctx context.Context, u string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", ctalk.Errorf(ctalk.EInvalid, "metadata URL is not a URL")
	}
	resp, err := s.cfg.HTTP.Do(req)
	if err != nil {
		return "", unreachable("its metadata", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", ctalk.Errorf(ctalk.EInvalid, "the metadata URL answered %d, not the metadata: check it, or paste the metadata XML instead", resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata+1))
	if err != nil {
		return "", unreachable("its metadata", err)
	}
	return string(b), nil
}

// newKeyPair makes an org's service provider key (RSA, 2048 bits) and its
// self-signed certificate, as PEM. Identity providers take the certificate
// from the metadata as a container of the key and do not check its dates.
func newKeyPair() (key, cert string, err error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", fmt.Errorf("make the SAML key: %w", err)
	}
	now := time.Now().UTC()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano()), Subject: pkix.Name{CommonName: "ctalk SAML service provider"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(20, 0, 0), KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		return "", "", fmt.Errorf("make the SAML certificate: %w", err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return "", "", fmt.Errorf("encode the SAML key: %w", err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk})), string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), nil
}

// serviceProvider is the org's service provider at publicURL for p.
func (s *Service) serviceProvider(p *Provider, k *kept, publicURL string) (*saml.ServiceProvider, error) {
	md, err := parseIDPMetadata([]byte(k.metadata))
	if err != nil {
		return nil, err
	}
	rk, cert, err := keyPair(p.OrgID, k.spKey, k.spCert)
	if err != nil {
		return nil, err
	}
	meta, err1 := url.Parse(publicURL + MetadataPath(p.OrgID))
	acs, err2 := url.Parse(publicURL + ACSPath)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("the server's public URL: %w", err)
	}
	sp := &saml.ServiceProvider{
		EntityID: meta.String(), MetadataURL: *meta, AcsURL: *acs,
		Key: rk, Certificate: cert, SignatureMethod: dsig.RSASHA256SignatureMethod,
		IDPMetadata: md.entity, HTTPClient: s.cfg.HTTP,
		// The provider sends the format its application is set to, which
		// the docs ask to be persistent; a transient one is refused.
		AuthnNameIDFormat:                saml.UnspecifiedNameIDFormat,
		AssertionConsumerServiceBindings: []string{saml.HTTPPostBinding},
		RejectSHA1Signatures:             true,
		MetadataValidDuration:            KeyGrace,
	}
	if k.offersPrev(s.db.Now()) {
		prev, _, err := keyPair(p.OrgID, k.prevKey, k.prevCert)
		if err != nil {
			return nil, err
		}
		sp.DecryptionKeys = []*rsa.PrivateKey{prev}
	}
	return sp, nil
}

// beginSAML sends the browser to p's sign-in address with a signed
// AuthnRequest, whose ID is the sign-in's state.
func (s *Service) beginSAML(ctx context.Context, p *Provider, k *kept, st *signInState, publicURL string) (*Start, error) {
	sp, err := s.serviceProvider(p, k, publicURL)
	if err != nil {
		return nil, err
	}
	req, err := sp.MakeAuthenticationRequest(sp.GetSSOBindingLocation(saml.HTTPRedirectBinding), saml.HTTPRedirectBinding, saml.HTTPPostBinding)
	if err != nil {
		return nil, fmt.Errorf("make the SAML request: %w", err)
	}
	u, err := req.Redirect("", sp)
	if err != nil {
		return nil, fmt.Errorf("sign the SAML request: %w", err)
	}
	if err := s.saveState(ctx, req.ID, st); err != nil {
		return nil, err
	}
	return &Start{URL: u.String(), State: req.ID, Site: p.SSOURL, Kind: KindSAML}, nil
}

// Metadata returns orgID's service provider metadata at publicURL, which
// its admins give their identity provider: the entity ID, the assertion
// consumer service and the certificate of the key that signs ctalk's
// requests, with the one a roll replaced while it is offered (see
// RollKey). It is public, as every SAML service provider's.
//
// Returns EInvalid for a malformed org id, ENotFound when the org has no
// SAML single sign-on.
func (s *Service) Metadata(ctx context.Context, orgID, publicURL string) ([]byte, error) {
	orgID, err := ctalk.ParseID("org_id", orgID)
	if err != nil {
		return nil, err
	}
	p, k, err := s.providerOf(ctalk.WithOrg(ctx, orgID), orgID)
	if err == nil && p.Kind != KindSAML {
		err = ctalk.Errorf(ctalk.ENotFound, "organization %q has no SAML single sign-on", orgID)
	}
	if err != nil {
		return nil, err
	}
	sp, err := s.serviceProvider(p, k, publicURL)
	if err != nil {
		return nil, err
	}
	md := sp.Metadata()
	if k.offersPrev(s.db.Now()) {
		_, prev, err := keyPair(p.OrgID, k.prevKey, k.prevCert)
		if err != nil {
			return nil, err
		}
		offerPrev(md, prev)
	}
	b, err := xml.MarshalIndent(md, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("write the SAML metadata: %w", err)
	}
	return append([]byte(xml.Header), b...), nil
}

// FinishSAML ends the SAML sign-in whose request ID the browser held, with
// the response the identity provider posted (samlResponse, base64): it
// takes the request (once), and checks with crewjam/saml the response's
// and assertion's signature by a certificate of the provider's metadata,
// issuer, destination and recipient (ACSPath at publicURL), audience (the
// org's entity ID), times (with crewjam's allowance for clocks), and that
// it answers this very request (InResponseTo: a response the provider
// began, IdP-initiated, answers none); then it accepts the assertion's ID
// once. The person is the assertion's NameID, linked as Finish links.
//
// Returns EUnauthorized for an unknown, used or expired request, or a
// response that fails a check; ENotFound when the person is linked to no
// member and may not be linked; EForbidden when a test login signed in
// someone other than the admin.
func (s *Service) FinishSAML(ctx context.Context, requestID, samlResponse, publicURL string) (*Result, error) {
	st, err := s.takeState(ctx, requestID)
	if err != nil {
		return nil, err
	}
	ctx = ctalk.WithOrg(ctx, st.orgID)
	p, k, err := s.providerOf(ctx, st.orgID)
	if err != nil || p.ID != st.providerID || p.Kind != KindSAML {
		return nil, ctalk.Errorf(ctalk.EUnauthorized, "the organization's single sign-on changed during the sign-in; sign in again")
	}
	sp, err := s.serviceProvider(p, k, publicURL)
	if err != nil {
		return nil, err
	}
	sp.ReplayCache = &assertionsTaken{s: s, ctx: ctx, orgID: p.OrgID}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(samlResponse))
	if err != nil || len(raw) == 0 {
		return nil, ctalk.Errorf(ctalk.EUnauthorized, "the identity provider's response was refused: it is missing or not base64")
	}
	a, err := sp.ParseXMLResponse(raw, []string{requestID}, sp.AcsURL)
	if err != nil {
		if why := badShape(raw); why != "" {
			return nil, ctalk.Errorf(ctalk.EUnauthorized, "the identity provider's response was refused: %s", why)
		}
		return nil, samlRefused(err)
	}
	id, err := samlIdentity(a)
	if err != nil {
		return nil, err
	}
	res := &Result{OrgID: st.orgID, Purpose: st.purpose, Next: st.next, Email: id.email}
	if err := s.link(ctx, p, st, id, res); err != nil {
		return nil, err
	}
	return res, nil
}

// badShape says, of a response crewjam/saml refused, what is wrong with
// its shape where that is why: more than one assertion (one forged beside
// the signed one, as in CVE-2022-41912), or no signature on the response
// nor on its assertion. It returns "" for any other response.
func badShape(raw []byte) string {
	doc := etree.NewDocument()
	if doc.ReadFromBytes(raw) != nil || doc.Root() == nil {
		return ""
	}
	r := doc.Root()
	assertions := append(r.SelectElements("Assertion"), r.SelectElements("EncryptedAssertion")...)
	switch {
	case len(assertions) > 1:
		return fmt.Sprintf("it holds %d assertions where one is allowed", len(assertions))
	case len(assertions) == 1 && assertions[0].Tag == "Assertion" && r.SelectElement("Signature") == nil && assertions[0].SelectElement("Signature") == nil:
		return "neither it nor its assertion is signed"
	}
	return ""
}

// samlRefused says which check a response failed, in words, from the kind
// of crewjam/saml's error: never its text, which quotes the response.
func samlRefused(err error) error {
	var status saml.ErrBadStatus
	why := "it is malformed"
	switch {
	case errors.Is(err, saml.ErrAssertionReplayed):
		why = "its assertion was accepted once already (a replay)"
	case errors.Is(err, saml.ErrRequestIDMismatch):
		why = "it does not answer the sign-in this browser began (InResponseTo). ctalk accepts no sign-in begun at the identity provider (IdP-initiated): start from ctalk's sign-in page"
	case errors.Is(err, saml.ErrAudienceMismatch):
		why = "it was issued to another service provider (audience): check the entity ID entered at the identity provider"
	case errors.Is(err, saml.ErrDestinationMismatch):
		why = "it was sent to another address (destination or recipient): check the ACS URL entered at the identity provider"
	case errors.Is(err, saml.ErrUntrustedCertificate), errors.Is(err, saml.ErrCertificateNotValidNow):
		why = "its signature is not by a certificate of the identity provider's metadata; if the provider changed its certificate, save its metadata again"
	case errors.Is(err, saml.ErrInvalidSignature):
		why = "its signature does not verify: it was changed after the identity provider signed it"
	case errors.Is(err, saml.ErrIssuerMismatch):
		why = "it was issued by another identity provider (issuer)"
	case errors.Is(err, saml.ErrExpired):
		why = "it has expired (or the clocks disagree)"
	case errors.Is(err, saml.ErrNotYetValid):
		why = "it is not valid yet (check the clocks)"
	case errors.Is(err, saml.ErrDecryptionFailed):
		why = "its encrypted assertion could not be decrypted with the key of ctalk's metadata"
	case errors.Is(err, saml.ErrUnsupported):
		why = "it uses what ctalk does not accept (such as SHA-1 signatures)"
	case errors.As(err, &status):
		return ctalk.Errorf(ctalk.EUnauthorized, "the identity provider did not sign you in (%s); sign in again, or ask your admin", ctalk.Shorten(status.Status[strings.LastIndexByte(status.Status, ':')+1:], 60))
	}
	return ctalk.Errorf(ctalk.EUnauthorized, "the identity provider's response was refused: %s", why)
}

// Attribute names, lower-cased, that carry a person's email and name at
// the usual identity providers (Okta's own, Entra ID's claim URIs, the
// LDAP OIDs).
var (
	emailAttributes = []string{"email", "mail", "emailaddress", "urn:oid:0.9.2342.19200300.100.1.3",
		"http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress"}
	nameAttributes = []string{"displayname", "name", "cn", "urn:oid:2.16.840.1.113730.3.1.241", "urn:oid:2.5.4.3",
		"http://schemas.microsoft.com/identity/claims/displayname"}
	givenAttributes = []string{"givenname", "firstname", "urn:oid:2.5.4.42",
		"http://schemas.xmlsoap.org/ws/2005/05/identity/claims/givenname"}
	surnameAttributes = []string{"surname", "sn", "lastname", "urn:oid:2.5.4.4",
		"http://schemas.xmlsoap.org/ws/2005/05/identity/claims/surname"}
)

// samlIdentity reads who the assertion names: its NameID, which must not
// be transient (it would name the person anew at each sign-in), and the
// email and name of its attributes (the NameID is the email when its
// format says so). SAML has no email_verified: the identity provider
// vouches for the address it asserts, which links or makes a member only
// at the org's verified domains.
func samlIdentity(a *saml.Assertion) (identity, error) {
	if a.Subject == nil || a.Subject.NameID == nil || a.Subject.NameID.Value == "" || len(a.Subject.NameID.Value) > maxURLLen {
		return identity{}, ctalk.Errorf(ctalk.EUnauthorized, "the identity provider's response was refused: its assertion has no NameID of at most %d characters", maxURLLen)
	}
	n := a.Subject.NameID
	if n.Format == string(saml.TransientNameIDFormat) {
		return identity{}, ctalk.Errorf(ctalk.EUnauthorized, "the identity provider sent a transient NameID, which names nobody twice: set the application's Name ID format to Persistent")
	}
	attr := func(names []string) string {
		for _, st := range a.AttributeStatements {
			for _, at := range st.Attributes {
				if (slices.Contains(names, strings.ToLower(at.Name)) || slices.Contains(names, strings.ToLower(at.FriendlyName))) && len(at.Values) > 0 {
					return strings.TrimSpace(at.Values[0].Value)
				}
			}
		}
		return ""
	}
	id := identity{subject: n.Value, verified: true, name: attr(nameAttributes)}
	if id.name == "" {
		id.name = strings.TrimSpace(attr(givenAttributes) + " " + attr(surnameAttributes))
	}
	email := attr(emailAttributes)
	if email == "" && n.Format == string(saml.EmailAddressNameIDFormat) {
		email = n.Value
	}
	if e, err := ctalk.ParseEmail("email", email); err == nil {
		id.email = e
	}
	return id, nil
}

// assertionsTaken is crewjam/saml's replay cache over sso_assertions: an
// assertion's ID is a row, unique in its org, kept until the assertion
// could no longer be accepted.
type assertionsTaken struct {
	s     *Service
	ctx   context.Context
	orgID string
}

// Consume records assertionID, or returns saml.ErrAssertionReplayed when
// it was recorded before.
func (t *assertionsTaken) Consume(assertionID string, expiresAt time.Time) error {
	err := t.s.db.Tx(t.ctx, func(tx db.Querier) error {
		now := t.s.db.Now()
		if _, err := tx.Exec(t.ctx, `DELETE FROM sso_assertions WHERE expires_at < $1`, now); err != nil {
			return fmt.Errorf("delete from sso_assertions: %w", err)
		}
		_, err := tx.Exec(t.ctx, `INSERT INTO sso_assertions (org_id, id_hash, expires_at) VALUES ($1, $2, $3)`,
			t.orgID, hash(assertionID), expiresAt.UTC().Add(saml.MaxClockSkew))
		if err != nil {
			return fmt.Errorf("insert into sso_assertions: %w", err)
		}
		return nil
	})
	if ctalk.ErrorCode(err) == ctalk.EConflict {
		return saml.ErrAssertionReplayed
	}
	return err
}
