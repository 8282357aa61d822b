package sso

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
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
	// Domains are the org's verified email domains (see Domain): only
	// addresses at them are linked by email or make members just in time.
	Domains []string
	// JIT makes a member of a person the provider vouches for who has no
	// account yet, on their first sign-in.
	JIT bool
	// LinkByEmail links, on their first sign-in, a person to the member
	// whose address is the verified email the provider gives.
	LinkByEmail bool
	// Required (sso_required) refuses password sign-ins but the admins'
	// break-glass.
	Required bool
	// MetadataURL is where a SAML provider's metadata was fetched from,
	// "" when it was pasted; SSOURL is the provider's sign-in address
	// that its metadata gives.
	MetadataURL string
	SSOURL      string
	// SPCert is the SHA-256 fingerprint of the certificate of the org's
	// SAML signing key; PrevSPCert the one the last roll replaced, still
	// offered in the metadata until PrevUntil ("" and zero once it is not).
	SPCert, PrevSPCert string
	PrevUntil          time.Time
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
	// Kind is KindOIDC (the default when empty) or KindSAML.
	Kind string
	// Issuer, ClientID and ClientSecret set an OpenID Connect provider.
	Issuer   string
	ClientID string
	// ClientSecret, when empty, keeps the secret kept before.
	ClientSecret string
	// Metadata is a SAML provider's metadata XML; MetadataURL, when
	// Metadata is empty, is where to fetch it.
	Metadata    string
	MetadataURL string
	JIT         bool
	LinkByEmail bool
}

// kind returns the kind of provider s sets.
func (s Settings) kind() (string, error) {
	switch s.Kind {
	case "", KindOIDC:
		return KindOIDC, nil
	case KindSAML:
		return KindSAML, nil
	}
	return "", ctalk.Errorf(ctalk.EInvalid, "kind is %q or %q", KindOIDC, KindSAML)
}

// httpsURL checks raw, an address of the provider named what, returning
// it without a trailing slash.
func httpsURL(what, example, raw string, allowHTTP bool) (string, error) {
	raw = strings.TrimRight(strings.TrimSpace(raw), "/")
	u, perr := url.Parse(raw)
	switch {
	case raw == "":
		return "", ctalk.Errorf(ctalk.EInvalid, "%s is required: the provider's %s URL, such as %s", what, what, example)
	case len(raw) > maxURLLen || perr != nil || u.Host == "" || u.User != nil || u.Fragment != "":
		return "", ctalk.Errorf(ctalk.EInvalid, "%s is not a URL such as %s (no fragment or user name)", what, example)
	case u.Scheme != "https" && !(allowHTTP && u.Scheme == "http"):
		return "", ctalk.Errorf(ctalk.EInvalid, "%s must be an https:// URL", what)
	}
	return raw, nil
}

