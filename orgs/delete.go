package orgs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// DeletionGrace is how long after an admin schedules an organization's
// deletion its rows are deleted; until then an admin may cancel it.
const DeletionGrace = 7 * 24 * time.Hour

// Deletion is an organization's deletion, scheduled by an admin.
type Deletion struct {
	DueAt       time.Time
	RequestedAt time.Time
	RequestedBy string
}

// ScheduleDeletion schedules the deletion of the caller's org
// DeletionGrace from now, and returns it with the members to tell. From
// this moment every token, OAuth grant and browser session of the org's
// members is refused (auth reads the org's deletion_due_at with each
// credential), except an admin's browser session, in which an admin may
// still export the org's data or cancel; every open wait and stream ends.
// Only a person in the web app may call it (see docs/data.md).
//
// Returns EForbidden when the caller is not an admin, EConflict when the
// deletion is scheduled already, ENotFound for an unknown org.
func (s *Service) ScheduleDeletion(ctx context.Context, c ctalk.Caller) (*Deletion, []*User, error) {
	if !c.Admin {
		return nil, nil, ctalk.Errorf(ctalk.EForbidden, "only an admin may delete the organization")
	}
	now := s.db.Now()
	d := &Deletion{DueAt: now.Add(DeletionGrace), RequestedAt: now, RequestedBy: c.UserID}
	var members []*User
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		res, err := tx.Exec(ctx, `UPDATE orgs SET deletion_due_at = $2, deletion_requested_at = $3, deletion_requested_by = $4
			WHERE id = $1 AND deletion_due_at IS NULL`, c.OrgID, d.DueAt, d.RequestedAt, d.RequestedBy)
		if err != nil {
			return fmt.Errorf("update orgs: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if _, err := s.Org(ctx, c.OrgID); err != nil {
				return err
			}
			return ctalk.Errorf(ctalk.EConflict, "the organization's deletion is scheduled already; cancel it first to schedule it again")
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	s.changed(ctx, c.OrgID, "")
	if members, err = s.Users(ctx, c.OrgID); err != nil {
		return d, nil, err
	}
	for _, m := range members {
		s.auth.Revoked(ctx, c.OrgID, m.ID)
	}
	return d, members, nil
}

// CancelDeletion cancels the scheduled deletion of the caller's org: its
// members' tokens and sessions work again, and they may sign in.
//
// Returns EForbidden when the caller is not an admin, ENotFound when no
// deletion is scheduled.
func (s *Service) CancelDeletion(ctx context.Context, c ctalk.Caller) error {
	if !c.Admin {
		return ctalk.Errorf(ctalk.EForbidden, "only an admin may cancel the organization's deletion")
	}
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		res, err := tx.Exec(ctx, `UPDATE orgs SET deletion_due_at = NULL, deletion_requested_at = NULL, deletion_requested_by = ''
			WHERE id = $1 AND deletion_due_at IS NOT NULL`, c.OrgID)
		if err != nil {
			return fmt.Errorf("update orgs: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return ctalk.Errorf(ctalk.ENotFound, "no deletion of the organization is scheduled")
		}
		return nil
	})
	if err == nil {
		s.changed(ctx, c.OrgID, "")
	}
	return err
}

// ScheduledDeletion returns the deletion scheduled of orgID, or nil.
//
// Returns only the database's errors.
func (s *Service) ScheduledDeletion(ctx context.Context, orgID string) (*Deletion, error) {
	var due, at db.NullTime
	d := &Deletion{}
	err := s.db.QueryRow(ctx, `SELECT deletion_due_at, deletion_requested_at, deletion_requested_by FROM orgs WHERE id = $1`, orgID).
		Scan(&due, &at, &d.RequestedBy)
	if err != nil || !due.Valid {
		return nil, ignoreNoRows(err)
	}
	d.DueAt, d.RequestedAt = due.Time, at.Time
	return d, nil
}

// DeleteDue deletes every organization whose deletion is due at now: all
// its rows of every table (db.PurgeOrg, driven by the catalog), in one
// transaction per org, leaving only its id, when the deletion was asked
// for and when it was done, and how many rows went, in retired_orgs, the
// operator's record, so that the id is never given again. The log says
// the same, without content. It returns the ids deleted.
//
// Returns only the database's errors.
func (s *Service) DeleteDue(ctx context.Context, now time.Time, log *slog.Logger) ([]string, error) {
	var due []string
	if err := db.Each(ctx, s.db, func(r *db.Rows) error {
		var id string
		err := r.Scan(&id)
		due = append(due, id)
		return err
	}, `SELECT id FROM orgs WHERE deletion_due_at <= $1 ORDER BY deletion_due_at`, now); err != nil {
		return nil, err
	}
	var deleted []string
	for _, id := range due {
		var rows int64
		err := s.db.Tx(ctx, func(tx db.Querier) error {
			// On Postgres the row lock has a second replica wait, then find
			// the org gone; SQLite's one writer runs them in turn.
			lock := ""
			if s.db.Engine == db.Postgres {
				lock = " FOR UPDATE"
			}
			var requested db.NullTime
			err := tx.QueryRow(ctx, `SELECT deletion_requested_at FROM orgs WHERE id = $1 AND deletion_due_at <= $2`+lock, id, now).Scan(&requested)
			if err != nil {
				return err
			}
			if rows, err = s.db.PurgeOrg(ctx, tx, id); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `INSERT INTO retired_orgs (id, requested_at, deleted_at, row_count) VALUES ($1, $2, $3, $4)`,
				id, requested.Time, s.db.Now(), rows)
			return err
		})
		if errors.Is(err, sql.ErrNoRows) {
			continue // cancelled meanwhile
		}
		if err != nil {
			return deleted, fmt.Errorf("delete organization %s: %w", id, err)
		}
		s.changed(ctx, id, "")
		log.Info("organization deleted", "org_id", id, "rows", rows)
		deleted = append(deleted, id)
	}
	return deleted, nil
}

func ignoreNoRows(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	return err
}

// DeletionCheck is how often DeleteDueEvery looks for deletions due.
const DeletionCheck = 10 * time.Minute

// DeleteDueEvery runs DeleteDue at once and then every interval until ctx
// ends, on every replica: two replicas at once delete an org once, the
// second finding it gone.
func (s *Service) DeleteDueEvery(ctx context.Context, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := s.DeleteDue(ctx, s.db.Now(), log); err != nil && ctx.Err() == nil {
			log.Warn("organization deletion failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
