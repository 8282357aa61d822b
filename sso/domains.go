package sso

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// An org proves an email domain by DNS: it publishes the TXT record
// RecordValue at RecordName, and the domain counts (routes sign-ins, vouches
// for the addresses linked by email or made members just in time) only once
// ctalk found it there. The record sits under a label of its own so that
// the domain's own TXT records (SPF, other vendors' proofs) stay as they
// are.
const (
	// RecordLabel is the label under the domain that holds the record.
	RecordLabel = "_ctalk"
	// RecordPrefix starts the record's value, the token after it.
	RecordPrefix = "ctalk-verification="
)

// lookupTimeout bounds one verification's DNS look-up.
const lookupTimeout = 5 * time.Second

// TXTResolver looks up TXT records: *net.Resolver, by default
// net.DefaultResolver; tests point one at a DNS server on loopback.
type TXTResolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
}

// Domain is an email domain an org added to its single sign-on.
type Domain struct {
	ID   string
	Name string
	// Token is the value after RecordPrefix that the TXT record must hold.
	// It is not a secret: it is published in the domain's DNS.
	Token   string
	AddedBy string
	AddedAt time.Time
	// VerifiedAt is when ctalk found the record, zero while the domain is
	// pending; VerifiedBy the admin who asked.
	VerifiedAt time.Time
	VerifiedBy string
}

// Verified reports whether the domain was proven.
func (d *Domain) Verified() bool { return !d.VerifiedAt.IsZero() }

// RecordName is where the TXT record goes: RecordLabel under the domain.
func (d *Domain) RecordName() string { return RecordLabel + "." + d.Name }

// RecordValue is the TXT record's value.
func (d *Domain) RecordValue() string { return RecordPrefix + d.Token }

// parseDomain checks an email domain an admin typed.
func parseDomain(raw string) (string, error) {
	d := strings.TrimSuffix(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(raw)), "@"), ".")
	if d == "" {
		return "", ctalk.Errorf(ctalk.EInvalid, "domain is required: the part of your people's addresses after the @, such as example.com")
	}
	if _, err := ctalk.ParseEmail("domain", "x@"+d); err != nil || !strings.Contains(d, ".") {
		return "", ctalk.Errorf(ctalk.EInvalid, "domain: %q is not an email domain such as example.com", ctalk.Shorten(d, 60))
	}
	return d, nil
}

func newToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Domains returns c's org's email domains, verified or pending, by name.
//
// Returns EForbidden to a member.
func (s *Service) Domains(ctx context.Context, c ctalk.Caller) ([]Domain, error) {
	if err := adminOnly(c, "sees its single sign-on"); err != nil {
		return nil, err
	}
	return s.domainsOf(ctx, c.OrgID)
}

func (s *Service) domainsOf(ctx context.Context, orgID string) ([]Domain, error) {
	rows, err := s.db.Query(ctx, `SELECT id, domain, token, added_by, added_at, verified_at, verified_by
		FROM sso_domains WHERE org_id = $1 ORDER BY domain`, orgID)
	if err != nil {
		return nil, fmt.Errorf("read sso_domains: %w", err)
	}
	defer rows.Close()
	var out []Domain
	for rows.Next() {
		d, err := scanDomain(rows)
		if err != nil {
			return nil, fmt.Errorf("read sso_domains: %w", err)
		}
		out = append(out, *d)
	}
	return out, rows.Err()
}

// scanDomain reads a domain's columns: id, domain, token, added_by,
// added_at, verified_at, verified_by.
func scanDomain(row interface{ Scan(...any) error }) (*Domain, error) {
	var (
		d        Domain
		verified sql.NullTime
	)
	if err := row.Scan(&d.ID, &d.Name, &d.Token, &d.AddedBy, &d.AddedAt, &verified, &d.VerifiedBy); err != nil {
		return nil, err
	}
	d.VerifiedAt = verified.Time
	return &d, nil
}

