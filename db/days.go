package db

import "context"

// DaySQL is an expression for the UTC day of the time column col, as text
// in the layout 2006-01-02, on the engine of d: SQLite stores times as text
// in UTC that begins with it.
func (d *DB) DaySQL(col string) string {
	if d.Engine == Postgres {
		return "to_char(" + col + " AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
	}
	return "substr(" + col + ", 1, 10)"
}

// SecondsSQL is an expression for the seconds from the time column from to
// the time column to, on the engine of d.
func (d *DB) SecondsSQL(from, to string) string {
	if d.Engine == Postgres {
		return "EXTRACT(EPOCH FROM (" + to + " - " + from + "))"
	}
	return "((julianday(" + to + ") - julianday(" + from + ")) * 86400.0)"
}

// Each runs the read query and calls fn on each row, until fn fails.
//
// Returns only the database's errors, and those of fn.
func (d *DB) Each(ctx context.Context, query string, args []any, fn func(*Rows) error) error {
	rows, err := d.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
