package scim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/orgs"
)

// MaxUserNameLen bounds a userName or externalId, in characters.
const MaxUserNameLen = 256

// User is a member as SCIM shows them: the identity provider's names for
// them (UserName, ExternalID, GivenName, FamilyName) and ctalk's (ID, the
// member's user id; DisplayName, their name; Email; Active, whether they
// are a current member).
type User struct {
	ID          string
	UserName    string
	ExternalID  string
	GivenName   string
	FamilyName  string
	DisplayName string
	Email       string
	Active      bool
	Version     int
	Created     time.Time
	Modified    time.Time
	// admin is true for an org admin, whose address SCIM does not change.
	admin bool
}

// Attrs are the attributes a create, a replace or a patch sets.
type Attrs struct {
	UserName    string
	ExternalID  string
	GivenName   string
	FamilyName  string
	Formatted   string
	DisplayName string
	Email       string
	Active      bool
	// sameActive, set for a body without active, keeps a replaced user as
	// active as they were: a PUT that leaves it out reactivates nobody.
	sameActive bool
}

// name is the member's name the attributes give: the display name, else
// the formatted name, else given and family name, else the userName.
func (a Attrs) name() string {
	for _, n := range []string{a.DisplayName, a.Formatted, strings.TrimSpace(a.GivenName + " " + a.FamilyName)} {
		if strings.TrimSpace(n) != "" {
			return strings.TrimSpace(n)
		}
	}
	return a.UserName
}

// check validates the attributes every write needs.
func (a *Attrs) check() error {
	a.UserName = strings.TrimSpace(a.UserName)
	if a.UserName == "" {
		return invalid("invalidValue", "userName is required")
	}
	var err error
	if a.UserName, err = ctalk.Text("userName", a.UserName, MaxUserNameLen, true); err != nil {
		return invalid("invalidValue", ctalk.ErrorMessage(err))
	}
	if a.ExternalID, err = ctalk.Text("externalId", a.ExternalID, MaxUserNameLen, false); err != nil {
		return invalid("invalidValue", ctalk.ErrorMessage(err))
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"name.givenName", &a.GivenName}, {"name.familyName", &a.FamilyName}, {"name.formatted", &a.Formatted}, {"displayName", &a.DisplayName}} {
		if *f.v, err = ctalk.Text(f.name, *f.v, orgs.MaxNameLen, false); err != nil {
			return invalid("invalidValue", ctalk.ErrorMessage(err))
		}
	}
	if a.Email != "" {
		if a.Email, err = ctalk.ParseEmail("emails.value", a.Email); err != nil {
			return invalid("invalidValue", ctalk.ErrorMessage(err))
		}
	}
	return nil
}

// userKey is how userNames are compared: case-insensitively, as RFC 7643
// defines userName (caseExact false).
func userKey(userName string) string { return strings.ToLower(userName) }

// linkColumns are the columns of scim_users a user is read from.
const linkColumns = `user_id, user_name, external_id, given_name, family_name, version, created_at, updated_at`

func scanLink(r interface{ Scan(...any) error }) (*User, error) {
	u := &User{}
	if err := r.Scan(&u.ID, &u.UserName, &u.ExternalID, &u.GivenName, &u.FamilyName, &u.Version, &u.Created, &u.Modified); err != nil {
		return nil, err
	}
	u.Created, u.Modified = u.Created.UTC(), u.Modified.UTC()
	return u, nil
}

// withMembers fills in what orgs holds of each user, in one statement.
func (s *Service) withMembers(ctx context.Context, orgID string, users []*User) error {
	ids := make([]string, len(users))
	for i, u := range users {
		ids[i] = u.ID
	}
	profiles, err := orgs.Profiles(ctx, s.db, orgID, ids)
	if err != nil {
		return err
	}
	for _, u := range users {
		p, ok := profiles[u.ID]
		if !ok {
			continue
		}
		u.DisplayName, u.Email, u.Active, u.admin = p.Name, p.Email, !p.Removed, p.Role == orgs.RoleAdmin
	}
	return nil
}

