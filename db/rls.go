package db

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// RLS says whether Postgres's row-level security was found in force at
// Open for the role ctalk's statements run as: then each statement sees
// and writes only the rows of its context's organization (see ctalk.WithOrg and
// AsOperator), whatever its WHERE clause says. It is false on SQLite,
// where every statement's own org filter keeps organizations apart, and on
// Postgres for a superuser or a role with BYPASSRLS; the tables' owner is
// bound as much as Config.Role (migration 0054).
func (d *DB) RLS() bool { return d.rls }

// checkRLS, on Postgres, grants Config.Role what it needs on the schema's
// tables, then finds out whether row-level security is in force for the
// role statements run as, and says so in the log. From then on every
// statement carries its scope when it is. A Role that would bypass it is
// refused: it would promise an isolation it does not give.
func (d *DB) checkRLS(ctx context.Context) error {
	if d.Engine != Postgres {
		return nil
	}
	if d.role != "" {
		if err := d.grantRole(ctx); err != nil {
			return err
		}
	}
	var user string
	var active bool
	err := d.Tx(ctx, func(q Querier) error {
		return q.QueryRow(ctx, `SELECT current_user, row_security_active('questions')`).Scan(&user, &active)
	})
	switch {
	case err != nil && d.role != "":
		return fmt.Errorf("DATABASE_ROLE %s cannot be taken by the database URL's user (%w); grant it with GRANT %s TO <that user>", d.role, err, pgx.Identifier{d.role}.Sanitize())
	case err != nil:
		return fmt.Errorf("check row-level security: %w", err)
	case !active && d.role != "":
		return fmt.Errorf("DATABASE_ROLE %s bypasses row-level security (it is a superuser or has BYPASSRLS); give ctalk a role that owns nothing, as docs/security.md shows", d.role)
	case !active:
		// Its statements need not say their scope, which costs a round
		// trip's share of every statement.
		d.scoped = false
		d.log.Info("row-level security is not in force: the database user is a superuser or has BYPASSRLS, so organizations are kept apart by each statement's own org filter only; connect as the tables' owner, or set DATABASE_ROLE to a role that owns nothing (docs/security.md)", "user", user)
		return nil
	}
	d.rls, d.scoped = true, true
	d.log.Info("row-level security is in force: each statement sees the rows of its organization only", "role", user)
	return nil
}

// grantRole grants Config.Role the use of the schema's tables and
// sequences, as their owner, after the migrations made them: row-level
// security then decides which rows it sees. It owns none of them.
func (d *DB) grantRole(ctx context.Context) error {
	var schema string
	if err := d.pool.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return fmt.Errorf("grant DATABASE_ROLE: %w", err)
	}
	s, r := pgx.Identifier{schema}.Sanitize(), pgx.Identifier{d.role}.Sanitize()
	// Replicas that start together grant one after another: concurrent
	// GRANTs on one table fail with "tuple concurrently updated".
	tx, err := d.pool.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("grant DATABASE_ROLE: %w", err)
	}
	defer tx.Rollback()
	for _, stmt := range []string{
		`SELECT pg_advisory_xact_lock(` + fmt.Sprint(LockID("ctalk grant role", schema)) + `)`,
		`GRANT USAGE ON SCHEMA ` + s + ` TO ` + r,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ` + s + ` TO ` + r,
		`GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA ` + s + ` TO ` + r,
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("grant DATABASE_ROLE %s the use of the schema %s (as its tables' owner): %w", d.role, schema, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("grant DATABASE_ROLE: %w", err)
	}
	return nil
}
