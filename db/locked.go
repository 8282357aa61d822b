package db

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// LockID turns the parts of a name into the key of a Postgres advisory
// lock: a 64-bit hash, so that two names share a key by chance only, and
// then merely wait for each other.
func LockID(parts ...string) int64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return int64(h.Sum64())
}

// QueryRowLocked runs query, which returns one row, and scans the row into
// dest, on Postgres, holding a transaction-scoped advisory lock on each of
// locks (taken in order) until the query's work commits. Concurrent callers
// that share a lock, on any replica, run one after another, and each sees
// what the one before it committed.
//
// The locks and the query go to the server as one pipeline, in one round
// trip, which Postgres runs as one implicit transaction: each statement
// takes its snapshot when it starts, so the query's is taken once the locks
// are granted. Transaction-scoped locks also work through a pooler in
// transaction mode, where session locks do not. Callers take locks in one
// global order, so that two callers cannot wait for each other.
//
// Returns the query's errors translated into codes (see Translate), and
// an error with no code on SQLite.
func (d *DB) QueryRowLocked(ctx context.Context, locks []int64, query string, args []any, dest ...any) error {
	if d.Engine != Postgres {
		return errors.New("QueryRowLocked needs Postgres")
	}
	d.observe(query)
	conn, err := d.pool.Conn(ctx)
	if err != nil {
		return Translate(err)
	}
	defer conn.Close()
	return Translate(conn.Raw(func(driverConn any) error {
		c, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("QueryRowLocked: unexpected driver connection %T", driverConn)
		}
		b := &pgx.Batch{}
		for _, id := range locks {
			b.Queue(`SELECT pg_advisory_xact_lock($1)`, id)
		}
		b.Queue(query, args...).QueryRow(func(row pgx.Row) error { return row.Scan(dest...) })
		return c.Conn().SendBatch(ctx, b).Close()
	}))
}
