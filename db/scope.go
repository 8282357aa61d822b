package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctalk/ctalk"
)

// operatorTransactions counts the transactions (or single statements)
// run in the operator's scope when statements carry their scope, by why.
var operatorTransactions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "ctalk_db_operator_transactions_total",
	Help: "Transactions and single statements run in the operator's scope, which crosses organizations under row-level security, by the work that asked for it (ctalk.AsOperator).",
}, []string{"why"})

// OperatorTransactions returns the counter of the transactions run in the
// operator's scope, for the server's metrics.
func OperatorTransactions() prometheus.Collector { return operatorTransactions }

// scopeOf returns ctx's org and the value of the scope setting, counting
// an operator's transaction.
func scopeOf(ctx context.Context) (org, kind string) {
	org, why := ctalk.ScopeOf(ctx)
	if why != "" {
		operatorTransactions.WithLabelValues(why).Inc()
		return org, scopeOperator
	}
	return org, ""
}

// Scope settings: the names of the transaction-local settings the
// policies of migration 0051 read.
const (
	settingOrg   = "ctalk.org_id"
	settingScope = "ctalk.scope"
	// scopeOperator is settingScope's value in the operator's scope.
	scopeOperator = "operator"
)

// prelude returns the statement, and its arguments, that scopes the
// transaction it runs in to ctx's scope and, when d has a role, makes
// that role the current one: set_config with is_local true, so that both
// end with the transaction and hold through a pooler in transaction mode.
// A context with no scope sets an empty org, which no row has: the
// policies fail closed.
func (d *DB) prelude(ctx context.Context) (string, []any) {
	org, kind := scopeOf(ctx)
	if d.role == "" {
		return `SELECT set_config('` + settingOrg + `', $1, true), set_config('` + settingScope + `', $2, true)`, []any{org, kind}
	}
	return `SELECT set_config('` + settingOrg + `', $1, true), set_config('` + settingScope + `', $2, true), set_config('role', $3, true)`, []any{org, kind, d.role}
}

// beginScoped is the text that begins a transaction scoped to ctx's
// scope: BEGIN and the prelude's settings, with their values quoted, sent
// together in one simple query, so that scoping a transaction costs no
// round trip more than beginning it.
func (d *DB) beginScoped(ctx context.Context) string {
	org, kind := scopeOf(ctx)
	q := `BEGIN; SELECT set_config('` + settingOrg + `', ` + quoteLiteral(org) + `, true), set_config('` + settingScope + `', ` + quoteLiteral(kind) + `, true)`
	if d.role != "" {
		q += `, set_config('role', ` + quoteLiteral(d.role) + `, true)`
	}
	return q
}

