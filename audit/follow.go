package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ctalk/ctalk"
)

// afterSQL reads an org's chained events after a seq, in the chain's
// order, through the chain's unique index (org_id, seq) WHERE seq > 0.
const afterSQL = `SELECT ` + eventColumns + ` FROM audit_events WHERE org_id = $1 AND seq > 0 AND seq > $2 ORDER BY seq LIMIT $3`

// After returns up to limit of orgID's events after the one numbered seq
// in its chain (see chain.go), in the chain's order. A batch of an org's
// events commits with the chain's head locked, so the event numbered seq+1
// is never read before the one numbered seq: a reader that moves seq on to
// the last event it read skips none. Events written before the chain (seq
// 0) are not read; events pruned meanwhile are not there to read.
//
// Returns only the database's errors.
func (l *Log) After(ctx context.Context, orgID string, seq int64, limit int) ([]Event, error) {
	rows, err := l.db.Query(ctx, afterSQL, orgID, seq, limit)
	if err != nil {
		return nil, fmt.Errorf("read audit events after %d: %w", seq, err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		e, _, err := scanEvent(rows)
		if err != nil {
			return nil, fmt.Errorf("read audit events after %d: %w", seq, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// Head returns the seq of the last event of orgID's chain: 0 when it has
// none.
//
// Returns only the database's errors.
func (l *Log) Head(ctx context.Context, orgID string) (int64, error) {
	var seq int64
	err := l.db.QueryRow(ctx, `SELECT seq FROM audit_orgs WHERE org_id = $1`, orgID).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) || ctalk.ErrorCode(err) == ctalk.ENotFound {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read audit chain head: %w", err)
	}
	return seq, nil
}
