package sso

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// Purposes of a sign-in at the provider.
const (
	// PurposeSignIn signs a person in to ctalk.
	PurposeSignIn = "signin"
	// PurposeTest is an admin's test login of the org's settings.
	PurposeTest = "test"
)

// Start is a sign-in begun: the provider's address to send the browser to,
// and the state, which the browser must also hold (in a cookie) when it
// comes back: an OpenID Connect state, or the ID of a SAML AuthnRequest.
type Start struct {
	URL   string
	State string
	// Site is the provider's address (its issuer, or its SAML sign-in
	// URL), to show where the person goes.
	Site string
	// Kind is the provider's: a SAML provider posts the browser back from
	// its own site, so the cookie must go with such a post.
	Kind string
}

// Begin starts a sign-in at orgID's provider, which comes back to this
// server at publicURL (to CallbackPath or ACSPath) and then to next, a
// path on this site. A test login (PurposeTest) is an admin's, userID.
//
// Returns EInvalid for a malformed org id, ENotFound when the org has no
// single sign-on, EUnavailable when its provider cannot be reached.
func (s *Service) Begin(ctx context.Context, orgID, purpose, userID, next, publicURL string) (*Start, error) {
	orgID, err := ctalk.ParseID("org_id", orgID)
	if err != nil {
		return nil, err
	}
	// The org is the one named: a sign-in begins before anyone is known.
	ctx = ctalk.WithOrg(ctx, orgID)
	p, k, err := s.providerOf(ctx, orgID)
	if err != nil {
		return nil, err
	}
	st := &signInState{orgID: orgID, providerID: p.ID, purpose: purpose, userID: userID, next: next}
	if p.Kind == KindSAML {
		return s.beginSAML(ctx, p, k, st, publicURL)
	}
	op, err := s.discover(ctx, p.Issuer)
	if err != nil {
		return nil, err
	}
	state := random()
	st.nonce, st.verifier = random(), oauth2.GenerateVerifier()
	if err := s.saveState(ctx, state, st); err != nil {
		return nil, err
	}
	conf := oauthConfig(op, p, k.secret, publicURL+CallbackPath)
	return &Start{State: state, Site: p.Issuer, Kind: KindOIDC,
		URL: conf.AuthCodeURL(state, oidc.Nonce(st.nonce), oauth2.S256ChallengeOption(st.verifier))}, nil
}

// saveState keeps st, the sign-in of state, for StateTTL, and forgets the
// sign-ins that expired.
func (s *Service) saveState(ctx context.Context, state string, st *signInState) error {
	return s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		if _, err := tx.Exec(ctx, `DELETE FROM sso_states WHERE expires_at < $1`, now); err != nil {
			return fmt.Errorf("delete from sso_states: %w", err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO sso_states (state_hash, org_id, provider_id, purpose, user_id, nonce, verifier, next, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, hash(state), st.orgID, st.providerID, st.purpose, st.userID, st.nonce, st.verifier, st.next, now, now.Add(StateTTL))
		if err != nil {
			return fmt.Errorf("insert into sso_states: %w", err)
		}
		return nil
	})
}

func oauthConfig(op *oidc.Provider, p *Provider, secret, redirectURI string) *oauth2.Config {
	return &oauth2.Config{ClientID: p.ClientID, ClientSecret: secret, Endpoint: op.Endpoint(), RedirectURL: redirectURI,
		Scopes: []string{oidc.ScopeOpenID, "email", "profile"}}
}

// Result is a sign-in that came back: who signed in, and what for.
type Result struct {
	OrgID   string
	UserID  string
	Role    string
	Purpose string
	// Next is the page to return to.
	Next string
	// Email is the address the provider gave ("" for none).
	Email string
	// Linked says how the person was linked on this sign-in: "" when the
	// link was there before, else LinkedTest, LinkedEmail or LinkedJIT.
	Linked string
}

