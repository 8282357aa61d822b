package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// Bounds of an org's retention, in days: how long its events are kept.
const (
	DefaultRetentionDays = 365
	MinRetentionDays     = 30
	MaxRetentionDays     = 36500
)

// RollupDays is how long the daily rollup rows are kept at least, whatever
// the org's retention: the overview's longest range. They hold counts, no
// event.
const RollupDays = 90

// pruneBatch bounds the events one pruning transaction deletes, so that it
// holds an org's chain head, and on SQLite the write lock, only briefly.
const pruneBatch = 1000

const (
	setRetentionSQL = `INSERT INTO audit_orgs (org_id, retention_days) VALUES ($1, $2) ON CONFLICT (org_id) DO UPDATE SET retention_days = excluded.retention_days`
	retentionSQL    = `SELECT retention_days FROM audit_orgs WHERE org_id = $1`
	retentionsSQL   = `SELECT org_id, COALESCE(retention_days, $1) FROM audit_orgs ORDER BY org_id`
	// prunePrefixSQL reads the oldest events of an org's chain, which
	// pruning cuts from the front so that what is left still chains on from
	// the checkpoint.
	prunePrefixSQL  = `SELECT seq, hash, at FROM audit_events WHERE org_id = $1 AND seq > 0 ORDER BY seq LIMIT $2`
	pruneChainSQL   = `DELETE FROM audit_events WHERE org_id = $1 AND seq > 0 AND seq <= $2`
	checkpointSQL   = `UPDATE audit_orgs SET pruned_seq = $2, pruned_hash = $3, pruned_at = $4, pruned_sig = $5 WHERE org_id = $1 AND pruned_seq < $2`
	pruneUnchainSQL = `DELETE FROM audit_events WHERE id IN (SELECT id FROM audit_events WHERE org_id = $1 AND seq = 0 AND at < $2 LIMIT $3)`
	pruneDailySQL   = `DELETE FROM audit_daily WHERE org_id = $1 AND day < $2`
)

// SetDefaultRetention sets how many days the events of orgs that chose no
// retention are kept: the server's AUDIT_RETENTION_DAYS.
func (l *Log) SetDefaultRetention(days int) { l.defaultDays.Store(int64(days)) }

// Retention is how long an org's events are kept.
type Retention struct {
	Days int
	// Default says the org chose none, and keeps the server's default.
	Default bool
}

// Retention returns how long orgID's events are kept.
//
// Returns only the database's errors.
func (l *Log) Retention(ctx context.Context, orgID string) (Retention, error) {
	var days sql.NullInt64
	err := l.db.QueryRow(ctx, retentionSQL, orgID).Scan(&days)
	if err != nil && !errors.Is(err, sql.ErrNoRows) && ctalk.ErrorCode(err) != ctalk.ENotFound {
		return Retention{}, fmt.Errorf("read audit retention: %w", err)
	}
	if !days.Valid {
		return Retention{Days: int(l.defaultDays.Load()), Default: true}, nil
	}
	return Retention{Days: int(days.Int64)}, nil
}

// SetRetention keeps orgID's events for days days, from MinRetentionDays
// to MaxRetentionDays.
//
// Returns EInvalid for days out of bounds.
func (l *Log) SetRetention(ctx context.Context, orgID string, days int) error {
	if days < MinRetentionDays || days > MaxRetentionDays {
		return ctalk.Errorf(ctalk.EInvalid, "retention must be a whole number of days from %d to %d", MinRetentionDays, MaxRetentionDays)
	}
	return l.db.Write(ctx, func(q db.Querier) error {
		if _, err := q.Exec(ctx, setRetentionSQL, orgID, days); err != nil {
			return fmt.Errorf("set audit retention: %w", err)
		}
		return nil
	})
}

