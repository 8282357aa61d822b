package sso

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// Limits of the settings.
const (
	MaxDomains   = 20
	maxURLLen    = 500
	maxClientLen = 500
)

// Provider is an org's identity provider as its admins see it: never its
// client secret.
type Provider struct {
	ID       string
	OrgID    string
	Kind     string
	Issuer   string
	ClientID string
	// HasSecret says whether a client secret is kept (it is never shown).
	HasSecret bool
	Domains   []string
	// JIT makes a member of a person the provider vouches for who has no
	// account yet, on their first sign-in.
	JIT bool
	// LinkByEmail links, on their first sign-in, a person to the member
	// whose address is the verified email the provider gives.
	LinkByEmail bool
	// Required (sso_required) refuses password sign-ins but the admins'
	// break-glass.
	Required bool
	// TestedAt is the last successful test login since the settings that
	// reach the provider changed, zero for none; TestedBy who made it.
	TestedAt  time.Time
	TestedBy  string
	UpdatedBy string
	UpdatedAt time.Time
}

// Tested reports whether the provider passed a test login since it last
// changed.
func (p *Provider) Tested() bool { return p != nil && !p.TestedAt.IsZero() }

// Settings are what an admin sets.
type Settings struct {
	Issuer   string
	ClientID string
	// ClientSecret, when empty, keeps the secret kept before.
	ClientSecret string
	// Domains are email domains, written one per line or separated by
	// commas or spaces.
	Domains     string
	JIT         bool
	LinkByEmail bool
}

// clean checks s, returning the issuer, client id, secret and domains.
func (s Settings) clean(allowHTTP bool) (issuer, clientID, secret string, domains []string, err error) {
	issuer = strings.TrimRight(strings.TrimSpace(s.Issuer), "/")
	u, perr := url.Parse(issuer)
	switch {
	case issuer == "":
		return "", "", "", nil, ctalk.Errorf(ctalk.EInvalid, "issuer is required: the provider's issuer URL, such as https://example.okta.com")
	case len(issuer) > maxURLLen || perr != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return "", "", "", nil, ctalk.Errorf(ctalk.EInvalid, "issuer is not a URL such as https://example.okta.com (no query, fragment or user name)")
	case u.Scheme != "https" && !(allowHTTP && u.Scheme == "http"):
		return "", "", "", nil, ctalk.Errorf(ctalk.EInvalid, "issuer must be an https:// URL")
	}
	clientID = strings.TrimSpace(s.ClientID)
	if clientID == "" || len(clientID) > maxClientLen || strings.ContainsAny(clientID, " \t\r\n") {
		return "", "", "", nil, ctalk.Errorf(ctalk.EInvalid, "client_id is required: the application's client ID from the provider, without spaces")
	}
	secret = strings.TrimSpace(s.ClientSecret)
	if len(secret) > maxClientLen || strings.ContainsAny(secret, " \t\r\n") {
		return "", "", "", nil, ctalk.Errorf(ctalk.EInvalid, "client_secret is the application's client secret from the provider, without spaces, at most %d characters", maxClientLen)
	}
	for _, d := range strings.FieldsFunc(strings.ToLower(s.Domains), func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' }) {
		d = strings.TrimPrefix(d, "@")
		if _, err := ctalk.ParseEmail("domain", "x@"+d); err != nil {
			return "", "", "", nil, ctalk.Errorf(ctalk.EInvalid, "domains: %q is not an email domain such as example.com", ctalk.Shorten(d, 60))
		}
		if !slices.Contains(domains, d) {
			domains = append(domains, d)
		}
	}
	if len(domains) > MaxDomains {
		return "", "", "", nil, ctalk.Errorf(ctalk.EInvalid, "domains: at most %d", MaxDomains)
	}
	slices.Sort(domains)
	if (s.JIT || s.LinkByEmail) && len(domains) == 0 {
		return "", "", "", nil, ctalk.Errorf(ctalk.EInvalid, "domains: creating members just in time and linking by email take at least one domain, whose verified addresses alone they accept")
	}
	return issuer, clientID, secret, domains, nil
}

func adminOnly(c ctalk.Caller, what string) error {
	if !c.Admin {
		return ctalk.Errorf(ctalk.EForbidden, "only an admin of the organization %s", what)
	}
	return nil
}

