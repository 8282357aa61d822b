package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
		return c.SendBatch(ctx, d.queueStmts(lockBatch(&pgx.Batch{}, locks), stmts)).Close()
	}))
}

// Stmt is a statement of TxLocked's first round trip: its text, its
// arguments, and where its one row is scanned.
type Stmt struct {
	Query string
	Args  []any
	Dest  []any
}

// TxLocked runs a transaction on Postgres in as few round trips as it
// can. The first holds BEGIN, a transaction-scoped advisory lock on each of
// locks (taken in order, as QueryRowLocked takes them) and first, each
// statement returning one row scanned into its Dest. Then fn runs in the
// same transaction, with what first read, and returns the statements that
// end it: they go to the server with COMMIT, in the last round trip (a
// statement of them without Dest is run for its effect alone). An error of
// fn rolls the transaction back. Each statement takes its snapshot when it
// starts, so after the locks are granted. AfterCommit works on fn's
// Querier as on Tx's.
//
// A transaction that fails is rolled back before its connection goes back
// to the pool; a connection that cannot be rolled back is closed.
//
// Returns the errors of fn and of the statements translated into codes
// (see Translate), and an error with no code on SQLite.
func (d *DB) TxLocked(ctx context.Context, locks []int64, first []Stmt, fn func(q Querier) ([]Stmt, error)) error {
	if d.Engine != Postgres {
		return errors.New("TxLocked needs Postgres")
	}
	conn, err := d.pool.Conn(ctx)
	if err != nil {
		return Translate(fmt.Errorf("begin: %w", err))
	}
	defer conn.Close()
	committed := false
	defer func() {
		if !committed {
			rollbackConn(ctx, conn)
		}
	}()
	err = pgxConn(conn, func(c *pgx.Conn) error {
		b := &pgx.Batch{}
		b.Queue(`BEGIN`)
		d.queueStmts(lockBatch(b, locks), first)
		return c.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return Translate(err)
	}
	hooks := &commitHooks{}
	last, err := fn(querier{d, conn, hooks})
	if err != nil {
		return Translate(err)
	}
	err = pgxConn(conn, func(c *pgx.Conn) error {
		b := d.queueStmts(&pgx.Batch{}, last)
		b.Queue(`COMMIT`).Exec(func(tag pgconn.CommandTag) error {
			if tag.String() != "COMMIT" {
				// A transaction that an error aborted ends in ROLLBACK.
				return pgx.ErrTxCommitRollback
			}
			return nil
		})
		return c.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return Translate(fmt.Errorf("commit: %w", err))
	}
	committed = true
	for _, h := range hooks.fns {
		h()
	}
	return nil
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

// rollbackConn ends the transaction TxLocked left open on conn, even once
// ctx is done; a connection it cannot bring back to idle is discarded
// rather than handed to the next caller inside a transaction.
func rollbackConn(ctx context.Context, conn *sql.Conn) {
	pgxConn(conn, func(c *pgx.Conn) error {
		if c.PgConn().TxStatus() == 'I' {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := c.Exec(ctx, `ROLLBACK`); err != nil || c.PgConn().TxStatus() != 'I' {
			return driver.ErrBadConn
		}
		return nil
	})
}