// Prune deletes, for each org, the events older than its retention at now,
// in transactions of at most pruneBatch events, and the daily rollup rows
// of the days wholly before its cut or RollupDays, whichever is older; the
// rollup rows kept keep their counts. A chain is cut from the front only, up to the first event
// not old enough, and the checkpoint (the last pruned event's seq and hash,
// signed) moves with each batch, in its transaction. It returns how many
// events it deleted.
//
// Returns only the database's errors.
func (l *Log) Prune(ctx context.Context, now time.Time) (int64, error) {
	type org struct {
		id   string
		days int
	}
	rows, err := l.db.Query(ctx, retentionsSQL, l.defaultDays.Load())
	if err != nil {
		return 0, fmt.Errorf("read audit retention: %w", err)
	}
	var all []org
	for rows.Next() {
		var o org
		if err := rows.Scan(&o.id, &o.days); err != nil {
			rows.Close()
			return 0, err
		}
		all = append(all, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	var total int64
	for _, o := range all {
		cut, dailyCut := now.UTC().AddDate(0, 0, -o.days), now.UTC().AddDate(0, 0, -RollupDays)
		if cut.Before(dailyCut) {
			dailyCut = cut
		}
		n, err := l.pruneOrg(ctx, o.id, cut, dailyCut)
		total += n
		if err != nil {
			return total, fmt.Errorf("prune the audit events of %s: %w", o.id, err)
		}
	}
	return total, nil
}

// pruneOrg deletes orgID's events before cut, a batch a transaction, and
// its rollup rows of the days before dailyCut's.
func (l *Log) pruneOrg(ctx context.Context, orgID string, cut, dailyCut time.Time) (int64, error) {
	total, err := l.pruneChained(ctx, orgID, cut)
	if err != nil {
		return total, err
	}
	n, err := l.pruneUnchained(ctx, orgID, cut)
	if total += n; err != nil {
		return total, err
	}
	err = l.db.Write(ctx, func(q db.Querier) error {
		_, err := q.Exec(ctx, pruneDailySQL, orgID, dailyCut.Format(dayLayout))
		return err
	})
	return total, err
}

// pruneChained deletes orgID's chained events before cut from the start
// of its chain, a batch a transaction, each behind a signed checkpoint of
// the last event deleted.
func (l *Log) pruneChained(ctx context.Context, orgID string, cut time.Time) (int64, error) {
	key, err := l.checkpointKey(ctx)
	if err != nil {
		return 0, err
	}
	var total int64
	for more := true; more; {
		var n int64
		err := l.db.Tx(ctx, func(tx db.Querier) (err error) {
			n, more, err = l.pruneChainStart(ctx, tx, key, orgID, cut)
			return err
		})
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// pruneChainStart deletes, in tx, the events of the first batch of orgID's
// chain that are before cut, and checkpoints the last one; more says
// whether the whole batch went, so that another may follow.
func (l *Log) pruneChainStart(ctx context.Context, tx db.Querier, key []byte, orgID string, cut time.Time) (n int64, more bool, err error) {
	rows, err := tx.Query(ctx, prunePrefixSQL, orgID, pruneBatch)
	if err != nil {
		return 0, false, err
	}
	var last head
	read := 0
	for rows.Next() {
		var h head
		var at time.Time
		if err := rows.Scan(&h.seq, &h.hash, &at); err != nil {
			rows.Close()
			return 0, false, err
		}
		read++
		if !at.Before(cut) {
			break
		}
		last, n = h, n+1
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, false, err
	}
	more = read == pruneBatch && n == int64(read)
	if n == 0 {
		return 0, more, nil
	}
	if _, err := tx.Exec(ctx, pruneChainSQL, orgID, last.seq); err != nil {
		return 0, false, err
	}
	_, err = tx.Exec(ctx, checkpointSQL, orgID, last.seq, last.hash, l.db.Now(), checkpointSig(key, orgID, last.seq, last.hash))
	return n, more, err
}

// pruneUnchained deletes by age alone orgID's events written before the
// chain existed, a batch at a time.
func (l *Log) pruneUnchained(ctx context.Context, orgID string, cut time.Time) (int64, error) {
	var total int64
	for {
		var n int64
		err := l.db.Write(ctx, func(q db.Querier) error {
			res, err := q.Exec(ctx, pruneUnchainSQL, orgID, cut, pruneBatch)
			if err == nil {
				n, err = res.RowsAffected()
			}
			return err
		})
		total += n
		if err != nil || n < pruneBatch {
			return total, err
		}
	}
}

// PruneEvery prunes every org's events by its retention now and then (see
// Prune), until ctx ends.
func (l *Log) PruneEvery(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := l.Prune(ctx, l.db.Now()); err != nil && ctx.Err() == nil {
			l.log.Warn("audit pruning failed", "error", err)
		} else if n > 0 {
			l.log.Info("audit events pruned", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
