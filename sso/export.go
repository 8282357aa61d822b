package sso

import (
	"context"
	"time"

	"github.com/ctalk/ctalk"
)

// ExportedProvider is the line of an export's sso.jsonl: the org's
// identity provider as its admins set it, never its client secret, the
// identity provider's metadata it keeps, nor the org's SAML keys, of which
// only the certificates' fingerprints are given.
type ExportedProvider struct {
	Kind string `json:"kind"`
	// Issuer is an OpenID Connect provider's issuer, or a SAML identity
	// provider's entity ID.
	Issuer          string     `json:"issuer"`
	ClientID        string     `json:"client_id,omitempty"`
	HasClientSecret bool       `json:"has_client_secret"`
	MetadataURL     string     `json:"metadata_url,omitempty"`
	SSOURL          string     `json:"sso_url,omitempty"`
	SPCert          string     `json:"sp_cert_sha256,omitempty"`
	PrevSPCert      string     `json:"prev_sp_cert_sha256,omitempty"`
	PrevUntil       *time.Time `json:"prev_sp_cert_until,omitempty"`
	JIT             bool       `json:"jit"`
	LinkByEmail     bool       `json:"link_by_email"`
	Required        bool       `json:"sso_required"`
	TestedAt        *time.Time `json:"tested_at,omitempty"`
	TestedBy        string     `json:"tested_by,omitempty"`
	UpdatedBy       string     `json:"updated_by"`
	UpdatedAt       time.Time  `json:"updated_at"`
}

// ExportProvider calls emit with orgID's identity provider, and with
// nothing when it has none.
//
// Returns only the database's errors, or emit's.
func (s *Service) ExportProvider(ctx context.Context, orgID string, emit func(any) error) error {
	p, _, err := s.providerOf(ctx, orgID)
	if ctalk.ErrorCode(err) == ctalk.ENotFound {
		return nil
	}
	if err != nil {
		return err
	}
	return emit(&ExportedProvider{Kind: p.Kind, Issuer: p.Issuer, ClientID: p.ClientID, HasClientSecret: p.HasSecret,
		MetadataURL: p.MetadataURL, SSOURL: p.SSOURL, SPCert: p.SPCert, PrevSPCert: p.PrevSPCert, PrevUntil: timePtr(p.PrevUntil),
		JIT: p.JIT, LinkByEmail: p.LinkByEmail, Required: p.Required, TestedAt: timePtr(p.TestedAt), TestedBy: p.TestedBy,
		UpdatedBy: p.UpdatedBy, UpdatedAt: p.UpdatedAt.UTC()})
}

// ExportedDomain is a line of an export's sso_domains.jsonl: an email
// domain of the org and whether it was proven.
type ExportedDomain struct {
	Domain     string     `json:"domain"`
	Status     string     `json:"status"`
	AddedBy    string     `json:"added_by"`
	AddedAt    time.Time  `json:"added_at"`
	VerifiedAt *time.Time `json:"verified_at,omitempty"`
	VerifiedBy string     `json:"verified_by,omitempty"`
}

// ExportDomains calls emit with each email domain of orgID, by name.
//
// Returns only the database's errors, or emit's.
func (s *Service) ExportDomains(ctx context.Context, orgID string, emit func(any) error) error {
	ds, err := s.domainsOf(ctx, orgID)
	if err != nil {
		return err
	}
	for _, d := range ds {
		e := &ExportedDomain{Domain: d.Name, Status: "pending", AddedBy: d.AddedBy, AddedAt: d.AddedAt.UTC(), VerifiedAt: timePtr(d.VerifiedAt), VerifiedBy: d.VerifiedBy}
		if d.Verified() {
			e.Status = "verified"
		}
		if err := emit(e); err != nil {
			return err
		}
	}
	return nil
}

// timePtr is t in UTC, or nil for the zero time.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
