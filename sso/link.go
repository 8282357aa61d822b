package sso

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/orgs"
)

// How a person was linked to a member.
const (
	// LinkedTest: an admin's test login linked the admin.
	LinkedTest = "test"
	// LinkedEmail: by the verified email, the org allowing it.
	LinkedEmail = "email"
	// LinkedJIT: a member made on the first sign-in.
	LinkedJIT = "jit"
)

// identity is who the ID token names.
type identity struct {
	subject, email, name string
	verified             bool
}

// emailAt returns id's email when it is verified and at one of p's
// verified domains, else "".
func (id identity) emailAt(p *Provider) string {
	if !id.verified || id.email == "" {
		return ""
	}
	if !slices.Contains(p.Domains, id.email[strings.LastIndexByte(id.email, '@')+1:]) {
		return ""
	}
	return id.email
}

// link finds the member the provider's subject stands for, linking one
// when the rules allow, and fills in res:
//
//  1. A subject linked before signs in as its member, whatever email the
//     provider gives now: an email changed at the provider is the same
//     person.
//  2. An admin's test login links the subject to that admin.
//  3. With link_by_email, a verified email at one of the org's verified domains
//     links the member with that address, if they have no link yet.
//  4. With jit, a verified email at one of the org's verified domains makes a new
//     member, linked.
//
// Nobody else is linked: not by an unverified email, nor one at another
// domain, nor by name.
func (s *Service) link(ctx context.Context, p *Provider, st *signInState, id identity, res *Result) error {
	u, err := s.linked(ctx, p, id.subject)
	if err != nil && ctalk.ErrorCode(err) != ctalk.ENotFound {
		return err
	}
	if u == nil {
		u, res.Linked, err = s.newLink(ctx, p, st, id)
		if err != nil {
			return err
		}
	}
	if st.purpose == PurposeTest && u.ID != st.userID {
		return ctalk.Errorf(ctalk.EForbidden, "the test sign-in at the provider was as %s, who is linked to another member; sign in at the provider as yourself", id.email)
	}
	res.UserID, res.Role = u.ID, u.Role
	return s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		if _, err := tx.Exec(ctx, `UPDATE sso_identities SET email = $1, last_login_at = $2 WHERE org_id = $3 AND provider_id = $4 AND subject = $5`,
			id.email, now, p.OrgID, p.ID, id.subject); err != nil {
			return fmt.Errorf("update sso_identities: %w", err)
		}
		if st.purpose == PurposeTest {
			if _, err := tx.Exec(ctx, `UPDATE sso_providers SET tested_at = $1, tested_by = $2 WHERE org_id = $3 AND id = $4`, now, u.ID, p.OrgID, p.ID); err != nil {
				return fmt.Errorf("update sso_providers: %w", err)
			}
		}
		return nil
	})
}

// linked returns the current member subject is linked to.
func (s *Service) linked(ctx context.Context, p *Provider, subject string) (*orgs.User, error) {
	var userID string
	err := s.db.QueryRow(ctx, `SELECT user_id FROM sso_identities WHERE org_id = $1 AND provider_id = $2 AND subject = $3`, p.OrgID, p.ID, subject).Scan(&userID)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ctalk.Errorf(ctalk.ENotFound, "not linked")
		}
		return nil, fmt.Errorf("read sso_identities: %w", err)
	}
	u, err := s.orgs.User(ctx, p.OrgID, userID)
	if ctalk.ErrorCode(err) == ctalk.ENotFound {
		return nil, ctalk.Errorf(ctalk.EForbidden, "your account at the identity provider belonged to a member who is no longer in the organization; ask an admin")
	}
	return u, err
}

// notLinked is the refusal of a person the rules link to nobody.
func notLinked(orgID string) error {
	return ctalk.Errorf(ctalk.ENotFound, "your account at the identity provider is not linked to a member of organization %q; ask an admin to invite you, or to let single sign-on link or create members by verified email", orgID)
}

