// Package orgs manages organizations and their users: registration, roles,
// ownership areas and the notes that tell coworkers' agents who does what.
package orgs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
)

// Limits on free text, in characters.
const (
	MaxNameLen      = 200
	MaxNotesLen     = 10000
	MaxOwnership    = 50
	MaxOwnershipLen = 200
)

// Org is an organization.
type Org struct {
	ID           string `json:"org_id"`
	Name         string `json:"name"`
	ApprovalMode string `json:"approval_mode"`
	// ChannelPostMode says whether agents' channel posts wait for their
	// person's approval: ChannelPostAgent or ChannelPostHuman.
	ChannelPostMode string `json:"channel_post_mode"`
	// AgentPasswordLogin says whether an agent may log in over MCP with
	// its person's password: AgentLoginAllowed or AgentLoginDisabled.
	AgentPasswordLogin string `json:"agent_password_login"`
	// ApprovalFactor is what an approval in the web app needs:
	// FactorSession or FactorPasskey. RequirePasskey asks every member to
	// add a passkey when they sign in without one.
	ApprovalFactor string    `json:"approval_factor"`
	RequirePasskey bool      `json:"require_passkey"`
	CreatedAt      time.Time `json:"created_at"`
	// Knowledge is how the org shares answers; read by Org only.
	Knowledge *Knowledge `json:"knowledge,omitempty"`
	// DepartureQuestions is what becomes of the questions waiting for a
	// member who leaves: DepartureDecline or DepartureDelegate; read by
	// Org only.
	DepartureQuestions string `json:"departure_questions,omitempty"`
	// SettingsSaved says whether an admin has saved the org's settings
	// (how answers are approved among them) at least once: the web app's
	// first steps for a new admin are done with it.
	SettingsSaved bool `json:"-"`
}

// User is a member of an organization, as other members see it.
type User struct {
	OrgID        string   `json:"org_id"`
	ID           string   `json:"user_id"`
	Name         string   `json:"name"`
	Role         string   `json:"role" jsonschema:"member or admin"`
	Ownership    []string `json:"ownership" jsonschema:"areas this person owns and can answer for"`
	Notes        string   `json:"notes" jsonschema:"the person's own notes about themselves"`
	ProfileNotes string   `json:"profile_notes" jsonschema:"notes written by an org admin"`
	// Email is where the server mails the member (invites, password
	// resets); shown to the member and their admins on the web pages, never
	// to other members' agents.
	Email     string    `json:"-"`
	CreatedAt time.Time `json:"created_at"`
	Presence  string    `json:"presence,omitempty" jsonschema:"waiting (an agent of theirs waits for messages now), active (a call in the last 5 minutes) or away"`
	// LastSeenAt is the time of their last call, to the minute.
	LastSeenAt *time.Time `json:"last_seen_at,omitempty" jsonschema:"the time of their last call, to within a minute; absent when never seen"`
	// Away is set while the person said they are away (see SetAway).
	Away *Away `json:"away,omitempty" jsonschema:"present while the person is away: until when, who stands in for them, and their note"`
}

// NewOrg is the input of Register.
type NewOrg struct {
	ID            string
	Name          string
	AdminPassword string
	// ApprovalMode is ApprovalAgent or ApprovalHuman; empty is
	// ApprovalAgent.
	ApprovalMode string
}

// NewUser is the input of AddUser.
type NewUser struct {
	ID        string
	Name      string
	Password  string
	Role      string
	Ownership []string
	Notes     string
	// Email is optional.
	Email string
}

// Service manages organizations and users.
type Service struct {
	db   *db.DB
	auth *auth.Service
	// members holds recent reads of Member (see MemberCacheTTL).
	members *memberCache
	// afterRead, when set by a test, runs between a member's read and its
	// caching.
	afterRead func()
	// onChange run after every change that changed announces (see OnChange).
	onChange []func(orgID, userID string)
}

// NewService returns a Service over d that hashes passwords with a.
func NewService(d *db.DB, a *auth.Service) *Service {
	return &Service{db: d, auth: a, members: newMemberCache(d, MemberCacheTTL)}
}

// Register creates an organization.
//
// Returns EInvalid for bad input, EConflict when the id is taken.
func (s *Service) Register(ctx context.Context, in NewOrg) (*Org, error) {
	org, hash, err := s.newOrg(in)
	if err != nil {
		return nil, err
	}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		return s.insertOrg(ctx, tx, org, hash)
	})
	return org, err
}

