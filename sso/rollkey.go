package sso

import (
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	"github.com/crewjam/saml"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// KeyGrace is how long the SAML key pair a roll replaced is still offered
// in the SP metadata and still decrypts assertions: the metadata's own
// validity (MetadataValidDuration), within which an identity provider that
// honours it reads the metadata again.
const KeyGrace = 7 * 24 * time.Hour

// offersPrev reports whether k's previous key pair is still offered at now.
func (k *kept) offersPrev(now time.Time) bool {
	return k.prevKey != "" && now.Before(k.prevUntil)
}

// RollKey replaces c's org's SAML signing key with a new one, which signs
// every AuthnRequest from then on and is the metadata's certificate for
// signing and encryption. The key it replaces is kept for KeyGrace: the
// metadata still offers its certificate for signing, and it still
// decrypts assertions an identity provider encrypted to it; a key replaced
// earlier is forgotten. No key is ever shown, logged or audited.
//
// Returns EForbidden to a member, ENotFound when the org has no SAML
// single sign-on.
func (s *Service) RollKey(ctx context.Context, c ctalk.Caller) error {
	if err := adminOnly(c, "rolls its SAML signing key"); err != nil {
		return err
	}
	key, cert, err := newKeyPair()
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		res, err := tx.Exec(ctx, `UPDATE sso_providers SET sp_prev_key = sp_key, sp_prev_cert = sp_cert, sp_prev_until = $1, sp_key = $2, sp_cert = $3,
			updated_by = $4, updated_at = $5 WHERE org_id = $6 AND kind = 'saml'`, now.Add(KeyGrace), key, cert, c.UserID, now, c.OrgID)
		if err != nil {
			return fmt.Errorf("update sso_providers: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ctalk.Errorf(ctalk.ENotFound, "your organization has no SAML single sign-on, whose signing key this is; set it up first")
		}
		return nil
	})
}

// keyPair reads a PEM key pair of orgID's: an RSA key and its certificate.
func keyPair(orgID, keyPEM, certPEM string) (*rsa.PrivateKey, *x509.Certificate, error) {
	kb, _ := pem.Decode([]byte(keyPEM))
	cb, _ := pem.Decode([]byte(certPEM))
	if kb == nil || cb == nil {
		return nil, nil, fmt.Errorf("the SAML key pair of %s is not PEM", orgID)
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("read the SAML key of %s: %w", orgID, err)
	}
	rk, ok := key.(*rsa.PrivateKey)
	if !ok {
		return nil, nil, fmt.Errorf("the SAML key of %s is not RSA", orgID)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("read the SAML certificate of %s: %w", orgID, err)
	}
	return rk, cert, nil
}

// fingerprint is the SHA-256 fingerprint of a PEM certificate, as
// identity providers show it (hex pairs), or "" for none.
func fingerprint(certPEM string) string {
	b, _ := pem.Decode([]byte(certPEM))
	if b == nil {
		return ""
	}
	sum := sha256.Sum256(b.Bytes)
	h := strings.ToUpper(hex.EncodeToString(sum[:]))
	var out strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			out.WriteByte(':')
		}
		out.WriteString(h[i : i+2])
	}
	return out.String()
}

// offerPrev adds the previous certificate to the metadata md as a second
// signing key, while it is offered: crewjam/saml's metadata names one, and
// SAML metadata may name several.
func offerPrev(md *saml.EntityDescriptor, cert *x509.Certificate) {
	if cert == nil || len(md.SPSSODescriptors) == 0 {
		return
	}
	sp := &md.SPSSODescriptors[0]
	sp.KeyDescriptors = append(sp.KeyDescriptors, saml.KeyDescriptor{Use: "signing",
		KeyInfo: saml.KeyInfo{X509Data: saml.X509Data{X509Certificates: []saml.X509Certificate{{Data: base64.StdEncoding.EncodeToString(cert.Raw)}}}}})
}