// newLink links subject by the rules of link, returning the member and how.
func (s *Service) newLink(ctx context.Context, p *Provider, st *signInState, id identity) (*orgs.User, string, error) {
	var (
		u   *orgs.User
		how string
		err error
	)
	email := id.emailAt(p)
	switch {
	case st.purpose == PurposeTest:
		how = LinkedTest
		u, err = s.orgs.User(ctx, p.OrgID, st.userID)
	case p.LinkByEmail && email != "":
		how = LinkedEmail
		u, err = s.orgs.UserByEmail(ctx, p.OrgID, email)
		if ctalk.ErrorCode(err) == ctalk.ENotFound {
			if !p.JIT {
				return nil, "", notLinked(p.OrgID)
			}
			u, how, err = s.provision(ctx, p, id, email)
		}
	case p.JIT && email != "":
		if taken, err := s.orgs.UserByEmail(ctx, p.OrgID, email); err == nil {
			// A member has the address, and linking by email is off:
			// making another member of it would guess. Unless a sign-in
			// of this very person just made them.
			if time.Since(taken.CreatedAt) < raceWindow {
				return s.linkedSoon(ctx, p, id.subject)
			}
			return nil, "", notLinked(p.OrgID)
		}
		u, how, err = s.provision(ctx, p, id, email)
	default:
		return nil, "", notLinked(p.OrgID)
	}
	if err != nil {
		return nil, "", err
	}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		_, err := tx.Exec(ctx, `INSERT INTO sso_identities (org_id, provider_id, subject, user_id, email, linked_how, linked_at, last_login_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`,
			p.OrgID, p.ID, id.subject, u.ID, id.email, how, now)
		if err != nil {
			return fmt.Errorf("insert into sso_identities: %w", err)
		}
		return nil
	})
	if ctalk.ErrorCode(err) == ctalk.EConflict {
		// A sign-in of the same subject at the same time linked it first,
		// or the member is linked to another account at the provider.
		if again, lerr := s.linked(ctx, p, id.subject); lerr == nil {
			return again, "", nil
		}
		return nil, "", ctalk.Errorf(ctalk.EConflict, "member %q is linked to another account at the identity provider; ask an admin", u.ID)
	}
	return u, how, err
}

// provision makes a member of a person the provider vouches for, with
// the name and email it gives, a user id from the email and a random
// password nobody knows (a reset link sets one).
func (s *Service) provision(ctx context.Context, p *Provider, id identity, email string) (*orgs.User, string, error) {
	name := strings.TrimSpace(id.name)
	if name == "" || len(name) > orgs.MaxNameLen {
		name = email[:strings.IndexByte(email, '@')]
	}
	base := userIDFrom(email)
	for i := 0; i < 5; i++ {
		uid := base
		if i > 0 {
			uid = fmt.Sprintf("%s-%d", base, i+1)
		}
		u, err := s.orgs.AddUser(ctx, p.OrgID, orgs.NewUser{ID: uid, Name: name, Email: email, Role: orgs.RoleMember, Password: unusablePassword()})
		if ctalk.ErrorCode(err) == ctalk.EConflict {
			taken, _ := s.orgs.UserByEmail(ctx, p.OrgID, email)
			switch {
			case taken != nil && time.Since(taken.CreatedAt) < raceWindow:
				// Made meanwhile, by a sign-in of the same person at
				// the same time, whose link follows at once; or else
				// by an admin, and then linked to nobody by guess.
				return s.linkedSoon(ctx, p, id.subject)
			case taken != nil:
				return nil, "", notLinked(p.OrgID)
			}
			continue
		}
		return u, LinkedJIT, err
	}
	return nil, "", ctalk.Errorf(ctalk.EConflict, "no free user id for %s; ask an admin to add you", email)
}

// raceWindow is how recent a member made just in time must be for a
// sign-in that finds them to wait for the link of the sign-in that made
// them.
const raceWindow = 10 * time.Second

// linkedSoon waits a little for a sign-in of subject at the same time to
// link the member it just made, and returns that member; else the person
// is linked to nobody.
func (s *Service) linkedSoon(ctx context.Context, p *Provider, subject string) (*orgs.User, string, error) {
	for range 40 {
		if u, err := s.linked(ctx, p, subject); err == nil {
			return u, "", nil
		}
		select {
		case <-ctx.Done():
			return nil, "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil, "", notLinked(p.OrgID)
}

// userIDFrom makes a user id of an email's local part.
func userIDFrom(email string) string {
	local := email[:strings.IndexByte(email, '@')]
	var b strings.Builder
	for _, r := range strings.ToLower(local) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_':
			b.WriteRune(r)
		case r == '.' || r == '+':
			b.WriteByte('-')
		}
	}
	id := strings.Trim(b.String(), "-")
	if len(id) > ctalk.MaxIDLen-3 {
		id = id[:ctalk.MaxIDLen-3]
	}
	if id == "" || strings.HasPrefix(id, "ctalk_") {
		id = "sso-" + id
	}
	return id
}

func unusablePassword() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