// RegisterWithAdmin creates an organization and its first member, an admin,
// in one transaction: either both exist afterwards or neither does.
//
// Returns EInvalid for bad input, EConflict when the org id is taken.
func (s *Service) RegisterWithAdmin(ctx context.Context, in NewOrg, admin NewUser) (*Org, *User, error) {
	admin.Role = RoleAdmin
	org, orgHash, err := s.newOrg(in)
	if err != nil {
		return nil, nil, err
	}
	u, userHash, err := s.newUser(org.ID, admin)
	if err != nil {
		return nil, nil, err
	}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		if err := s.insertOrg(ctx, tx, org, orgHash); err != nil {
			return err
		}
		return s.insertUser(ctx, tx, u, userHash)
	})
	if err != nil {
		return nil, nil, err
	}
	return org, u, nil
}

// newOrg checks in and hashes its admin password.
func (s *Service) newOrg(in NewOrg) (*Org, string, error) {
	org, errs := in.clean()
	if len(errs) > 0 {
		return nil, "", errs[0].Err
	}
	hash, err := s.auth.HashPassword("admin_password", in.AdminPassword, auth.MinAdminPasswordLen)
	if err != nil {
		return nil, "", err
	}
	return org, hash, nil
}

// insertOrg stores org in tx.
func (s *Service) insertOrg(ctx context.Context, tx db.Querier, org *Org, hash string) error {
	org.CreatedAt = s.db.Now()
	_, err := tx.Exec(ctx, `INSERT INTO orgs (id, name, approval_mode, created_at) VALUES ($1, $2, $3, $4)`,
		org.ID, org.Name, org.ApprovalMode, org.CreatedAt)
	if ctalk.ErrorCode(err) == ctalk.EConflict {
		return ctalk.Errorf(ctalk.EConflict, "organization id %q is taken; choose another org_id", org.ID)
	}
	if err != nil {
		return fmt.Errorf("insert into orgs: %w", err)
	}
	// Read after the insert, so that a deletion committed while it waited
	// for the id is seen: a deleted org's id is never given again.
	var retired int
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM retired_orgs WHERE id = $1`, org.ID).Scan(&retired); err != nil {
		return fmt.Errorf("read retired_orgs: %w", err)
	}
	if retired > 0 {
		return ctalk.Errorf(ctalk.EConflict, "organization id %q belonged to an organization that was deleted, and ids are never given again; choose another org_id", org.ID)
	}
	_, err = auth.StoreAdminPassword(ctx, tx, org.ID, hash)
	return err
}

// AuthorizeAdmin decides whether a caller may administer orgID: either its
// token belongs to an admin of that org, or it knows the org's admin password.
// A token of another org makes orgID "not found", whatever the password.
//
// Returns ENotFound, EUnauthorized, EForbidden or ERateLimited.
func (s *Service) AuthorizeAdmin(ctx context.Context, sess *auth.Session, orgID, adminPassword string) (string, error) {
	orgID, err := ctalk.ParseID("org_id", orgID)
	if err != nil {
		return "", err
	}
	if sess != nil && sess.OrgID != orgID {
		return "", notFoundOrg(orgID)
	}
	if adminPassword != "" {
		if err := s.auth.VerifyAdminPassword(ctx, orgID, adminPassword); err != nil {
			return "", err
		}
		return orgID, nil
	}
	if sess == nil {
		return "", ctalk.Errorf(ctalk.EUnauthorized, "this needs the org's admin_password, or the auth token of an org admin")
	}
	if !sess.IsAdmin() {
		return "", ctalk.Errorf(ctalk.EForbidden, "only org admins may do this; pass the org's admin_password, or ask an admin")
	}
	return orgID, nil
}

// AddUser adds a user to an existing organization. The caller must have been
// authorized for orgID.
//
// Returns EInvalid for bad input, ENotFound for an unknown org, EConflict
// when the user id is taken, also by a former (removed) member: ids are not
// reused.
func (s *Service) AddUser(ctx context.Context, orgID string, in NewUser) (*User, error) {
	return s.addUser(ctx, orgID, in, false)
}

// ErrAdminExists is AddUserAsAgent's refusal to make someone an admin in
// an org that has one.
var ErrAdminExists = ctalk.Errorf(ctalk.EForbidden, "making someone an admin is for a person: an admin of your organization does it in the web app")

// AddUserAsAgent is AddUser for an agent's credential: it adds an admin
// only as the first admin of an org that has none (so that an org made
// over MCP gets its first admin), deciding it in the transaction that adds
// them, so that two calls at once cannot both be first.
//
// Returns the errors of AddUser, and ErrAdminExists.
func (s *Service) AddUserAsAgent(ctx context.Context, orgID string, in NewUser) (*User, error) {
	return s.addUser(ctx, orgID, in, true)
}

func (s *Service) addUser(ctx context.Context, orgID string, in NewUser, firstAdminOnly bool) (*User, error) {
	u, hash, err := s.newUser(orgID, in)
	if err != nil {
		return nil, err
	}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		if firstAdminOnly && u.Role == RoleAdmin {
			if err := s.lockOrg(ctx, tx, orgID); err != nil {
				return err
			}
			var admins int
			if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM users WHERE org_id = $1 AND role = 'admin' AND removed_at IS NULL`, orgID).Scan(&admins); err != nil {
				return fmt.Errorf("count admins: %w", err)
			}
			if admins > 0 {
				return ErrAdminExists
			}
		}
		return s.insertUser(ctx, tx, u, hash)
	})
	switch ctalk.ErrorCode(err) {
	case ctalk.EConflict:
		if !db.IsDuplicate(err) {
			return nil, err
		}
		if s.removed(ctx, orgID, u.ID) {
			return nil, ctalk.Errorf(ctalk.EConflict, "user id %q belonged to a former member of organization %q, and ids are never reused so that their past questions stay theirs; choose another user_id", u.ID, orgID)
		}
		return nil, ctalk.Errorf(ctalk.EConflict, "user id %q is taken in organization %q; choose another user_id", u.ID, orgID)
	case ctalk.ENotFound:
		return nil, notFoundOrg(orgID)
	}
	if err != nil {
		return nil, err
	}
	return u, nil
}

