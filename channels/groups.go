package channels

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// MaxGroupMembers bounds the members one change of a provided channel
// names.
const MaxGroupMembers = 1000

// Provided channels are the private channels an org's identity provider
// keeps (SCIM groups, package scim): made and given their members by the
// provider rather than by a member. Each method takes also, which its
// caller's own table is written by in the same transaction.

// Provide makes a private channel of orgID named base, or base-2 to
// base-20 when taken (by a current or archived channel), whose members
// are the current members of the org among members, and returns its name.
//
// Returns EInvalid for a base that is not a channel name, EConflict when
// every name is taken, and also's errors.
func (s *Service) Provide(ctx context.Context, orgID, base string, members []string, also func(ctx context.Context, tx db.Querier, name string) error) (string, error) {
	base, err := ParseName(base)
	if err != nil {
		return "", err
	}
	candidates := []string{base}
	for i := 2; i <= 20; i++ {
		candidates = append(candidates, fmt.Sprintf("%s-%d", base[:min(len(base), ctalk.MaxIDLen-3)], i))
	}
	name := ""
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		taken, err := column(tx.Query(ctx, `SELECT name FROM channels WHERE org_id = $1 AND name IN `+inList(2, len(candidates)), append([]any{orgID}, anys(candidates)...)...))
		if err != nil {
			return fmt.Errorf("read channels: %w", err)
		}
		for _, c := range candidates {
			if !slices.Contains(taken, c) {
				name = c
				break
			}
		}
		if name == "" {
			return ctalk.Errorf(ctalk.EConflict, "channels #%s to #%s are all taken: rename the group", base, candidates[len(candidates)-1])
		}
		now := s.db.Now()
		if _, err := tx.Exec(ctx, insertChannelSQL, orgID, name, true, "", "", "", now); err != nil {
			return err
		}
		if len(members) > 0 {
			if _, err := tx.Exec(ctx, fmt.Sprintf(addMembersSQL, inList(4, len(members))), append([]any{orgID, name, now}, anys(members)...)...); err != nil {
				return err
			}
		}
		return also(ctx, tx, name)
	})
	if err != nil {
		return "", err
	}
	s.wakeUsers(orgID, members)
	return name, nil
}

// SetProvided changes the members of orgID's provided channel name: when
// all is not nil, they become the current members of the org among all;
// then the current members among add join and those among remove leave.
//
// Returns ENotFound when the org has no channel name, EConflict when it
// is archived, and also's errors.
func (s *Service) SetProvided(ctx context.Context, orgID, name string, all *[]string, add, remove []string, also func(ctx context.Context, tx db.Querier) error) error {
	changed := slices.Concat(add, remove)
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		var archivedAt sql.NullTime
		err := tx.QueryRow(ctx, `SELECT archived_at FROM channels WHERE org_id = $1 AND name = $2`, orgID, name).Scan(&archivedAt)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(name)
		}
		if err != nil {
			return fmt.Errorf("read channels: %w", err)
		}
		if archivedAt.Valid {
			return archived(name)
		}
		now := s.db.Now()
		if all != nil {
			q := `DELETE FROM channel_members WHERE org_id = $1 AND channel = $2 RETURNING user_id`
			if len(*all) > 0 {
				q = `DELETE FROM channel_members WHERE org_id = $1 AND channel = $2 AND user_id NOT IN ` + inList(3, len(*all)) + ` RETURNING user_id`
			}
			gone, err := column(tx.Query(ctx, q, append([]any{orgID, name}, anys(*all)...)...))
			if err != nil {
				return fmt.Errorf("delete from channel_members: %w", err)
			}
			changed = append(changed, gone...)
			add = slices.Concat(*all, add)
			changed = append(changed, *all...)
		}
		if len(add) > 0 {
			if _, err := tx.Exec(ctx, fmt.Sprintf(addMembersSQL, inList(4, len(add))), append([]any{orgID, name, now}, anys(add)...)...); err != nil {
				return err
			}
		}
		if len(remove) > 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM channel_members WHERE org_id = $1 AND channel = $2 AND user_id IN `+inList(3, len(remove)),
				append([]any{orgID, name}, anys(remove)...)...); err != nil {
				return fmt.Errorf("delete from channel_members: %w", err)
			}
		}
		return also(ctx, tx)
	})
	if err != nil {
		return err
	}
	s.wakeUsers(orgID, changed)
	return nil
}

// column reads the one column of the rows of a query.
func column(rows *db.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// ProvidedMembers returns the user ids of the members of orgID's channels
// names, by channel, in one statement.
//
// Returns only the database's errors.
func (s *Service) ProvidedMembers(ctx context.Context, orgID string, names []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(names) == 0 {
		return out, nil
	}
	rows, err := s.db.Query(ctx, `SELECT channel, user_id FROM channel_members WHERE org_id = $1 AND channel IN `+inList(2, len(names))+` ORDER BY channel, user_id`,
		append([]any{orgID}, anys(names)...)...)
	if err != nil {
		return nil, fmt.Errorf("read channel_members: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ch, id string
		if err := rows.Scan(&ch, &id); err != nil {
			return nil, err
		}
		out[ch] = append(out[ch], id)
	}
	return out, rows.Err()
}

// RetireProvided archives orgID's provided channel name, whose history
// stays readable by its members.
//
// Returns ENotFound when the org has no channel name, and also's errors.
func (s *Service) RetireProvided(ctx context.Context, orgID, name string, also func(ctx context.Context, tx db.Querier) error) error {
	return s.db.Tx(ctx, func(tx db.Querier) error {
		res, err := tx.Exec(ctx, `UPDATE channels SET archived_at = COALESCE(archived_at, $3) WHERE org_id = $1 AND name = $2`, orgID, name, s.db.Now())
		if err != nil {
			return fmt.Errorf("update channels: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound(name)
		}
		return also(ctx, tx)
	})
}