// quoteLiteral quotes s as a string literal, whatever
// standard_conforming_strings says (as lib/pq's QuoteLiteral does).
func quoteLiteral(s string) string {
	s = strings.ReplaceAll(s, `'`, `''`)
	if strings.Contains(s, `\`) {
		return `E'` + strings.ReplaceAll(s, `\`, `\\`) + `'`
	}
	return `'` + s + `'`
}

// scopedTx is Tx when statements carry their scope: on one connection of
// the pool, beginScoped, fn's statements, then COMMIT, or ROLLBACK when
// anything failed. A connection left inside the transaction (a ROLLBACK
// that could not be sent) is never handed out again: the driver discards
// a connection whose transaction is open when it returns to the pool.
func (d *DB) scopedTx(ctx context.Context, fn func(q Querier) error) error {
	conn, err := d.writes.Conn(ctx)
	if err != nil {
		return Translate(fmt.Errorf("begin: %w", err))
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, d.beginScoped(ctx)); err != nil {
		conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return Translate(fmt.Errorf("begin: %w", err))
	}
	committed := false
	defer func() {
		if !committed {
			conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	hooks := &commitHooks{}
	if err := fn(querier{d: d, q: conn, hooks: hooks}); err != nil {
		return Translate(err)
	}
	err = pgxConn(conn, func(c *pgx.Conn) error {
		tag, err := c.Exec(ctx, "COMMIT")
		if err == nil && tag.String() != "COMMIT" {
			// A transaction one of whose statements failed ends in a
			// rollback, whatever fn made of that statement's error.
			err = pgx.ErrTxCommitRollback
		}
		return err
	})
	committed = true
	if err != nil {
		return Translate(fmt.Errorf("commit: %w", err))
	}
	for _, h := range hooks.fns {
		h()
	}
	return nil
}

// queuePrelude queues d's prelude for ctx first in b, when d's statements
// need one (see DB.scoped).
func (d *DB) queuePrelude(ctx context.Context, b *pgx.Batch) *pgx.Batch {
	if d.scoped {
		q, args := d.prelude(ctx)
		b.Queue(q, args...)
	}
	return b
}

// scopedExec runs query, after ctx's prelude, as one pgx batch on a
// connection of the pool: the two go to the server in one round trip and,
// up to the batch's one Sync, run as one implicit transaction, so that the
// prelude's transaction-local settings hold for the query, and only for
// it, on a direct connection or through a pooler in transaction mode. fn
// reads the query's result from br.
func (d *DB) scopedExec(ctx context.Context, fn func(br pgx.BatchResults) error, query string, args []any) error {
	conn, err := d.pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return pgxConn(conn, func(c *pgx.Conn) error {
		br, err := d.sendScoped(ctx, c, query, args)
		if err != nil {
			return err
		}
		if err := fn(br); err != nil {
			br.Close()
			return err
		}
		return br.Close()
	})
}

// scopedQuery is scopedExec for a query whose rows are read after it
// returns: the connection stays taken until the rows are closed. Its pgx
// connection is used past conn.Raw's callback, which database/sql allows
// no one else to do while conn is held, and conn is held until then.
func (d *DB) scopedQuery(ctx context.Context, query string, args []any) (*Rows, error) {
	conn, err := d.pool.Conn(ctx)
	if err != nil {
		return nil, Translate(err)
	}
	var src *batchRows
	err = pgxConn(conn, func(c *pgx.Conn) error {
		if hasExecMode(args) {
			return d.queryInTx(ctx, c, conn, query, args, &src)
		}
		br, err := d.sendScoped(ctx, c, query, args)
		if err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			rows.Close()
			br.Close()
			return err
		}
		src = &batchRows{rows: rows, done: br.Close, conn: conn}
		return nil
	})
	if err != nil {
		conn.Close()
		return nil, Translate(err)
	}
	return &Rows{rows: src}, nil
}

// hasExecMode says whether args begin with a pgx.QueryExecMode, as those
// of DB.PlanEachRun do: a batch cannot run one query in a mode of its
// own.
func hasExecMode(args []any) bool {
	if len(args) == 0 {
		return false
	}
	_, ok := args[0].(pgx.QueryExecMode)
	return ok
}

// queryInTx runs query, whose arguments choose its own exec mode, in a
// transaction of its own on c: beginScoped, the query, and COMMIT once its
// rows are closed. Three round trips where a batch takes one; only the
// reads planned anew on every run (full-text searches) take them.
func (d *DB) queryInTx(ctx context.Context, c *pgx.Conn, conn interface{ Close() error }, query string, args []any, src **batchRows) error {
	if _, err := c.Exec(ctx, d.beginScoped(ctx)); err != nil {
		c.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		return err
	}
	rows, err := c.Query(ctx, query, args...)
	if err != nil {
		c.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		return err
	}
	*src = &batchRows{rows: rows, conn: conn, done: func() error {
		// A read has nothing to keep: ending it either way is the same.
		_, err := c.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		return err
	}}
	return nil
}

// sendScoped sends ctx's prelude and query to c as one batch and reads
// the prelude's result, leaving the query's to the caller.
func (d *DB) sendScoped(ctx context.Context, c *pgx.Conn, query string, args []any) (pgx.BatchResults, error) {
	b := d.queuePrelude(ctx, &pgx.Batch{})
	b.Queue(query, args...)
	br := c.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return nil, err
	}
	return br, nil
}

// batchRows are the rows of a scopedQuery.
type batchRows struct {
	rows pgx.Rows
	// done ends what the rows were read in: the batch, or the
	// transaction of queryInTx.
	done   func() error
	conn   interface{ Close() error }
	closed bool
}

func (r *batchRows) Next() bool             { return r.rows.Next() }
func (r *batchRows) Scan(dest ...any) error { return r.rows.Scan(dest...) }
func (r *batchRows) Err() error             { return r.rows.Err() }

func (r *batchRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.rows.Close()
	err := r.done()
	r.conn.Close()
	return err
}

func (r *batchRows) Columns() ([]string, error) {
	fds := r.rows.FieldDescriptions()
	names := make([]string, len(fds))
	for i, fd := range fds {
		names[i] = fd.Name
	}
	return names, nil
}

// noRows turns pgx's error for a missing row into database/sql's, which
// callers compare with.
func noRows(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return sql.ErrNoRows
	}
	return err
}

// rowsAffected is the sql.Result of a scoped statement.
type rowsAffected int64

func (n rowsAffected) LastInsertId() (int64, error) {
	return 0, errors.New("LastInsertId is not supported by Postgres; use RETURNING")
}
func (n rowsAffected) RowsAffected() (int64, error) { return int64(n), nil }
