package scim

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/channels"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/orgs"
)

// Group is a group of the identity provider as SCIM shows it: a private
// channel of the org (ID, its name) whose members the provider keeps.
type Group struct {
	ID          string
	DisplayName string
	ExternalID  string
	Members     []Member
	Version     int
	Created     time.Time
	Modified    time.Time
}

// Member is a member of a group: the member's user id, the SCIM User's
// id, and their name.
type Member struct {
	ID, Name string
}

// GroupAttrs are what a create or a replace of a group sets.
type GroupAttrs struct {
	DisplayName string
	ExternalID  string
	Members     []string
}

// check validates the attributes and the members' ids, which must be
// users of orgID: current members, or former ones, who are left out.
func (s *Service) checkGroup(ctx context.Context, orgID string, a *GroupAttrs) error {
	var err error
	if a.DisplayName, err = ctalk.Text("displayName", strings.TrimSpace(a.DisplayName), orgs.MaxNameLen, true); err != nil {
		return invalid("invalidValue", ctalk.ErrorMessage(err))
	}
	if a.ExternalID, err = ctalk.Text("externalId", a.ExternalID, MaxUserNameLen, false); err != nil {
		return invalid("invalidValue", ctalk.ErrorMessage(err))
	}
	a.Members, err = s.currentMembers(ctx, orgID, a.Members)
	return err
}

