package db

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	pgxmigrate "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	sqlitemigrate "github.com/golang-migrate/migrate/v4/database/sqlite"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/ctalk/ctalk/migrations"
)

// MigrateUp applies every pending migration. On Postgres the migration driver
// holds an advisory lock, so replicas that start together apply each step once.
//
// Before the first migration of a Postgres schema it refuses one that holds
// another application's tables (see checkTarget).
//
// Returns the migration's error with no error code: the binary reports it
// and stops.
func (d *DB) MigrateUp() error {
	if err := d.checkTarget(); err != nil {
		return err
	}
	if current, err := d.current(); err != nil || current {
		return err
	}
	m, err := d.migrator()
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrate up: %w", err)
	}
	return nil
}

// MigrateDown reverts the last n applied migrations, or every applied one
// when fewer are applied; at version 0 it does nothing. Once none is left
// applied it also drops the migrations' own table, schema_migrations, so the
// database holds nothing of ctalk's. It returns the versions it reverted,
// newest first.
//
// Returns the errors of MigrateUp.
func (d *DB) MigrateDown(n int) ([]uint, error) {
	if ok, err := d.migrated(); err != nil || !ok {
		return nil, err
	}
	m, err := d.migrator()
	if err != nil {
		return nil, err
	}
	applied, err := d.appliedVersions(m)
	if err != nil {
		m.Close()
		return nil, err
	}
	reverted := applied[max(len(applied)-n, 0):]
	slices.Reverse(reverted)
	switch {
	case len(reverted) == 0:
	case len(reverted) == len(applied):
		err = m.Down()
	default:
		err = m.Steps(-len(reverted))
	}
	m.Close()
	if err != nil {
		return nil, fmt.Errorf("migrate down %d: %w", n, err)
	}
	if len(reverted) == len(applied) {
		// migrate keeps its table, empty, after the last down; without
		// it version 0 reads the same (see migrated), and the schema is
		// as before the first up.
		if _, err := d.pool.Exec("DROP TABLE IF EXISTS schema_migrations"); err != nil {
			return reverted, fmt.Errorf("migrate down %d: drop schema_migrations: %w", n, err)
		}
	}
	return reverted, nil
}

// appliedVersions lists the versions of the embedded migrations applied
// so far, oldest first. Versions are the files' numbers, which may skip.
func (d *DB) appliedVersions(m *migrate.Migrate) ([]uint, error) {
	current, dirty, err := m.Version()
	switch {
	case errors.Is(err, migrate.ErrNilVersion):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read the schema version: %w", err)
	case dirty:
		return nil, fmt.Errorf("schema version %d is dirty: a migration failed part-way; fix the schema by hand, then rerun", current)
	}
	all, err := Migrations(d.Engine)
	if err != nil {
		return nil, err
	}
	var applied []uint
	for _, v := range all {
		if v <= current {
			applied = append(applied, v)
		}
	}
	return applied, nil
}

// Migrations lists the versions of engine's embedded migrations, oldest
// first: the numbers their files start with.
func Migrations(e Engine) ([]uint, error) {
	ups, err := fs.Glob(migrations.FS, string(e)+"/*.up.sql")
	if err != nil {
		return nil, err
	}
	versions := make([]uint, 0, len(ups))
	for _, p := range ups {
		name := path.Base(p)
		v, err := strconv.ParseUint(name[:max(strings.IndexByte(name, '_'), 0)], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("embedded migration %s has no version number", p)
		}
		versions = append(versions, uint(v))
	}
	slices.Sort(versions)
	return versions, nil
}

// MigrationVersion returns the applied schema version and whether a failed
// migration left it dirty. Version 0 means no migration has been applied.
// It changes nothing.
//
// Returns the errors of MigrateUp.
func (d *DB) MigrationVersion() (version uint, dirty bool, err error) {
	if ok, err := d.migrated(); err != nil || !ok {
		return 0, false, err
	}
	m, err := d.migrator()
	if err != nil {
		return 0, false, err
	}
	defer m.Close()
	version, dirty, err = m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return 0, false, nil
	}
	return version, dirty, err
}

// current reports whether the database is at the newest embedded
// migration and clean, read in one statement over the pool, so that a
// process starting on an up-to-date database (every start but the first
// after an upgrade) builds no migrator: the migrator opens a pool of its
// own, whose first statement reads the whole schema. Anything else
// (no migrations' table yet, an older or dirty version) is left to the
// migrator, which takes the lock and decides.
func (d *DB) current() (bool, error) {
	ok, err := d.migrated()
	if err != nil || !ok {
		return false, err
	}
	all, err := Migrations(d.Engine)
	if err != nil || len(all) == 0 {
		return false, err
	}
	var version int64
	var dirty bool
	err = d.pool.QueryRow(`SELECT version, dirty FROM schema_migrations`).Scan(&version, &dirty)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the schema version: %w", err)
	}
	return !dirty && version == int64(all[len(all)-1]), nil
}

// migrated reports whether the migrations' table exists. A migrator
// creates it as it starts, so this is asked first where nothing may change.
func (d *DB) migrated() (bool, error) {
	q := `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`
	if d.Engine == Postgres {
		q = `SELECT count(*) FROM (SELECT to_regclass('schema_migrations') AS t) r WHERE t IS NOT NULL`
	}
	var n int
	if err := d.pool.QueryRow(q).Scan(&n); err != nil {
		return false, fmt.Errorf("read the schema version: %w", err)
	}
	return n > 0, nil
}

// migrator builds a migrate instance over a pool of its own, because the
// migration drivers pin a connection and close their *sql.DB when done.
// The caller closes the result.
func (d *DB) migrator() (*migrate.Migrate, error) {
	dir, err := fs.Sub(migrations.FS, string(d.Engine))
	if err != nil {
		return nil, err
	}
	src, err := iofs.New(dir, ".")
	if err != nil {
		return nil, fmt.Errorf("read embedded migrations: %w", err)
	}
	pool, err := d.openSibling()
	if err != nil {
		return nil, err
	}
	var drv database.Driver
	switch d.Engine {
	case Postgres:
		drv, err = pgxmigrate.WithInstance(pool, &pgxmigrate.Config{})
	case SQLite:
		drv, err = sqlitemigrate.WithInstance(pool, &sqlitemigrate.Config{})
	}
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("prepare migrations: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, string(d.Engine), drv)
	if err != nil {
		return nil, fmt.Errorf("prepare migrations: %w", err)
	}
	return m, nil
}
