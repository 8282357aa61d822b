package db

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// missingDatabase says how to create the database of rawURL when err is
// the server's answer that it does not exist (SQLSTATE 3D000), and returns
// "" for any other error.
func missingDatabase(err error, rawURL string) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "3D000" {
		return ""
	}
	pc, perr := pgconnConfig(rawURL)
	if perr != nil {
		return pe.Message
	}
	return fmt.Sprintf("database %q does not exist on %s:%d. Create it (createdb -h %s -p %d -U %s %s, or CREATE DATABASE %q; as a user allowed to create databases), then start ctalk again",
		pc.Database, pc.Host, pc.Port, pc.Host, pc.Port, pc.User, pc.Database, pc.Database)
}

// checkTarget looks at a Postgres schema before ctalk's first migration
// there, so that ctalk's tables are not created silently where they do not
// belong. A schema holding another application's tables is refused unless
// AllowOtherTables is set (DATABASE_ALLOW_OTHER_TABLES): ctalk's
// migrations and "ctalk migrate down" would then share it with tables they
// do not own. The server's maintenance database "postgres" is only warned
// about, because some hosts (Supabase among them) hand out exactly that
// database to each project. A schema ctalk migrated before is not looked
// at again.
func (d *DB) checkTarget() error {
	if d.Engine != Postgres {
		return nil
	}
	if ok, err := d.migrated(); err != nil || ok {
		return err
	}
	var database, schema string
	if err := d.pool.QueryRow(`SELECT current_database(), coalesce(current_schema(), '')`).Scan(&database, &schema); err != nil {
		return fmt.Errorf("look at the database before migrating: %w", err)
	}
	rows, err := d.pool.Query(`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name LIMIT 6`)
	if err != nil {
		return fmt.Errorf("look at the database before migrating: %w", err)
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return fmt.Errorf("look at the database before migrating: %w", err)
		}
		tables = append(tables, t)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("look at the database before migrating: %w", err)
	}
	if len(tables) > 0 {
		names := strings.Join(tables[:min(len(tables), 5)], ", ")
		if len(tables) > 5 {
			names += ", ..."
		}
		if !d.allowOtherTables {
			return fmt.Errorf("schema %q of database %q already holds tables that are not ctalk's (%s), and ctalk has never migrated it. Point DATABASE_URL at a database of ctalk's own (CREATE DATABASE ctalk), or give ctalk a schema of its own with ?search_path=ctalk in the URL after CREATE SCHEMA ctalk; to migrate into this schema anyway, set DATABASE_ALLOW_OTHER_TABLES=1", schema, database, names)
		}
		d.log.Warn("migrating into a schema that holds other tables, as DATABASE_ALLOW_OTHER_TABLES allows", "database", database, "schema", schema, "tables", names)
	}
	if database == "postgres" {
		d.log.Warn(`DATABASE_URL names the maintenance database "postgres"; ctalk creates its tables there. If this server is yours, give ctalk a database of its own (CREATE DATABASE ctalk) and point DATABASE_URL at it`, "schema", schema)
	}
	return nil
}