// Provider returns c's org's identity provider, for its admins, or nil
// when it has none.
//
// Returns EForbidden to a member.
func (s *Service) Provider(ctx context.Context, c ctalk.Caller) (*Provider, error) {
	if err := adminOnly(c, "sees its single sign-on"); err != nil {
		return nil, err
	}
	p, _, err := s.providerOf(ctx, c.OrgID)
	if ctalk.ErrorCode(err) == ctalk.ENotFound {
		return nil, nil
	}
	return p, err
}

// providerOf reads orgID's provider with its secret.
func (s *Service) providerOf(ctx context.Context, orgID string) (*Provider, string, error) {
	p := &Provider{}
	var secret string
	var tested sql.NullTime
	err := s.db.QueryRow(ctx, `SELECT id, org_id, kind, issuer, client_id, client_secret, jit, link_by_email, required, tested_at, tested_by, updated_by, updated_at
		FROM sso_providers WHERE org_id = $1`, orgID).
		Scan(&p.ID, &p.OrgID, &p.Kind, &p.Issuer, &p.ClientID, &secret, &p.JIT, &p.LinkByEmail, &p.Required, &tested, &p.TestedBy, &p.UpdatedBy, &p.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", ctalk.Errorf(ctalk.ENotFound, "organization %q has no single sign-on", orgID)
	}
	if err != nil {
		return nil, "", fmt.Errorf("read sso_providers: %w", err)
	}
	p.HasSecret, p.TestedAt = secret != "", tested.Time
	rows, err := s.db.Query(ctx, `SELECT domain FROM sso_domains WHERE org_id = $1 ORDER BY domain`, orgID)
	if err != nil {
		return nil, "", fmt.Errorf("read sso_domains: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			return nil, "", fmt.Errorf("read sso_domains: %w", err)
		}
		p.Domains = append(p.Domains, d)
	}
	return p, secret, rows.Err()
}

