package dbtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/migrations"
)

// Migrating a SQLite database is most of what a storage test costs (one to
// two seconds under the race detector, the driver being Go), so Open
// migrates one template file per migration set and gives each test a copy
// of it. A copy is the database that migrating would have left, and
// db.Open, which Open still calls, finds nothing left to apply. Config
// still returns an empty database, for the tests that migrate themselves.

// templateVersion changes when a template must be built anew although the
// migrations did not change (how it is built changed).
const templateVersion = "1"

// migrationsSum names the migrations of an engine ("sqlite", "postgres"):
// a template built from other migrations has another name.
func migrationsSum(engine string) (string, error) {
	h := sha256.New()
	io.WriteString(h, templateVersion)
	err := fs.WalkDir(migrations.FS, engine, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", path, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("read the %s migrations: %w", engine, err)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

var sqliteTemplate struct {
	once sync.Once
	path string
	err  error
}

// sqliteTemplatePath returns the file of a migrated SQLite database, built
// once in the system's temporary folder and kept there for later runs.
func sqliteTemplatePath() (string, error) {
	sqliteTemplate.once.Do(func() {
		sqliteTemplate.path, sqliteTemplate.err = buildSQLiteTemplate()
	})
	return sqliteTemplate.path, sqliteTemplate.err
}

func buildSQLiteTemplate() (string, error) {
	sum, err := migrationsSum("sqlite")
	if err != nil {
		return "", err
	}
	path := filepath.Join(os.TempDir(), "ctalk-dbtest-"+sum+".db")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	dir, err := os.MkdirTemp("", "ctalk-dbtest-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	build := filepath.Join(dir, "template.db")
	ctx := context.Background()
	d, err := db.Open(ctx, db.Config{Path: build})
	if err != nil {
		return "", fmt.Errorf("migrate the SQLite template: %w", err)
	}
	// Everything into the main file, so that the file alone is the database.
	err = d.Write(ctx, func(q db.Querier) error {
		_, err := q.Exec(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
		return err
	})
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("checkpoint the SQLite template: %w", err)
	}
	if fi, err := os.Stat(build + "-wal"); err == nil && fi.Size() > 0 {
		return "", errors.New("the SQLite template kept a write-ahead log after its checkpoint")
	}
	// Another test process may build the same template at the same time:
	// each renames a complete file into place.
	if err := os.Rename(build, path); err != nil {
		return "", fmt.Errorf("keep the SQLite template: %w", err)
	}
	return path, nil
}

// copySQLite copies the migrated template into a new file of the test.
func copySQLite(t testing.TB) db.Config {
	t.Helper()
	src, err := sqliteTemplatePath()
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("dbtest: read the SQLite template: %v", err)
	}
	path := filepath.Join(t.TempDir(), "ctalk.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatalf("dbtest: copy the SQLite template: %v", err)
	}
	return db.Config{Path: path}
}
