package db

import (
	"context"
	"database/sql"
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
	return d.RunLocked(ctx, locks, Stmt{Query: query, Args: args, Dest: dest})
}

// RunLocked is QueryRowLocked for several statements, sent after the locks
// in the same round trip and run in the same implicit transaction, each
// seeing what those before it wrote; a statement with a Dest returns one
// row, scanned into it. If any fails, none of them is kept.
//
// When row-level security is in force, ctx's scope goes first in the
// same batch (see scopedExec).
//
// Returns the statements' errors translated into codes (see Translate),
// and an error with no code on SQLite.
func (d *DB) RunLocked(ctx context.Context, locks []int64, stmts ...Stmt) error {
	if d.Engine != Postgres {
		return errors.New("RunLocked needs Postgres")
	}
	conn, err := d.pool.Conn(ctx)
	if err != nil {
		return Translate(err)
	}
	defer conn.Close()
	return Translate(pgxConn(conn, func(c *pgx.Conn) error {
		return c.SendBatch(ctx, d.queueStmts(lockBatch(d.queuePrelude(ctx, &pgx.Batch{}), locks), stmts)).Close()
	}))
}

// Stmt is a statement to run: its text, its arguments, and where its one
// row is scanned (none for a statement run for its effect alone).
type Stmt struct {
	Query string
	Args  []any
	Dest  []any
}

// lockBatch queues a transaction-scoped advisory lock on each of locks.
func lockBatch(b *pgx.Batch, locks []int64) *pgx.Batch {
	for _, id := range locks {
		b.Queue(`SELECT pg_advisory_xact_lock($1)`, id)
	}
	return b
}

// queueStmts queues stmts in b, each scanning its one row into its Dest,
// or run for its effect when it has none.
func (d *DB) queueStmts(b *pgx.Batch, stmts []Stmt) *pgx.Batch {
	for _, s := range stmts {
		d.observe(s.Query)
		q := b.Queue(s.Query, s.Args...)
		if s.Dest != nil {
			q.QueryRow(func(row pgx.Row) error { return row.Scan(s.Dest...) })
		}
	}
	return b
}

// pgxConn runs fn with the pgx connection beneath conn.
func pgxConn(conn *sql.Conn, fn func(c *pgx.Conn) error) error {
	return conn.Raw(func(driverConn any) error {
		c, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", driverConn)
		}
		return fn(c.Conn())
	})
}