// Configure sets c's org's OpenID Connect provider after reading its
// discovery document. A change of the issuer, client id or secret undoes
// the last test login and turns sso_required off: a new test login is
// needed before it can be required again.
//
// Returns EForbidden to a member, EInvalid for bad settings or a provider
// whose discovery document is not at the issuer, EConflict when another
// organization has one of the domains, EUnavailable when the provider
// cannot be reached.
func (s *Service) Configure(ctx context.Context, c ctalk.Caller, in Settings) (*Provider, error) {
	if err := adminOnly(c, "sets its single sign-on"); err != nil {
		return nil, err
	}
	issuer, clientID, secret, domains, err := in.clean(s.cfg.AllowHTTP)
	if err != nil {
		return nil, err
	}
	old, oldSecret, err := s.providerOf(ctx, c.OrgID)
	if err != nil && ctalk.ErrorCode(err) != ctalk.ENotFound {
		return nil, err
	}
	if secret == "" {
		secret = oldSecret
	}
	if secret == "" {
		return nil, ctalk.Errorf(ctalk.EInvalid, "client_secret is required: the application's client secret from the provider")
	}
	if _, err := s.discover(ctx, issuer); err != nil {
		return nil, err
	}
	changed := old == nil || old.Issuer != issuer || old.ClientID != clientID || secret != oldSecret
	id := ctalk.SortedID("idp")
	if old != nil {
		id = old.ID
	}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		if old == nil {
			_, err := tx.Exec(ctx, `INSERT INTO sso_providers (id, org_id, kind, issuer, client_id, client_secret, jit, link_by_email, updated_by, updated_at)
				VALUES ($1, $2, 'oidc', $3, $4, $5, $6, $7, $8, $9)`, id, c.OrgID, issuer, clientID, secret, in.JIT, in.LinkByEmail, c.UserID, now)
			if err != nil {
				return fmt.Errorf("insert into sso_providers: %w", err)
			}
		} else {
			_, err := tx.Exec(ctx, `UPDATE sso_providers SET issuer = $1, client_id = $2, client_secret = $3, jit = $4, link_by_email = $5, updated_by = $6, updated_at = $7,
				tested_at = CASE WHEN $8 THEN NULL ELSE tested_at END, required = CASE WHEN $8 THEN FALSE ELSE required END
				WHERE org_id = $9`, issuer, clientID, secret, in.JIT, in.LinkByEmail, c.UserID, now, changed, c.OrgID)
			if err != nil {
				return fmt.Errorf("update sso_providers: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM sso_domains WHERE org_id = $1`, c.OrgID); err != nil {
			return fmt.Errorf("delete from sso_domains: %w", err)
		}
		for _, d := range domains {
			if _, err := tx.Exec(ctx, `INSERT INTO sso_domains (domain, org_id, provider_id) VALUES ($1, $2, $3)`, d, c.OrgID, id); err != nil {
				if ctalk.ErrorCode(err) == ctalk.EConflict {
					return ctalk.Errorf(ctalk.EConflict, "domains: %s signs in with another organization's provider; a domain belongs to one organization", d)
				}
				return fmt.Errorf("insert into sso_domains: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	p, _, err := s.providerOf(ctx, c.OrgID)
	return p, err
}

// SetRequired turns sso_required on or off for c's org. On needs a test
// login of the provider as it is now, so that a mistyped setting never
// locks the org out.
//
// Returns EForbidden to a member, ENotFound when the org has no provider,
// EConflict when turning it on before a test login.
func (s *Service) SetRequired(ctx context.Context, c ctalk.Caller, on bool) error {
	if err := adminOnly(c, "requires single sign-on"); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx db.Querier) error {
		var tested sql.NullTime
		err := tx.QueryRow(ctx, `SELECT tested_at FROM sso_providers WHERE org_id = $1`, c.OrgID).Scan(&tested)
		if errors.Is(err, sql.ErrNoRows) {
			return ctalk.Errorf(ctalk.ENotFound, "your organization has no single sign-on to require; set one up first")
		}
		if err != nil {
			return fmt.Errorf("read sso_providers: %w", err)
		}
		if on && !tested.Valid {
			return ctalk.Errorf(ctalk.EConflict, "sign in through the provider with \"Test sign-in\" first: sso_required is refused until a test login of the settings as they are now succeeded")
		}
		if _, err := tx.Exec(ctx, `UPDATE sso_providers SET required = $1, updated_by = $2, updated_at = $3 WHERE org_id = $4`, on, c.UserID, s.db.Now(), c.OrgID); err != nil {
			return fmt.Errorf("update sso_providers: %w", err)
		}
		return nil
	})
}

// Remove forgets c's org's provider, its domains and every link of its
// members to it.
//
// Returns EForbidden to a member.
func (s *Service) Remove(ctx context.Context, c ctalk.Caller) error {
	if err := adminOnly(c, "removes its single sign-on"); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx db.Querier) error {
		for _, q := range []string{`DELETE FROM sso_identities WHERE org_id = $1`, `DELETE FROM sso_domains WHERE org_id = $1`,
			`DELETE FROM sso_states WHERE org_id = $1`, `DELETE FROM sso_providers WHERE org_id = $1`} {
			if _, err := tx.Exec(ctx, q, c.OrgID); err != nil {
				return fmt.Errorf("remove single sign-on: %w", err)
			}
		}
		return nil
	})
}

// OrgByDomain returns the org whose provider signs in the people of
// email's domain.
//
// Returns EInvalid for a malformed address, ENotFound when no org's
// provider has the domain.
func (s *Service) OrgByDomain(ctx context.Context, email string) (string, error) {
	email, err := ctalk.ParseEmail("email", email)
	if err != nil {
		return "", err
	}
	domain := email[strings.LastIndexByte(email, '@')+1:]
	var orgID string
	err = s.db.QueryRow(ctx, `SELECT org_id FROM sso_domains WHERE domain = $1`, domain).Scan(&orgID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ctalk.Errorf(ctalk.ENotFound, "no organization signs in %s addresses with single sign-on; enter your organization's id instead", domain)
	}
	if err != nil {
		return "", fmt.Errorf("read sso_domains: %w", err)
	}
	return orgID, nil
}

// Required reports whether orgID requires sign-in through its provider.
//
// Returns only the database's errors.
func (s *Service) Required(ctx context.Context, orgID string) (bool, error) {
	var on bool
	err := s.db.QueryRow(ctx, `SELECT required FROM sso_providers WHERE org_id = $1`, orgID).Scan(&on)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read sso_providers: %w", err)
	}
	return on, nil
}
