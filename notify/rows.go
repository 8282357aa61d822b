package notify

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// maxInsertRows bounds the rows of one multi-row insert, so that its
// arguments stay well within both engines' limits.
const maxInsertRows = 500

// insertRows inserts rows, the arguments of its rows one after another,
// width to a row, with insert (INSERT ... VALUES and no row): as few
// statements as maxInsertRows allows on Postgres, where each is a round
// trip; one row a statement on SQLite, where statements in one process
// cost no round trip. A multi-row insert there costs more than its rows
// one by one (SQLite keeps a statement journal for a statement that
// writes more than one row, so that it could undo it alone):
// BenchmarkExpand measured a claim's expansion at 114 µs an event in
// inserts of 128 arguments, 81 µs in inserts of a row; ctalk-bench's ask
// phase with notifications on, whose worker stores SQLite's outbox of
// questions, at 0.83x to 0.87x of off with inserts of up to 500 rows,
// against 0.91x to 0.94x with a row a statement, side by side; rows as a
// JSON array read by json_each in one statement took 15% more of the
// writer's time than a row a statement.
func (s *Service) insertRows(ctx context.Context, tx db.Querier, insert string, width int, rows []any) error {
	per := maxInsertRows
	if s.db.Engine == db.SQLite {
		per = 1
	}
	for len(rows) > 0 {
		n := min(len(rows)/width, per)
		var q strings.Builder
		q.WriteString(insert)
		for i := range n {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(" + db.Placeholders(i*width+1, width) + ")")
		}
		if _, err := tx.Exec(ctx, q.String(), rows[:n*width]...); err != nil {
			return err
		}
		rows = rows[n*width:]
	}
	return nil
}

func activeWebhooks(ctx context.Context, r db.Reader, orgID, userID string) ([]string, error) {
	return readIDs(ctx, r, "read webhooks", activeWebhooksSQL, orgID, userID)
}

// readIDs reads the one column of query's rows; what names the read in
// its error.
func readIDs(ctx context.Context, r db.Reader, what, query string, args ...any) ([]string, error) {
	return db.All(ctx, r, what, query, args, func(row scanner) (id string, err error) {
		return id, row.Scan(&id)
	})
}

// scanner is what a scan function reads a row through: a row of a
// query, or the one row of QueryRow.
type scanner = interface{ Scan(...any) error }

// deleteOne runs a delete of one row of the caller's, and returns
// ENotFound naming what when there was none.
func (s *Service) deleteOne(ctx context.Context, what, query string, args ...any) error {
	var n int64
	err := s.db.Write(ctx, func(q db.Querier) error {
		res, err := q.Exec(ctx, query, args...)
		if err == nil {
			n, _ = res.RowsAffected()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("delete %s: %w", what, err)
	}
	if n == 0 {
		return notFound(what)
	}
	return nil
}

func notFoundErr(err error) bool {
	return errors.Is(err, sql.ErrNoRows) || ctalk.ErrorCode(err) == ctalk.ENotFound
}