// domain reads orgID's domain id.
func (s *Service) domain(ctx context.Context, r db.Reader, orgID, id string) (*Domain, error) {
	d, err := scanDomain(r.QueryRow(ctx, `SELECT id, domain, token, added_by, added_at, verified_at, verified_by
		FROM sso_domains WHERE org_id = $1 AND id = $2`, orgID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ctalk.Errorf(ctalk.ENotFound, "domain %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("read sso_domains: %w", err)
	}
	return d, nil
}

// AddDomain adds an email domain to c's org's single sign-on, pending: it
// counts once VerifyDomain found its TXT record. Several orgs may have a
// domain pending, so that nobody holds a domain by listing it first.
//
// Returns EForbidden to a member, EInvalid for what is not an email domain
// or past MaxDomains, EConflict when the org has the domain already or
// another org verified it.
func (s *Service) AddDomain(ctx context.Context, c ctalk.Caller, name string) (*Domain, error) {
	if err := adminOnly(c, "adds email domains"); err != nil {
		return nil, err
	}
	name, err := parseDomain(name)
	if err != nil {
		return nil, err
	}
	// The one read across orgs: whether the domain is taken, which the
	// sign-in page tells anyone anyway. Of an addition racing another
	// org's verification, the unique index on verified domains decides at
	// this org's verification.
	var verifiedElsewhere bool
	if err := s.db.QueryRow(ctalk.AsOperator(ctx, "SSO domain taken by another org"), `SELECT EXISTS (SELECT 1 FROM sso_domains WHERE domain = $1 AND verified_at IS NOT NULL AND org_id <> $2)`,
		name, c.OrgID).Scan(&verifiedElsewhere); err != nil {
		return nil, fmt.Errorf("read sso_domains: %w", err)
	}
	if verifiedElsewhere {
		return nil, domainTaken(name)
	}
	d := &Domain{ID: ctalk.SortedID("dom_"), Name: name, Token: newToken(), AddedBy: c.UserID}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM sso_domains WHERE org_id = $1`, c.OrgID).Scan(&n); err != nil {
			return fmt.Errorf("count sso_domains: %w", err)
		}
		if n >= MaxDomains {
			return ctalk.Errorf(ctalk.EInvalid, "domains: at most %d; remove one first", MaxDomains)
		}
		d.AddedAt = s.db.Now()
		_, err := tx.Exec(ctx, `INSERT INTO sso_domains (org_id, id, domain, token, added_by, added_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			c.OrgID, d.ID, d.Name, d.Token, d.AddedBy, d.AddedAt)
		if ctalk.ErrorCode(err) == ctalk.EConflict {
			return ctalk.Errorf(ctalk.EConflict, "domains: %s is added already", name)
		}
		if err != nil {
			return fmt.Errorf("insert into sso_domains: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

func domainTaken(name string) error {
	return ctalk.Errorf(ctalk.EConflict, "domains: %s is verified by another organization; a domain signs in with one organization's provider", name)
}

// VerifyDomain looks up the TXT record of c's org's domain id and, when it
// holds the domain's RecordValue, marks the domain verified by c. Of two
// orgs verifying one domain at once, one wins: a domain is verified for one
// org (a unique index, whatever the interleaving). A domain verified
// already is returned as it is.
//
// Returns EForbidden to a member, ENotFound when the org has no such
// domain, EInvalid when the record is not there (yet), EConflict when
// another org verified the domain, EUnavailable when DNS could not be
// asked.
func (s *Service) VerifyDomain(ctx context.Context, c ctalk.Caller, id string) (*Domain, error) {
	if err := adminOnly(c, "verifies email domains"); err != nil {
		return nil, err
	}
	d, err := s.domain(ctx, s.db, c.OrgID, id)
	if err != nil || d.Verified() {
		return d, err
	}
	if err := s.findRecord(ctx, d); err != nil {
		return nil, err
	}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		res, err := tx.Exec(ctx, `UPDATE sso_domains SET verified_at = $1, verified_by = $2 WHERE org_id = $3 AND id = $4 AND verified_at IS NULL`,
			now, c.UserID, c.OrgID, d.ID)
		if ctalk.ErrorCode(err) == ctalk.EConflict {
			return domainTaken(d.Name)
		}
		if err != nil {
			return fmt.Errorf("update sso_domains: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			// Removed, or verified by another call of this org, meanwhile.
			return nil
		}
		d.VerifiedAt, d.VerifiedBy = now, c.UserID
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.domain(ctx, s.db, c.OrgID, d.ID)
}

// findRecord looks for d's TXT record.
func (s *Service) findRecord(ctx context.Context, d *Domain) error {
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	// The name ends with a dot: absolute, never tried under the host's
	// search domains.
	records, err := s.cfg.Resolver.LookupTXT(ctx, d.RecordName()+".")
	var dnsErr *net.DNSError
	switch {
	case err == nil:
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return ctalk.Errorf(ctalk.EInvalid, "there is no TXT record at %s yet: add one holding %s at your DNS provider, then verify again (a new record may take some minutes to be seen)", d.RecordName(), d.RecordValue())
	default:
		return ctalk.Errorf(ctalk.EUnavailable, "DNS could not be asked for the TXT records of %s; try again in a moment", d.RecordName())
	}
	for _, r := range records {
		if strings.TrimSpace(r) == d.RecordValue() {
			return nil
		}
	}
	return ctalk.Errorf(ctalk.EInvalid, "the TXT records at %s do not hold %s: check the record's value (a changed record may take some minutes to be seen), then verify again", d.RecordName(), d.RecordValue())
}

// RemoveDomain removes c's org's domain id: its people no longer reach the
// org's provider by their address, and their addresses no longer link or
// make members.
//
// Returns EForbidden to a member, ENotFound when the org has no such
// domain.
func (s *Service) RemoveDomain(ctx context.Context, c ctalk.Caller, id string) error {
	if err := adminOnly(c, "removes email domains"); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx db.Querier) error {
		res, err := tx.Exec(ctx, `DELETE FROM sso_domains WHERE org_id = $1 AND id = $2`, c.OrgID, id)
		if err != nil {
			return fmt.Errorf("delete from sso_domains: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ctalk.Errorf(ctalk.ENotFound, "domain %q not found", id)
		}
		return nil
	})
}

// OrgByDomain returns the org that verified the domain of email, whose
// provider signs its people in.
//
// Returns EInvalid for a malformed address, ENotFound when no org verified
// the domain.
func (s *Service) OrgByDomain(ctx context.Context, email string) (string, error) {
	email, err := ctalk.ParseEmail("email", email)
	if err != nil {
		return "", err
	}
	domain := email[strings.LastIndexByte(email, '@')+1:]
	var orgID string
	// Across orgs by design: the address is all the person gives.
	ctx = ctalk.AsOperator(ctx, "SSO sign-in by email domain")
	err = s.db.QueryRow(ctx, `SELECT org_id FROM sso_domains WHERE domain = $1 AND verified_at IS NOT NULL`, domain).Scan(&orgID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ctalk.Errorf(ctalk.ENotFound, "no organization signs in %s addresses with single sign-on; enter your organization's id instead", domain)
	}
	if err != nil {
		return "", fmt.Errorf("read sso_domains: %w", err)
	}
	return orgID, nil
}