// Finish ends the sign-in whose state came back with code: it takes the
// state (once), redeems the code with its PKCE verifier, verifies the ID
// token (signature from the provider's keys, issuer, audience, expiry) and
// its nonce, and finds the member it names (see link). A test login is
// recorded on the provider when the person is the admin who began it.
//
// Returns EUnauthorized for an unknown, used or expired state, a code the
// provider refuses, or an ID token that fails a check; ENotFound when the
// person is linked to no member and may not be linked; EForbidden when a
// test login signed in someone other than the admin; EUnavailable when the
// provider cannot be reached.
func (s *Service) Finish(ctx context.Context, state, code, redirectURI string) (*Result, error) {
	st, err := s.takeState(ctx, state)
	if err != nil {
		return nil, err
	}
	ctx = ctalk.WithOrg(ctx, st.orgID)
	p, k, err := s.providerOf(ctx, st.orgID)
	if err != nil || p.ID != st.providerID || p.Kind != KindOIDC {
		return nil, ctalk.Errorf(ctalk.EUnauthorized, "the organization's single sign-on changed during the sign-in; sign in again")
	}
	op, err := s.discover(ctx, p.Issuer)
	if err != nil {
		return nil, err
	}
	hc := oidc.ClientContext(ctx, s.cfg.HTTP)
	tok, err := oauthConfig(op, p, k.secret, redirectURI).Exchange(hc, code, oauth2.VerifierOption(st.verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return nil, ctalk.Errorf(ctalk.EUnauthorized, "the identity provider refused the sign-in's code (%s); sign in again", ctalk.Shorten(re.ErrorCode, 60))
		}
		return nil, unreachable("its token endpoint", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, ctalk.Errorf(ctalk.EUnauthorized, "the identity provider sent no ID token; check that the application is an OpenID Connect one with the openid scope")
	}
	idt, err := op.Verifier(&oidc.Config{ClientID: p.ClientID, Now: s.db.Now}).Verify(hc, raw)
	if err != nil {
		return nil, ctalk.Errorf(ctalk.EUnauthorized, "the identity provider's ID token was refused: %s", tokenProblem(err))
	}
	if idt.Nonce != st.nonce {
		return nil, ctalk.Errorf(ctalk.EUnauthorized, "the identity provider's ID token was refused: its nonce is not this sign-in's")
	}
	var claims struct {
		Email         string `json:"email"`
		EmailVerified any    `json:"email_verified"`
		// DomainOwnerVerified is Microsoft Entra ID's optional claim that
		// the email's domain is verified by the tenant, which sends no
		// email_verified.
		DomainOwnerVerified any    `json:"xms_edov"`
		Name                string `json:"name"`
	}
	if err := idt.Claims(&claims); err != nil {
		return nil, ctalk.Errorf(ctalk.EUnauthorized, "the identity provider's ID token has claims of the wrong types")
	}
	id := identity{subject: idt.Subject, name: claims.Name, verified: verified(claims.EmailVerified) || verified(claims.DomainOwnerVerified)}
	if e, err := ctalk.ParseEmail("email", claims.Email); err == nil {
		id.email = e
	}
	res := &Result{OrgID: st.orgID, Purpose: st.purpose, Next: st.next, Email: id.email}
	if err := s.link(ctx, p, st, id, res); err != nil {
		return nil, err
	}
	return res, nil
}

// verified reads email_verified, which some providers send as a string.
func verified(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case string:
		return strings.EqualFold(v, "true")
	}
	return false
}

// tokenProblem says which check an ID token failed, in words. go-oidc
// types only the expiry's error; the others are told by their text.
func tokenProblem(err error) string {
	var exp *oidc.TokenExpiredError
	msg := err.Error()
	switch {
	case errors.As(err, &exp):
		return "it has expired"
	case strings.Contains(msg, "audience"):
		return "it was issued to another application (audience)"
	case strings.Contains(msg, "different provider"):
		return "it was issued by another issuer"
	case strings.Contains(msg, "signature"):
		return "its signature does not match the provider's keys"
	case strings.Contains(msg, "nbf"):
		return "it is not valid yet (check the clocks)"
	}
	return "it is malformed"
}

// signInState is a row of sso_states.
type signInState struct {
	orgID, providerID, purpose, userID, nonce, verifier, next string
}

// takeState deletes and returns the sign-in of state, which is thus used
// once.
func (s *Service) takeState(ctx context.Context, state string) (*signInState, error) {
	// A secret found by its hash names the org it belongs to.
	ctx = ctalk.AsOperator(ctx, "SSO sign-in state lookup by hash")
	gone := ctalk.Errorf(ctalk.EUnauthorized, "this sign-in link was used already or has expired; sign in again")
	if state == "" || len(state) > 100 {
		return nil, gone
	}
	st := &signInState{}
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		return tx.QueryRow(ctx, `DELETE FROM sso_states WHERE state_hash = $1 AND expires_at > $2
			RETURNING org_id, provider_id, purpose, user_id, nonce, verifier, next`, hash(state), s.db.Now()).
			Scan(&st.orgID, &st.providerID, &st.purpose, &st.userID, &st.nonce, &st.verifier, &st.next)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, gone
	}
	if err != nil {
		return nil, fmt.Errorf("take sso_states: %w", err)
	}
	return st, nil
}

func random() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
