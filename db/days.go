package db

import (
	"context"
	"time"
)

// DayLayout is how the rollups of ended days spell a UTC day.
const DayLayout = "2006-01-02"

// closeAfter is how long after its end a day is taken as ended, its
// numbers kept: longer than a transaction that began before midnight may
// take to commit.
const closeAfter = 10 * time.Minute

// OpenDay is the start of the first UTC day at now whose rows may still
// change: today, or in the first minutes after midnight yesterday. The
// rollups of ended days count it on every read and keep the days before.
func OpenDay(now time.Time) time.Time {
	return now.UTC().Add(-closeAfter).Truncate(24 * time.Hour)
}

// MissingDays are the UTC days from the day of since until open that done
// (by their DayLayout spelling) lacks: the ended days a rollup has not kept
// yet.
func MissingDays(since, open time.Time, done map[string]bool) []time.Time {
	var out []time.Time
	for d := since.UTC().Truncate(24 * time.Hour); d.Before(open); d = d.Add(24 * time.Hour) {
		if !done[d.Format(DayLayout)] {
			out = append(out, d)
		}
	}
	return out
}

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
	return Each(ctx, d, fn, query, args...)
}