// oidc checks an OpenID Connect provider's settings, returning its issuer,
// client id and secret.
func (s Settings) oidc(allowHTTP bool) (issuer, clientID, secret string, err error) {
	issuer, err = httpsURL("issuer", "https://example.okta.com", s.Issuer, allowHTTP)
	if err != nil {
		return "", "", "", err
	}
	if strings.Contains(issuer, "?") {
		return "", "", "", ctalk.Errorf(ctalk.EInvalid, "issuer is not a URL such as https://example.okta.com (no query, fragment or user name)")
	}
	clientID = strings.TrimSpace(s.ClientID)
	if clientID == "" || len(clientID) > maxClientLen || strings.ContainsAny(clientID, " \t\r\n") {
		return "", "", "", ctalk.Errorf(ctalk.EInvalid, "client_id is required: the application's client ID from the provider, without spaces")
	}
	secret = strings.TrimSpace(s.ClientSecret)
	if len(secret) > maxClientLen || strings.ContainsAny(secret, " \t\r\n") {
		return "", "", "", ctalk.Errorf(ctalk.EInvalid, "client_secret is the application's client secret from the provider, without spaces, at most %d characters", maxClientLen)
	}
	return issuer, clientID, secret, nil
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

// kept is what a provider keeps that its admins never see, or see only
// through its parts: the client secret, a SAML provider's metadata and the
// org's service provider key pair.
type kept struct {
	secret, metadata, spKey, spCert string
	// prevKey and prevCert are the SAML key pair the last roll replaced,
	// offered until prevUntil (see RollKey).
	prevKey, prevCert string
	prevUntil         time.Time
}

// providerOf reads orgID's provider with what it keeps.
func (s *Service) providerOf(ctx context.Context, orgID string) (*Provider, *kept, error) {
	p, k := &Provider{}, &kept{}
	var tested, prevUntil sql.NullTime
	err := s.db.QueryRow(ctx, `SELECT id, org_id, kind, issuer, client_id, client_secret, idp_metadata, metadata_url, sp_key, sp_cert,
			sp_prev_key, sp_prev_cert, sp_prev_until, jit, link_by_email, required, tested_at, tested_by, updated_by, updated_at
		FROM sso_providers WHERE org_id = $1`, orgID).
		Scan(&p.ID, &p.OrgID, &p.Kind, &p.Issuer, &p.ClientID, &k.secret, &k.metadata, &p.MetadataURL, &k.spKey, &k.spCert,
			&k.prevKey, &k.prevCert, &prevUntil, &p.JIT, &p.LinkByEmail, &p.Required, &tested, &p.TestedBy, &p.UpdatedBy, &p.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, ctalk.Errorf(ctalk.ENotFound, "organization %q has no single sign-on", orgID)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read sso_providers: %w", err)
	}
	p.HasSecret, p.TestedAt = k.secret != "", tested.Time
	if p.Kind == KindSAML {
		if md, err := parseIDPMetadata([]byte(k.metadata)); err == nil {
			p.SSOURL = md.ssoURL
		}
		k.prevUntil = prevUntil.Time
		p.SPCert = fingerprint(k.spCert)
		if k.offersPrev(s.db.Now()) {
			p.PrevSPCert, p.PrevUntil = fingerprint(k.prevCert), k.prevUntil
		}
	}
	rows, err := s.db.Query(ctx, `SELECT domain FROM sso_domains WHERE org_id = $1 AND verified_at IS NOT NULL ORDER BY domain`, orgID)
	if err != nil {
		return nil, nil, fmt.Errorf("read sso_domains: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			return nil, nil, fmt.Errorf("read sso_domains: %w", err)
		}
		p.Domains = append(p.Domains, d)
	}
	return p, k, rows.Err()
}

// providerRow is what save writes of a provider of either kind.
type providerRow struct {
	kind, issuer, clientID, secret, metadata, metadataURL, spKey, spCert string
	// trust is what decides whom the provider vouches for (its address,
	// the application, the keys its signatures are checked with): a change
	// of it undoes the last test login.
	trust string
}

// configureOIDC sets the OpenID Connect provider in names after reading
// its discovery document; the secret kept is kept when in has none.
func (s *Service) configureOIDC(ctx context.Context, c ctalk.Caller, in Settings, cur *current) (*Provider, error) {
	issuer, clientID, secret, err := in.oidc(s.cfg.AllowHTTP)
	if err != nil {
		return nil, err
	}
	if secret == "" && cur.kept != nil {
		secret = cur.kept.secret
	}
	if secret == "" {
		return nil, ctalk.Errorf(ctalk.EInvalid, "client_secret is required: the application's client secret from the provider")
	}
	if _, err := s.discover(ctx, issuer); err != nil {
		return nil, err
	}
	return s.save(ctx, c, in, cur, &providerRow{kind: KindOIDC, issuer: issuer, clientID: clientID, secret: secret, trust: oidcTrust(issuer, clientID, secret)})
}

func oidcTrust(issuer, clientID, secret string) string {
	return hash(issuer + "\n" + clientID + "\n" + secret)
}

// trustOf is the trust of the provider p kept as k.
func trustOf(p *Provider, k *kept) string {
	if p.Kind == KindSAML {
		md, err := parseIDPMetadata([]byte(k.metadata))
		if err != nil {
			return ""
		}
		return md.trust
	}
	return oidcTrust(p.Issuer, p.ClientID, k.secret)
}

// Configure sets c's org's identity provider: an OpenID Connect one after
// reading its discovery document, or a SAML one from its metadata (pasted,
// or fetched from its URL). A change of what decides whom the provider
// vouches for (the issuer, client id or secret; the SAML provider's entity
// ID, sign-in address or certificates) undoes the last test login and
// turns sso_required off: a new test login is needed before it can be
// required again. A change of kind also forgets every member's link, since
// the two kinds name people differently.
//
// Returns EForbidden to a member, EInvalid for bad settings, a provider
// whose discovery document is not at the issuer or metadata that is not a
// SAML identity provider's, EUnavailable when the provider cannot be
// reached.
func (s *Service) Configure(ctx context.Context, c ctalk.Caller, in Settings) (*Provider, error) {
	if err := adminOnly(c, "sets its single sign-on"); err != nil {
		return nil, err
	}
	kind, err := in.kind()
	if err != nil {
		return nil, err
	}
	cur := &current{}
	cur.provider, cur.kept, err = s.providerOf(ctx, c.OrgID)
	if err != nil && ctalk.ErrorCode(err) != ctalk.ENotFound {
		return nil, err
	}
	if kind == KindSAML {
		return s.configureSAML(ctx, c, in, cur)
	}
	return s.configureOIDC(ctx, c, in, cur)
}

// current is what Configure found before the change: the org's provider
// (nil for none) with what it keeps.
type current struct {
	provider *Provider
	kept     *kept
}

// save writes the provider r of c's org, with in's options, in place of
// cur's provider.
func (s *Service) save(ctx context.Context, c ctalk.Caller, in Settings, cur *current, r *providerRow) (*Provider, error) {
	old, k := cur.provider, cur.kept
	sameKind := old != nil && old.Kind == r.kind
	changed := !sameKind || trustOf(old, k) != r.trust
	id := ctalk.SortedID("idp")
	if sameKind {
		id = old.ID
	}
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		if old == nil {
			_, err := tx.Exec(ctx, `INSERT INTO sso_providers (id, org_id, kind, issuer, client_id, client_secret, idp_metadata, metadata_url, sp_key, sp_cert, jit, link_by_email, updated_by, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
				id, c.OrgID, r.kind, r.issuer, r.clientID, r.secret, r.metadata, r.metadataURL, r.spKey, r.spCert, in.JIT, in.LinkByEmail, c.UserID, now)
			if err != nil {
				return fmt.Errorf("insert into sso_providers: %w", err)
			}
		} else {
			_, err := tx.Exec(ctx, `UPDATE sso_providers SET id = $1, kind = $2, issuer = $3, client_id = $4, client_secret = $5, idp_metadata = $6, metadata_url = $7, sp_key = $8, sp_cert = $9,
				jit = $10, link_by_email = $11, updated_by = $12, updated_at = $13,
				tested_at = CASE WHEN $14 THEN NULL ELSE tested_at END, required = CASE WHEN $14 THEN FALSE ELSE required END
				WHERE org_id = $15`, id, r.kind, r.issuer, r.clientID, r.secret, r.metadata, r.metadataURL, r.spKey, r.spCert,
				in.JIT, in.LinkByEmail, c.UserID, now, changed, c.OrgID)
			if err != nil {
				return fmt.Errorf("update sso_providers: %w", err)
			}
		}
		if old != nil && !sameKind {
			for _, q := range []string{`DELETE FROM sso_identities WHERE org_id = $1 AND provider_id = $2`, `DELETE FROM sso_states WHERE org_id = $1 AND provider_id = $2`} {
				if _, err := tx.Exec(ctx, q, c.OrgID, old.ID); err != nil {
					return fmt.Errorf("forget the links of the provider replaced: %w", err)
				}
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

// Remove forgets c's org's provider, its domains, every link of its
// members to it and, for SAML, the org's service provider key pair.
//
// Returns EForbidden to a member.
func (s *Service) Remove(ctx context.Context, c ctalk.Caller) error {
	if err := adminOnly(c, "removes its single sign-on"); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx db.Querier) error {
		for _, q := range []string{`DELETE FROM sso_identities WHERE org_id = $1`, `DELETE FROM sso_domains WHERE org_id = $1`,
			`DELETE FROM sso_states WHERE org_id = $1`, `DELETE FROM sso_assertions WHERE org_id = $1`, `DELETE FROM sso_providers WHERE org_id = $1`} {
			if _, err := tx.Exec(ctx, q, c.OrgID); err != nil {
				return fmt.Errorf("remove single sign-on: %w", err)
			}
		}
		return nil
	})
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
