package db

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Reader runs statements that only read. Its errors, and those of the rows
// it returns, are already translated into ctalk error codes.
type Reader interface {
	Query(ctx context.Context, query string, args ...any) (*Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) *Row
}

// Querier runs any statement, with errors translated like Reader's.
type Querier interface {
	Reader
	Exec(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// DB is a Reader: a read outside a transaction is one call, and each
// statement sees what was committed when it started. A statement that
// writes goes through Write or Tx instead, which queue SQLite's writers;
// DB has no Exec, so that no write skips the queue by accident.

// Query runs a query that only reads, outside a transaction.
//
// Returns the statement's errors translated into codes (see Translate).
func (d *DB) Query(ctx context.Context, query string, args ...any) (*Rows, error) {
	return querier{d: d, q: d.pool, scoped: d.scoped}.Query(ctx, query, args...)
}

// QueryRow runs a query that only reads and returns at most one row,
// outside a transaction.
func (d *DB) QueryRow(ctx context.Context, query string, args ...any) *Row {
	return querier{d: d, q: d.pool, scoped: d.scoped}.QueryRow(ctx, query, args...)
}

// Tx runs fn in a transaction, as the one writer of a SQLite database (see
// Write), and commits when fn returns nil. Errors are translated into ctalk
// error codes.
//
// Returns fn's error, or the transaction's, translated into codes (see
// Translate).
func (d *DB) Tx(ctx context.Context, fn func(q Querier) error) error {
	release, err := d.admitWriter(ctx)
	if err != nil {
		return Translate(fmt.Errorf("begin: %w", err))
	}
	defer release()
	if d.scoped {
		return d.scopedTx(ctx, fn)
	}
	tx, err := d.writes.BeginTx(ctx, nil)
	if err != nil {
		return Translate(fmt.Errorf("begin: %w", err))
	}
	defer tx.Rollback()
	hooks := &commitHooks{}
	if err := fn(querier{d: d, q: tx, hooks: hooks}); err != nil {
		return Translate(err)
	}
	if err := tx.Commit(); err != nil {
		return Translate(fmt.Errorf("commit: %w", err))
	}
	for _, h := range hooks.fns {
		h()
	}
	return nil
}

// commitHooks are the functions of AfterCommit of one transaction.
type commitHooks struct {
	keys []string
	fns  []func()
}

// AfterCommit calls fn once q, the Querier of a Tx, has committed, and
// never if it rolls back: once per key and transaction, however often it
// is called with that key, in the order of the first calls. fn must be
// quick. Outside a transaction (a Querier of Write, whose statements
// commit on their own, or one not of this package) it calls fn at once.
func AfterCommit(q Querier, key string, fn func()) {
	hooks := (*commitHooks)(nil)
	if qq, ok := q.(querier); ok {
		hooks = qq.hooks
	}
	if hooks == nil {
		fn()
		return
	}
	if slices.Contains(hooks.keys, key) {
		return
	}
	hooks.keys = append(hooks.keys, key)
	hooks.fns = append(hooks.fns, fn)
}

// Write runs fn, whose statements each commit on their own (autocommit), as
// the one writer of a SQLite database; on Postgres it just runs fn. Errors
// are translated like Tx's.
//
// SQLite has a single writer, and a connection that finds the write lock
// taken polls for it, sleeping 1, 2, 5, ... up to 100 ms between tries (the
// driver's busy handler), so under concurrent writes the lock sits free while
// writers sleep. Every Tx is a write (BEGIN IMMEDIATE), so Tx and Write queue
// for the lock in Go instead, and it passes to the next writer at once.
// busy_timeout still covers another process writing to the same file.
//
// Returns the errors of Tx.
func (d *DB) Write(ctx context.Context, fn func(q Querier) error) error {
	release, err := d.admitWriter(ctx)
	if err != nil {
		return Translate(err)
	}
	defer release()
	return Translate(fn(querier{d: d, q: d.writes, scoped: d.scoped}))
}

func (d *DB) admitWriter(ctx context.Context) (release func(), err error) {
	if d.writer == nil {
		return func() {}, nil
	}
	select {
	case d.writer <- struct{}{}:
		return func() { <-d.writer }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// OnStatement makes d call fn with the text of every statement it runs
// (through Query, QueryRow, Tx, Write, QueryRowLocked or Notify), or stops that when fn is nil. Tests count statements
// with it.
func (d *DB) OnStatement(fn func(query string)) {
	if fn == nil {
		d.onStatement.Store(nil)
		return
	}
	d.onStatement.Store(&fn)
}

func (d *DB) observe(query string) {
	if fn := d.onStatement.Load(); fn != nil {
		(*fn)(query)
	}
}

// sqlQuerier is what *sql.DB, *sql.Tx and *sql.Conn have in common.
type sqlQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// querier is the Querier that Read, Tx and Write hand over; hooks are
// its transaction's (see AfterCommit), nil outside one. scoped, outside a
// transaction, sends each statement after its scope's prelude (see
// DB.scoped), in one round trip (see scopedQuery).
type querier struct {
	d      *DB
	q      sqlQuerier
	hooks  *commitHooks
	scoped bool
}

func (q querier) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	q.d.observe(query)
	if q.scoped {
		var tag pgconn.CommandTag
		err := q.d.scopedExec(ctx, func(br pgx.BatchResults) (err error) {
			tag, err = br.Exec()
			return err
		}, query, args)
		return rowsAffected(tag.RowsAffected()), Translate(err)
	}
	res, err := q.q.ExecContext(ctx, query, args...)
	return res, Translate(err)
}

func (q querier) Query(ctx context.Context, query string, args ...any) (*Rows, error) {
	q.d.observe(query)
	if q.scoped {
		return q.d.scopedQuery(ctx, query, args)
	}
	rows, err := q.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, Translate(err)
	}
	return &Rows{rows: rows}, nil
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) *Row {
	q.d.observe(query)
	if q.scoped && hasExecMode(args) {
		return &Row{scan: func(dest ...any) error {
			rows, err := q.d.scopedQuery(ctx, query, args)
			if err != nil {
				return err
			}
			defer rows.Close()
			if !rows.Next() {
				if err := rows.Err(); err != nil {
					return err
				}
				return sql.ErrNoRows
			}
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			return rows.Close()
		}}
	}
	if q.scoped {
		return &Row{scan: func(dest ...any) error {
			return q.d.scopedExec(ctx, func(br pgx.BatchResults) error {
				return br.QueryRow().Scan(dest...)
			}, query, args)
		}}
	}
	return &Row{row: q.q.QueryRowContext(ctx, query, args...)}
}

// Row is the result of QueryRow; Scan translates its error. A missing row is
// still sql.ErrNoRows.
type Row struct {
	row *sql.Row
	// scan, when set, runs a scoped statement instead of row.
	scan func(dest ...any) error
}

// Scan copies the row's columns into dest.
func (r *Row) Scan(dest ...any) error {
	if r.scan != nil {
		return Translate(noRows(r.scan(dest...)))
	}
	return Translate(r.row.Scan(dest...))
}

// Rows is the result of Query; Scan and Err translate their errors.
type Rows struct {
	rows rowSource
}

// rowSource is what Rows reads: *sql.Rows, or a scoped statement's.
type rowSource interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
	Columns() ([]string, error)
}

// Next prepares the next row for Scan.
func (r *Rows) Next() bool { return r.rows.Next() }

// Scan copies the current row's columns into dest.
func (r *Rows) Scan(dest ...any) error { return Translate(r.rows.Scan(dest...)) }

// Err returns the error that ended the iteration, if any.
func (r *Rows) Err() error { return Translate(r.rows.Err()) }

// Close releases the rows' connection.
func (r *Rows) Close() error { return r.rows.Close() }

// Columns returns the names of the result's columns.
func (r *Rows) Columns() ([]string, error) { return r.rows.Columns() }

// Placeholders returns n numbered placeholders from $first on, separated by
// commas, for an IN list: "$3, $4, $5". One text serves both engines, and a
// page's ids go to the server as arguments, never as text.
func Placeholders(first, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(first + i))
	}
	return b.String()
}

// Each runs a query that only reads and calls fn with each row as it is
// read, so that no more than one row is held at a time, however many the
// query returns.
//
// Returns the query's errors translated into codes (see Translate), or
// fn's.
func Each(ctx context.Context, r Reader, fn func(*Rows) error, query string, args ...any) error {
	rows, err := r.Query(ctx, query, args...)
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

// All runs a query that only reads and returns every row of it, each made
// by scan, in the order read: an empty slice, never nil, for none. what
// names the read in its errors ("list channels: ...").
//
// Returns the query's errors translated into codes (see Translate), or
// scan's, wrapped with what.
func All[T any](ctx context.Context, r Reader, what, query string, args []any, scan func(interface{ Scan(...any) error }) (T, error)) ([]T, error) {
	out := []T{}
	err := Each(ctx, r, func(rows *Rows) error {
		v, err := scan(rows)
		if err == nil {
			out = append(out, v)
		}
		return err
	}, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