// newUser checks in as a member of orgID and hashes their password.
func (s *Service) newUser(orgID string, in NewUser) (*User, string, error) {
	u, errs := in.clean()
	if len(errs) > 0 {
		return nil, "", errs[0].Err
	}
	u.OrgID = orgID
	hash, err := s.auth.HashPassword("password", in.Password, auth.MinUserPasswordLen)
	if err != nil {
		return nil, "", err
	}
	return u, hash, nil
}

// insertUser stores u in tx.
func (s *Service) insertUser(ctx context.Context, tx db.Querier, u *User, hash string) error {
	own, _ := json.Marshal(u.Ownership)
	u.CreatedAt = s.db.Now()
	// An invite waiting for the id or address would fail when accepted.
	if invited, err := auth.PendingInvite(ctx, tx, u.OrgID, u.ID, u.Email); err != nil || invited {
		if err == nil {
			err = ctalk.Errorf(ctalk.EConflict, "%s or %s has an invite waiting; revoke it on the admin page first, or let the person accept it", u.ID, u.Email)
		}
		return err
	}
	if u.Email != "" {
		taken, err := s.emailTaken(ctx, tx, u.OrgID, u.ID, u.Email)
		if err != nil {
			return err
		}
		if taken {
			return emailConflict(u.Email)
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO users (org_id, id, name, role, ownership, notes, email, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)`,
		u.OrgID, u.ID, u.Name, u.Role, string(own), u.Notes, nullable(u.Email), u.CreatedAt)
	if err != nil {
		return fmt.Errorf("insert into users: %w", err)
	}
	_, err = auth.StorePassword(ctx, tx, u.OrgID, u.ID, hash)
	return err
}

// Org returns an organization.
//
// Returns ENotFound.
func (s *Service) Org(ctx context.Context, orgID string) (*Org, error) {
	o := &Org{Knowledge: &Knowledge{}}
	err := s.db.QueryRow(ctx, `SELECT id, name, approval_mode, channel_post_mode, agent_password_login, approval_factor, require_passkey, created_at, knowledge_sharing, knowledge_stale_days, settings_saved_at IS NOT NULL, departure_questions FROM orgs WHERE id = $1`, orgID).
		Scan(&o.ID, &o.Name, &o.ApprovalMode, &o.ChannelPostMode, &o.AgentPasswordLogin, &o.ApprovalFactor, &o.RequirePasskey, &o.CreatedAt, &o.Knowledge.Sharing, &o.Knowledge.StaleDays, &o.SettingsSaved, &o.DepartureQuestions)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFoundOrg(orgID)
	}
	if err != nil {
		return nil, fmt.Errorf("read orgs: %w", err)
	}
	return o, nil
}

const userColumns = `users.org_id, users.id, users.name, users.role, users.ownership, users.notes, users.profile_notes, users.email, users.created_at, users.away_until, users.away_delegate, users.away_note, ` + presenceColumns

// presenceColumns read a user's last call and the latest end of their wait
// marks, for PresenceOf: one primary-key range of presence_waits per user.
const presenceColumns = `users.last_seen_at, (SELECT MAX(w.wait_until) FROM presence_waits w WHERE w.org_id = users.org_id AND w.user_id = users.id)`

// User returns a current member of orgID.
//
// Returns EInvalid for a malformed id, ENotFound, also for a removed member.
func (s *Service) User(ctx context.Context, orgID, userID string) (*User, error) {
	userID, err := ctalk.ParseID("user_id", userID)
	if err != nil {
		return nil, err
	}
	u, err := scanUser(s.db.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE org_id = $1 AND id = $2 AND removed_at IS NULL`, orgID, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, auth.NotFoundUser(userID)
	}
	return u, err
}

var memberQuery = `SELECT ` + userColumns + `, o.id, o.name, o.approval_mode, o.channel_post_mode, o.agent_password_login, o.approval_factor, o.require_passkey, o.created_at
	FROM users JOIN orgs o ON o.id = users.org_id WHERE users.org_id = $1 AND users.id = $2 AND users.removed_at IS NULL`

// Member returns a user of orgID and the org, in one query: whoami's
// answer. What it read is served again for up to MemberCacheTTL.
//
// Returns ENotFound when either is gone or the user was removed.
func (s *Service) Member(ctx context.Context, orgID, userID string) (*User, *Org, error) {
	key, now := memberKey{orgID, userID}, s.db.Now()
	if m, ok := s.members.Get(key, now); ok {
		u, o := m.copies()
		return u, o, nil
	}
	read := s.members.Begin(now)
	o := &Org{}
	u, err := scanUser(s.db.QueryRow(ctx, memberQuery, orgID, userID), &o.ID, &o.Name, &o.ApprovalMode, &o.ChannelPostMode, &o.AgentPasswordLogin, &o.ApprovalFactor, &o.RequirePasskey, &o.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, auth.NotFoundUser(userID)
	}
	if err != nil {
		return nil, nil, err
	}
	// The caller's own presence is this very call: nothing to tell.
	u.Presence, u.LastSeenAt = "", nil
	if s.afterRead != nil {
		s.afterRead()
	}
	m := member{user: *u, org: *o}
	s.members.Put(key, m, read, time.Time{})
	u, o = m.copies()
	return u, o, nil
}

// Users lists the current members of orgID by id.
//
// Returns only the database's errors.
func (s *Service) Users(ctx context.Context, orgID string) ([]*User, error) {
	rows, err := s.db.Query(ctx, `SELECT `+userColumns+` FROM users WHERE org_id = $1 AND removed_at IS NULL ORDER BY id`, orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	users := []*User{}
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, err
		}
		users = append(users, u)
	}
	return users, rows.Err()
}

type scanner interface{ Scan(...any) error }

// scanUser scans userColumns, then into extra the columns that follow them.
func scanUser(r scanner, extra ...any) (*User, error) {
	u := &User{}
	var own string
	var seen, waitUntil db.NullTime
	var email sql.NullString
	var away Away
	var awayUntil db.NullTime
	if err := r.Scan(append([]any{&u.OrgID, &u.ID, &u.Name, &u.Role, &own, &u.Notes, &u.ProfileNotes, &email, &u.CreatedAt, &awayUntil, &away.Delegate, &away.Note, &seen, &waitUntil}, extra...)...); err != nil {
		return nil, err
	}
	u.Email = email.String
	if awayUntil.Valid && awayUntil.Time.After(time.Now()) {
		away.Until = awayUntil.Time.UTC()
		u.Away = &away
	}
	u.Presence = PresenceOf(seen, waitUntil, time.Now().UTC())
	if seen.Valid {
		t := seen.Time
		u.LastSeenAt = &t
	}
	u.Ownership = DecodeOwnership(own)
	return u, nil
}

func notFoundOrg(orgID string) error {
	return ctalk.Errorf(ctalk.ENotFound, "organization %q not found; check org_id, or create it with register_organization", orgID)
}