// currentMembers returns the current members among ids, which must each
// be a user of orgID (a former member is left out: they are in no
// channel).
func (s *Service) currentMembers(ctx context.Context, orgID string, ids []string) ([]string, error) {
	if len(ids) > channels.MaxGroupMembers {
		return nil, invalid("invalidValue", fmt.Sprintf("members: at most %d in one request; send the rest in a PATCH", channels.MaxGroupMembers))
	}
	var out []string
	for _, id := range ids {
		if !ctalk.IsID(id) {
			return nil, invalid("invalidValue", fmt.Sprintf("members: %.80q is not the id of a User", id))
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	profiles, err := orgs.Profiles(ctx, s.db, orgID, out)
	if err != nil {
		return nil, err
	}
	current := out[:0]
	for _, id := range out {
		p, ok := profiles[id]
		if !ok {
			return nil, invalid("invalidValue", fmt.Sprintf("members: User %.80q not found", id))
		}
		if !p.Removed {
			current = append(current, id)
		}
	}
	return current, nil
}

// groupKey is how displayNames are compared: case-insensitively.
func groupKey(displayName string) string { return strings.ToLower(displayName) }

// groupNotFound is the error for an id that is no SCIM group of the org:
// never there, deleted, or in another org alike.
func groupNotFound(id string) error {
	return ctalk.Errorf(ctalk.ENotFound, "Group %.80q not found", id)
}

// groupTaken is the error for a displayName another group of the org has.
func groupTaken(displayName string) error {
	return &Error{Status: 409, Type: "uniqueness", Detail: fmt.Sprintf("displayName %.100q is taken by another group of your organization", displayName)}
}

const groupColumns = `id, display_name, external_id, version, created_at, updated_at`

func scanGroup(r interface{ Scan(...any) error }) (*Group, error) {
	g := &Group{}
	if err := r.Scan(&g.ID, &g.DisplayName, &g.ExternalID, &g.Version, &g.Created, &g.Modified); err != nil {
		return nil, err
	}
	g.Created, g.Modified = g.Created.UTC(), g.Modified.UTC()
	return g, nil
}

// withGroupMembers fills in the members of groups, in two statements.
func (s *Service) withGroupMembers(ctx context.Context, orgID string, groups []*Group) error {
	names := make([]string, len(groups))
	for i, g := range groups {
		names[i] = g.ID
	}
	members, err := s.channels.ProvidedMembers(ctx, orgID, names)
	if err != nil {
		return err
	}
	var ids []string
	for _, m := range members {
		ids = append(ids, m...)
	}
	profiles, err := orgs.Profiles(ctx, s.db, orgID, ids)
	if err != nil {
		return err
	}
	for _, g := range groups {
		g.Members = []Member{}
		for _, id := range members[g.ID] {
			g.Members = append(g.Members, Member{ID: id, Name: profiles[id].Name})
		}
	}
	return nil
}

// GetGroup returns the SCIM group id of orgID with its members.
//
// Returns ENotFound.
func (s *Service) GetGroup(ctx context.Context, orgID, id string) (*Group, error) {
	if !ctalk.IsID(id) {
		return nil, groupNotFound(id)
	}
	g, err := scanGroup(s.db.QueryRow(ctx, `SELECT `+groupColumns+` FROM scim_groups WHERE org_id = $1 AND id = $2`, orgID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, groupNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("read scim_groups: %w", err)
	}
	return g, s.withGroupMembers(ctx, orgID, []*Group{g})
}

// ListGroups returns the page of orgID's SCIM groups that starts at the
// 1-based startIndex and holds at most count groups, by id, matching f
// when f is set (displayName, externalId or id), with how many match in
// all; their members only when members is true.
//
// Returns only the database's errors.
func (s *Service) ListGroups(ctx context.Context, orgID string, f *Filter, startIndex, count int, members bool) ([]*Group, int, error) {
	where, args := `org_id = $1`, []any{orgID}
	if f != nil {
		switch f.Attr {
		case "displayName":
			where, args = where+` AND display_key = $2`, append(args, groupKey(f.Value))
		case "externalId":
			where, args = where+` AND external_id = $2`, append(args, f.Value)
		case "id":
			where, args = where+` AND id = $2`, append(args, f.Value)
		}
	}
	groups, total, err := page(ctx, s.db, `SELECT COUNT(*) FROM scim_groups WHERE `+where, `SELECT `+groupColumns+` FROM scim_groups WHERE `+where+` ORDER BY id`,
		args, startIndex, count, scanGroup)
	if err != nil {
		return nil, 0, fmt.Errorf("read scim_groups: %w", err)
	}
	if !members {
		return groups, total, nil
	}
	return groups, total, s.withGroupMembers(ctx, orgID, groups)
}

// CreateGroup makes a group of orgID: a private channel named from its
// displayName (see slug), whose members are a's.
//
// Returns EInvalid (as *Error) for bad attributes or a member who is no
// user of the org, EConflict (as *Error, uniqueness) when another group
// has the displayName.
func (s *Service) CreateGroup(ctx context.Context, orgID string, a GroupAttrs) (*Group, error) {
	if err := s.checkGroup(ctx, orgID, &a); err != nil {
		return nil, err
	}
	id, err := s.channels.Provide(ctx, orgID, groupSlug(a.DisplayName), a.Members, func(ctx context.Context, tx db.Querier, name string) error {
		now := s.db.Now()
		_, err := tx.Exec(ctx, `INSERT INTO scim_groups (org_id, id, display_name, display_key, external_id, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $6)`, orgID, name, a.DisplayName, groupKey(a.DisplayName), a.ExternalID, now)
		if db.IsDuplicate(err) {
			return groupTaken(a.DisplayName)
		}
		if err != nil {
			return fmt.Errorf("insert into scim_groups: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.GetGroup(ctx, orgID, id)
}

// groupChange is what a replace or a patch of a group changes: its
// attributes, and its members (all of them when all is set, then add and
// remove).
type groupChange struct {
	match       Precondition
	attrs       GroupAttrs
	all         *[]string
	add, remove []string
}

// ReplaceGroup sets the displayName, externalId and members of the group
// id of orgID to a's (PUT). The channel keeps its name.
//
// With a precondition (If-Match), the group's version is checked in the
// transaction that changes it and its channel.
//
// Returns ENotFound, EInvalid and EConflict (as *Error), a 412 *Error when
// match refuses the group's version.
func (s *Service) ReplaceGroup(ctx context.Context, orgID, id string, a GroupAttrs, match Precondition) (*Group, error) {
	if _, err := s.GetGroup(ctx, orgID, id); err != nil {
		return nil, err
	}
	if err := s.checkGroup(ctx, orgID, &a); err != nil {
		return nil, err
	}
	return s.changeGroup(ctx, orgID, id, &groupChange{match: match, attrs: a, all: &a.Members})
}

// PatchGroup applies ops to the group id of orgID (PATCH): members added
// (path members, or a value object with members), removed (path
// members with a value list, or members[value eq "id"]), or replaced, and
// displayName or externalId replaced. Members added and removed are
// changed as named, so that two patches at once both land.
//
// Returns ReplaceGroup's errors, and EInvalid (as *Error) for an
// operation it cannot apply.
func (s *Service) PatchGroup(ctx context.Context, orgID, id string, ops []Op, match Precondition) (*Group, error) {
	cur, err := s.GetGroup(ctx, orgID, id)
	if err != nil {
		return nil, err
	}
	c := &groupChange{match: match, attrs: GroupAttrs{DisplayName: cur.DisplayName, ExternalID: cur.ExternalID}}
	for i, op := range ops {
		if err := op.applyGroup(c); err != nil {
			return nil, &Error{Status: 400, Type: err.Type, Detail: fmt.Sprintf("Operations[%d]: %s", i, err.Detail)}
		}
	}
	a := c.attrs
	a.Members = nil
	if err := s.checkGroup(ctx, orgID, &a); err != nil {
		return nil, err
	}
	c.attrs = a
	if c.add, err = s.currentMembers(ctx, orgID, c.add); err != nil {
		return nil, err
	}
	if c.all != nil {
		all, err := s.currentMembers(ctx, orgID, *c.all)
		if err != nil {
			return nil, err
		}
		c.all = &all
	}
	for _, r := range c.remove {
		if !ctalk.IsID(r) {
			return nil, invalid("invalidValue", fmt.Sprintf("members: %.80q is not the id of a User", r))
		}
	}
	return s.changeGroup(ctx, orgID, id, c)
}

// changeGroup stores c in the group id of orgID.
func (s *Service) changeGroup(ctx context.Context, orgID, id string, c *groupChange) (*Group, error) {
	err := s.channels.SetProvided(ctx, orgID, id, c.all, c.add, c.remove, func(ctx context.Context, tx db.Querier) error {
		var v int
		err := tx.QueryRow(ctx, `UPDATE scim_groups SET display_name = $1, display_key = $2, external_id = $3, version = version + 1, updated_at = $4
			WHERE org_id = $5 AND id = $6 RETURNING version`, c.attrs.DisplayName, groupKey(c.attrs.DisplayName), c.attrs.ExternalID, s.db.Now(), orgID, id).Scan(&v)
		if db.IsDuplicate(err) {
			return groupTaken(c.attrs.DisplayName)
		}
		if errors.Is(err, sql.ErrNoRows) {
			return groupNotFound(id)
		}
		if err != nil {
			return fmt.Errorf("update scim_groups: %w", err)
		}
		if c.match != nil && !c.match(v-1) {
			// The channel's changes of this transaction go back with it.
			return preconditionFailed(v - 1)
		}
		return nil
	})
	if ctalk.ErrorCode(err) == ctalk.ENotFound {
		return nil, groupNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	return s.GetGroup(ctx, orgID, id)
}

// DeleteGroup deletes the group id of orgID: its channel is archived,
// its history kept for its members, and the group is "not found" from
// then on.
//
// Returns ENotFound, a 412 *Error when match refuses the group's version.
func (s *Service) DeleteGroup(ctx context.Context, orgID, id string, match Precondition) error {
	if !ctalk.IsID(id) {
		return groupNotFound(id)
	}
	err := s.channels.RetireProvided(ctx, orgID, id, func(ctx context.Context, tx db.Querier) error {
		var v int
		err := tx.QueryRow(ctx, `DELETE FROM scim_groups WHERE org_id = $1 AND id = $2 RETURNING version`, orgID, id).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return groupNotFound(id)
		}
		if err != nil {
			return fmt.Errorf("delete from scim_groups: %w", err)
		}
		if match != nil && !match(v) {
			return preconditionFailed(v)
		}
		return nil
	})
	if ctalk.ErrorCode(err) == ctalk.ENotFound {
		return groupNotFound(id)
	}
	return err
}

// groupSlug makes a channel name from a displayName.
func groupSlug(displayName string) string { return idFrom(displayName, "group-") }

// membersPath is a path that names members by value:
// members[value eq "id"].
var membersPath = filterPath("members")

// applyGroup applies the operation to c.
func (o Op) applyGroup(c *groupChange) *Error {
	op, v, err := o.parse()
	if err != nil {
		return err
	}
	path := strings.TrimSpace(o.Path)
	if path == "" {
		return eachAttr(op, v, c.set)
	}
	if m := membersPath.FindStringSubmatch(path); m != nil {
		if op != "remove" {
			return invalid("invalidPath", "members[value eq ...] is only removed; add members with the path members")
		}
		var id string
		if json.Unmarshal([]byte(m[1]), &id) != nil {
			return invalid("invalidPath", "the member's value is not a well-formed quoted string")
		}
		c.drop([]string{id})
		return nil
	}
	return c.set(op, path, v)
}

// set applies one attribute's operation.
func (c *groupChange) set(op, path string, v any) *Error {
	switch p := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(path)), groupPrefix); p {
	case "displayname":
		s, ok := v.(string)
		if op == "remove" || !ok {
			return invalid("invalidValue", "displayName is required and must be a string")
		}
		c.attrs.DisplayName = s
	case "externalid":
		s, _ := v.(string)
		c.attrs.ExternalID = s
	case "members":
		ids, err := memberIDs(v)
		if err != nil {
			return err
		}
		switch {
		case op == "replace" || op == "remove" && v == nil:
			if op == "remove" {
				ids = []string{}
			}
			c.all, c.add, c.remove = &ids, nil, nil
		case op == "add":
			c.remove = slices.DeleteFunc(c.remove, func(id string) bool { return slices.Contains(ids, id) })
			if c.all != nil {
				*c.all = append(*c.all, ids...)
			} else {
				c.add = append(c.add, ids...)
			}
		default:
			c.drop(ids)
		}
	}
	return nil
}

// drop removes ids from the members.
func (c *groupChange) drop(ids []string) {
	c.add = slices.DeleteFunc(c.add, func(id string) bool { return slices.Contains(ids, id) })
	if c.all != nil {
		*c.all = slices.DeleteFunc(*c.all, func(id string) bool { return slices.Contains(ids, id) })
		return
	}
	c.remove = append(c.remove, ids...)
}

// memberIDs reads a members value: a list of {value, display, $ref}, or
// one such object.
func memberIDs(v any) ([]string, *Error) {
	var list []any
	switch m := v.(type) {
	case nil:
		return nil, nil
	case []any:
		list = m
	case map[string]any:
		list = []any{m}
	default:
		return nil, invalid("invalidValue", `members must be a list of objects such as {"value": "USER-ID"}`)
	}
	ids := []string{}
	for _, item := range list {
		obj, _ := item.(map[string]any)
		id, ok := obj["value"].(string)
		if !ok || id == "" {
			return nil, invalid("invalidValue", `members must be a list of objects such as {"value": "USER-ID"}`)
		}
		ids = append(ids, id)
	}
	return ids, nil
}