// notFound is the error for a user id that is not a SCIM user of the org:
// never there, deleted, or in another org alike.
func notFound(id string) error {
	return ctalk.Errorf(ctalk.ENotFound, "User %.80q not found", id)
}

// Get returns the SCIM user id of orgID.
//
// Returns ENotFound.
func (s *Service) Get(ctx context.Context, orgID, id string) (*User, error) {
	if !ctalk.IsID(id) {
		// No user has such an id, and the database need not be asked.
		return nil, notFound(id)
	}
	u, err := scanLink(s.db.QueryRow(ctx, `SELECT `+linkColumns+` FROM scim_users WHERE org_id = $1 AND user_id = $2`, orgID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("read scim_users: %w", err)
	}
	return u, s.withMembers(ctx, orgID, []*User{u})
}

// Filter is the one comparison a list may filter by: Attr ("userName",
// "externalId" or "id") equal to Value.
type Filter struct {
	Attr, Value string
}

// MaxCount is the most users one page of a list holds.
const MaxCount = 200

// List returns the page of orgID's SCIM users that starts at the
// 1-based startIndex and holds at most count users, by user id, matching
// f when f is set, with how many match in all.
//
// Returns only the database's errors.
func (s *Service) List(ctx context.Context, orgID string, f *Filter, startIndex, count int) ([]*User, int, error) {
	where, args := `org_id = $1`, []any{orgID}
	if f != nil {
		switch f.Attr {
		case "userName":
			where, args = where+` AND user_name_key = $2`, append(args, userKey(f.Value))
		case "externalId":
			where, args = where+` AND external_id = $2`, append(args, f.Value)
		case "id":
			where, args = where+` AND user_id = $2`, append(args, f.Value)
		}
	}
	users, total, err := page(ctx, s.db, `SELECT COUNT(*) FROM scim_users WHERE `+where, `SELECT `+linkColumns+` FROM scim_users WHERE `+where+` ORDER BY user_id`,
		args, startIndex, count, scanLink)
	if err != nil {
		return nil, 0, fmt.Errorf("read scim_users: %w", err)
	}
	return users, total, s.withMembers(ctx, orgID, users)
}

// page reads a page of a list: how many rows countSQL counts, and the rows
// of selectSQL (ordered) from the 1-based startIndex, at most count, each
// read by scan; both statements take args.
func page[T any](ctx context.Context, d *db.DB, countSQL, selectSQL string, args []any, startIndex, count int, scan func(interface{ Scan(...any) error }) (T, error)) ([]T, int, error) {
	var total int
	if err := d.QueryRow(ctx, countSQL, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	out := []T{}
	if count == 0 || startIndex > total {
		return out, total, nil
	}
	n := len(args)
	rows, err := d.Query(ctx, fmt.Sprintf(`%s LIMIT $%d OFFSET $%d`, selectSQL, n+1, n+2), append(args, count, startIndex-1)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, v)
	}
	return out, total, rows.Err()
}

// taken is the error for a userName another SCIM user of the org has.
func taken(userName string) error {
	return &Error{Status: 409, Type: "uniqueness", Detail: fmt.Sprintf("userName %.100q is taken by another user of your organization", userName)}
}

// Create provisions a member of orgID from a: a new member, or the current
// member whose address a's email (or its userName, when that is an
// address) is, who has no SCIM user yet. A new member's user id is made
// from the userName; they have no password.
//
// Returns EInvalid (as *Error) for bad attributes, EConflict (as *Error,
// uniqueness) when the userName is taken, and the errors of
// orgs.Service.Provision.
func (s *Service) Create(ctx context.Context, orgID string, a Attrs) (*User, error) {
	if a.Email == "" {
		if e, err := ctalk.ParseEmail("userName", a.UserName); err == nil {
			a.Email = e
		}
	}
	if err := a.check(); err != nil {
		return nil, err
	}
	if _, err := s.byUserName(ctx, orgID, a.UserName); err == nil {
		return nil, taken(a.UserName)
	}
	id, err := s.adopt(ctx, orgID, a)
	if err != nil {
		return nil, err
	}
	if id == "" {
		if id, err = s.provision(ctx, orgID, a); err != nil {
			return nil, err
		}
	}
	if !a.Active {
		if _, _, err := s.departures.Leave(ctx, orgID, id); err != nil {
			return nil, err
		}
	}
	return s.Get(ctx, orgID, id)
}

// byUserName returns the user id of the SCIM user of orgID with userName.
func (s *Service) byUserName(ctx context.Context, orgID, userName string) (string, error) {
	var id string
	err := s.db.QueryRow(ctx, `SELECT user_id FROM scim_users WHERE org_id = $1 AND user_name_key = $2`, orgID, userKey(userName)).Scan(&id)
	return id, err
}

// link stores, in tx, the SCIM user of the member userID.
func (s *Service) link(ctx context.Context, tx db.Querier, orgID, userID string, a Attrs) error {
	now := s.db.Now()
	_, err := tx.Exec(ctx, `INSERT INTO scim_users (org_id, user_id, user_name, user_name_key, external_id, given_name, family_name, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)`, orgID, userID, a.UserName, userKey(a.UserName), a.ExternalID, a.GivenName, a.FamilyName, now)
	if db.IsDuplicate(err) {
		return taken(a.UserName)
	}
	if err != nil {
		return fmt.Errorf("insert into scim_users: %w", err)
	}
	return nil
}

// adopt links the current member whose address a names, when there is one
// without a SCIM user, and returns their id; "" when there is none.
func (s *Service) adopt(ctx context.Context, orgID string, a Attrs) (string, error) {
	if a.Email == "" {
		return "", nil
	}
	m, err := s.orgs.MemberByEmail(ctx, orgID, a.Email)
	if ctalk.ErrorCode(err) == ctalk.ENotFound {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	err = s.db.Tx(ctx, func(tx db.Querier) error { return s.link(ctx, tx, orgID, m.ID, a) })
	if err != nil {
		if db.IsDuplicate(err) || ctalk.ErrorCode(err) == ctalk.EConflict {
			// The member has a SCIM user already, under another userName.
			return "", &Error{Status: 409, Type: "uniqueness", Detail: fmt.Sprintf("the member with the address %s is provisioned already under another userName", a.Email)}
		}
		return "", err
	}
	return m.ID, nil
}

// provision creates a new member for a, with a user id made from its
// userName that names no member, current or former.
func (s *Service) provision(ctx context.Context, orgID string, a Attrs) (string, error) {
	base := slug(a.UserName)
	candidates := []string{base}
	for i := 2; i <= 20; i++ {
		candidates = append(candidates, fmt.Sprintf("%s-%d", trimTo(base, ctalk.MaxIDLen-3), i))
	}
	existing, err := orgs.Profiles(ctx, s.db, orgID, candidates)
	if err != nil {
		return "", err
	}
	id := ""
	for _, c := range candidates {
		if _, ok := existing[c]; !ok {
			id = c
			break
		}
	}
	if id == "" {
		id = trimTo(base, ctalk.MaxIDLen-25) + "-" + ctalk.SortedID("")[:24]
	}
	_, err = s.orgs.Provision(ctx, orgID, orgs.NewUser{ID: id, Name: trimTo(a.name(), orgs.MaxNameLen), Email: a.Email},
		func(ctx context.Context, tx db.Querier, u *orgs.User) error { return s.link(ctx, tx, orgID, u.ID, a) })
	if ctalk.ErrorCode(err) == ctalk.EConflict {
		// A create of the same userName racing this one won.
		if _, e := s.byUserName(ctx, orgID, a.UserName); e == nil {
			return "", taken(a.UserName)
		}
		return "", &Error{Status: 409, Type: "uniqueness", Detail: ctalk.ErrorMessage(err)}
	}
	return id, err
}

// slug makes a user id from a userName: the part before any @, as idFrom
// makes it.
func slug(userName string) string {
	local, _, _ := strings.Cut(userName, "@")
	return idFrom(local, "user-")
}

// idFrom makes an id from s: lower-case, every run of other characters
// than a-z and 0-9 one '-', after prefix when that leaves nothing or an
// id that starts with ctalk.
func idFrom(s, prefix string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	id := strings.Trim(trimTo(b.String(), ctalk.MaxIDLen), "-")
	if id == "" || strings.HasPrefix(id, "ctalk") {
		id = prefix + id
	}
	return strings.Trim(trimTo(id, ctalk.MaxIDLen), "-")
}

// trimTo cuts s to at most n characters.
func trimTo(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// Replace sets every attribute of the SCIM user id of orgID to a's (PUT):
// the member's name and address, the identity provider's names, and
// whether they are active: a member made inactive leaves the org (see
// usecase.Departures.Leave), one made active again is reinstated.
//
// With a precondition (If-Match), the version it accepts is claimed first
// (see claimUser): of two writes made with the same version, one fails.
//
// Returns ENotFound, EInvalid and EConflict (as *Error), EConflict when
// deactivating the org's last admin, a 412 *Error when match refuses the
// user's version.
func (s *Service) Replace(ctx context.Context, orgID, id string, a Attrs, match Precondition) (*User, error) {
	if _, err := s.Get(ctx, orgID, id); err != nil {
		return nil, err
	}
	if err := a.check(); err != nil {
		return nil, err
	}
	if err := s.claimUser(ctx, orgID, id, match); err != nil {
		return nil, err
	}
	cur, err := s.Get(ctx, orgID, id)
	if err != nil {
		return nil, err
	}
	if a.sameActive {
		a.Active = cur.Active
	}
	if userKey(a.UserName) != userKey(cur.UserName) {
		if _, err := s.byUserName(ctx, orgID, a.UserName); err == nil {
			return nil, taken(a.UserName)
		}
	}
	if a.Email == "" {
		// An address left out stays: reset links and notifications go to it.
		a.Email = cur.Email
	}
	if err := s.applyToMember(ctx, orgID, id, a, cur); err != nil {
		return nil, err
	}
	if err := s.storeAttrs(ctx, orgID, id, a, match); err != nil {
		return nil, err
	}
	return s.Get(ctx, orgID, id)
}

// applyToMember makes the member behind the SCIM user id what a says,
// from cur: reinstated, renamed, readdressed (never an admin's address),
// or gone, through orgs and the departures.
func (s *Service) applyToMember(ctx context.Context, orgID, id string, a Attrs, cur *User) error {
	if a.Active && !cur.Active {
		if err := s.orgs.Reinstate(ctx, orgID, id); err != nil {
			return err
		}
		cur.Active = true
	}
	if cur.Active {
		if name := trimTo(a.name(), orgs.MaxNameLen); name != cur.DisplayName {
			if err := s.orgs.SetName(ctx, orgID, id, name); err != nil {
				return err
			}
		}
		if a.Email != cur.Email {
			if cur.admin {
				return &Error{Status: 400, Type: "mutability", Detail: "the address of an org admin changes only in ctalk's web app, by the admin: a reset link is mailed to it"}
			}
			if _, err := s.orgs.SetEmail(ctx, orgID, id, a.Email); err != nil {
				return err
			}
		}
	}
	if !a.Active && cur.Active {
		if _, _, err := s.departures.Leave(ctx, orgID, id); err != nil {
			return err
		}
	}
	return nil
}

// storeAttrs stores a's SCIM attributes of user id, moving its version on
// unless match's claim moved it already.
func (s *Service) storeAttrs(ctx context.Context, orgID, id string, a Attrs, match Precondition) error {
	return s.db.Tx(ctx, func(tx db.Querier) error {
		// A write whose claim moved the version on moves it no further.
		step := 1
		if match != nil {
			step = 0
		}
		res, err := tx.Exec(ctx, `UPDATE scim_users SET user_name = $1, user_name_key = $2, external_id = $3, given_name = $4, family_name = $5, version = version + $9, updated_at = $6
			WHERE org_id = $7 AND user_id = $8`, a.UserName, userKey(a.UserName), a.ExternalID, a.GivenName, a.FamilyName, s.db.Now(), orgID, id, step)
		if db.IsDuplicate(err) {
			return taken(a.UserName)
		}
		if err != nil {
			return fmt.Errorf("update scim_users: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound(id)
		}
		return nil
	})
}

// attrs are the attributes u holds, which a patch starts from.
func (u *User) attrs() Attrs {
	return Attrs{UserName: u.UserName, ExternalID: u.ExternalID, GivenName: u.GivenName, FamilyName: u.FamilyName,
		DisplayName: u.DisplayName, Email: u.Email, Active: u.Active}
}

// Patch applies ops to the SCIM user id of orgID (PATCH), then stores the
// result as Replace does.
//
// Returns Replace's errors, and EInvalid (as *Error) for an operation it
// cannot apply.
func (s *Service) Patch(ctx context.Context, orgID, id string, ops []Op, match Precondition) (*User, error) {
	cur, err := s.Get(ctx, orgID, id)
	if err != nil {
		return nil, err
	}
	a := cur.attrs()
	for i, op := range ops {
		if err := op.apply(&a); err != nil {
			return nil, &Error{Status: 400, Type: err.Type, Detail: fmt.Sprintf("Operations[%d]: %s", i, err.Detail)}
		}
	}
	return s.Replace(ctx, orgID, id, a, match)
}

// Delete deletes the SCIM user id of orgID: the member leaves the org (see
// usecase.Departures.Leave), and the identity provider's record of them
// goes, so that the user is "not found" from then on. The member's row
// stays, removed, as every former member's does.
//
// Returns ENotFound, EConflict for the org's last admin, a 412 *Error
// when match refuses the user's version.
func (s *Service) Delete(ctx context.Context, orgID, id string, match Precondition) error {
	if _, err := s.Get(ctx, orgID, id); err != nil {
		return err
	}
	if err := s.claimUser(ctx, orgID, id, match); err != nil {
		return err
	}
	if _, _, err := s.departures.Leave(ctx, orgID, id); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx db.Querier) error {
		res, err := tx.Exec(ctx, `DELETE FROM scim_users WHERE org_id = $1 AND user_id = $2`, orgID, id)
		if err != nil {
			return fmt.Errorf("delete from scim_users: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound(id)
		}
		return nil
	})
}

// Precondition is a write's If-Match: whether it may change a resource at
// the given version. A nil Precondition accepts any.
type Precondition func(version int) bool

// preconditionFailed is the refusal of a write whose If-Match names
// another version than the resource's.
func preconditionFailed(version int) error {
	return &Error{Status: 412, Detail: fmt.Sprintf("the resource changed since it was read: its version is %s; read it again", etag(version))}
}

// claimUser moves the SCIM user id's version on and checks, in the same
// transaction, that match accepts the version it had: the row's lock
// orders writes made at once, so that of two made with the same version
// the second finds it moved and fails. A user's write changes the member
// through orgs and usecase in transactions of their own, so the claim
// comes first and the write's own update then leaves the version as
// claimed. A write refused after its claim (the last admin, say) leaves
// the version moved, which only sends the identity provider to read the
// user again. Without a precondition it does nothing.
func (s *Service) claimUser(ctx context.Context, orgID, id string, match Precondition) error {
	if match == nil {
		return nil
	}
	return s.db.Tx(ctx, func(tx db.Querier) error {
		var v int
		err := tx.QueryRow(ctx, `UPDATE scim_users SET version = version + 1 WHERE org_id = $1 AND user_id = $2 RETURNING version`, orgID, id).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(id)
		}
		if err != nil {
			return fmt.Errorf("update scim_users: %w", err)
		}
		if !match(v - 1) {
			return preconditionFailed(v - 1)
		}
		return nil
	})
}
