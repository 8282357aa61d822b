package orgs

import (
	"context"
	"fmt"
	"strings"

	"github.com/ctalk/ctalk/db"
)

// Profile is a user as their coworkers' agents see them, also after they
// were removed from the org.
type Profile struct {
	*User
	// Removed marks a user who has since been removed from the org.
	Removed bool
}

// Profiles returns the users of orgID with the given ids, removed ones
// included, by id, in one statement read through r, so that a caller's
// transaction reads them with its other reads. An id that names no user is
// absent from the map.
func Profiles(ctx context.Context, r db.Reader, orgID string, ids []string) (map[string]Profile, error) {
	out := make(map[string]Profile, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, 0, len(ids)+1)
	args = append(args, orgID)
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := r.Query(ctx, `SELECT `+userColumns+`, removed_at IS NOT NULL FROM users WHERE org_id = $1 AND id IN (`+db.Placeholders(2, len(ids))+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("read profiles: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var p Profile
		if p.User, err = scanUser(rows, &p.Removed); err != nil {
			return nil, fmt.Errorf("read profiles: %w", err)
		}
		out[p.ID] = p
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read profiles: %w", err)
	}
	return out, nil
}

// currentMembersSQL lists which of the given users are current members of
// the org; the IN list is appended by CurrentMembers.
const currentMembersSQL = `SELECT id FROM users WHERE org_id = $1 AND removed_at IS NULL AND id IN `

// CurrentMembers returns which of ids are current members of orgID (not
// removed ones), read through q: inside the caller's transaction when q is
// one, so that what it checks holds for the rest of it.
func CurrentMembers(ctx context.Context, q db.Reader, orgID string, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	marks := make([]string, len(ids))
	args := []any{orgID}
	for i, id := range ids {
		marks[i] = fmt.Sprintf("$%d", i+2)
		args = append(args, id)
	}
	rows, err := q.Query(ctx, currentMembersSQL+"("+strings.Join(marks, ", ")+")", args...)
	if err != nil {
		return nil, fmt.Errorf("read users: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("read users: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
