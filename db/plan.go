package db

import "github.com/jackc/pgx/v5"

// PlanEachRun returns the arguments of a read that Postgres must plan for
// its actual arguments on every run: a prepared statement's generic plan,
// which the server may settle on after five runs, serves every argument
// alike, while the best plan of a full-text search differs by query (walk
// the newest messages for a common word, the GIN index for a rare one). On
// SQLite it returns args unchanged.
func (d *DB) PlanEachRun(args ...any) []any {
	if d.Engine != Postgres {
		return args
	}
	// pgx reads a QueryExecMode in the first argument as an option: an
	// unnamed statement, planned with the arguments, in one round trip.
	return append([]any{pgx.QueryExecModeExec}, args...)
}
