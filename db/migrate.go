package db

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	pgxmigrate "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	sqlitemigrate "github.com/golang-migrate/migrate/v4/database/sqlite"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/ctalk/ctalk/migrations"
)

// MigrateUp applies every pending migration. On Postgres the migration driver
// holds an advisory lock, so replicas that start together apply each step once.
func (d *DB) MigrateUp() error {
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

// MigrateDown reverts the last n migrations.
func (d *DB) MigrateDown(n int) error {
	m, err := d.migrator()
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.Steps(-n); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrate down %d: %w", n, err)
	}
	return nil
}

// MigrationVersion returns the applied schema version and whether a failed
// migration left it dirty. Version 0 means no migration has been applied.
func (d *DB) MigrationVersion() (version uint, dirty bool, err error) {
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
