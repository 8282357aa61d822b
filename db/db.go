// Package db opens ctalk's database on either engine, applies the embedded
// migrations, runs transactions and translates driver errors into ctalk
// error codes. Domain packages write their SQL against *DB; the few places
// where the engines differ are named on Engine.
package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/ctalk/ctalk"
)

// Engine names the database engine behind a DB.
type Engine string

// The two supported engines.
const (
	Postgres Engine = "postgres"
	SQLite   Engine = "sqlite"
)

// DB is an open, migrated ctalk database.
//
// Its statements run only through Read, Tx and Write, which queue SQLite's
// writers and translate driver errors, so that no caller can skip either.
type DB struct {
	pool *sql.DB
	// writes is the pool of Tx and Write: pool on Postgres; on SQLite one
	// connection of its own (see openSQLite).
	writes *sql.DB
	Engine Engine
	// URL is the Postgres connection string of the request pool; empty on
	// SQLite.
	URL string
	// DirectURL is the Postgres connection string for what a
	// transaction-mode pooler breaks: LISTEN (see Listen) and the session
	// advisory lock of migrations. It is Config.DirectURL, or URL.
	DirectURL string
	// path is the SQLite file; empty on Postgres.
	path string
	// Now returns the current time; tests may replace it. Callers take it
	// once per transaction.
	Now func() time.Time
	// writer, on SQLite, admits one writer at a time (see Write).
	writer chan struct{}
	// stopCheckpoints ends the SQLite checkpointer (see checkpoints).
	stopCheckpoints context.CancelFunc
	checkpointsDone chan struct{}
	// onStatement, when set, sees every statement (see OnStatement).
	onStatement atomic.Pointer[func(query string)]
	// listener is the one LISTEN connection every Listen shares.
	listener listener
	// shared, on a SQLite file that other processes use too, carries
	// their notifications (see Config.Shared); nil otherwise.
	shared *sharedListener
	// closed is set by Close, for the listeners to stop quietly.
	closed atomic.Bool
	// allowOtherTables and log are Config's, for checkTarget.
	allowOtherTables bool
	log              *slog.Logger
	// notifyScope ends every notification channel's name: empty for the
	// public schema, else the schema the URL's search_path names, so that
	// servers on different schemas of one database (the tests) do not hear
	// each other's wake-ups and revocations.
	notifyScope string
	// role is Config.Role; scoped says that every statement runs after a
	// prelude that sets its scope and role (see prelude); rls that
	// row-level security was found in force at Open (see checkRLS).
	role   string
	scoped bool
	rls    bool
}

// Config says which database to open.
type Config struct {
	// URL is a Postgres connection string. When empty, SQLite is used. It
	// may go through a pooler in transaction mode (PgBouncer, Supabase's
	// pooler, Neon's pooled URL): every query of the request path works
	// through one.
	URL string
	// DirectURL is a direct, unpooled connection string to the same
	// database, for the wake-up listener and migrations; empty means URL is
	// direct. When it is set and differs from URL, URL is taken to be
	// pooled (see pooledExecMode).
	DirectURL string
	// Path is the SQLite database file, used when URL is empty.
	Path string
	// PathSetting names what sets Path, such as an environment variable,
	// in the errors that say the file or its directory cannot be used.
	PathSetting string
	// MaxOpenConns bounds the pool; zero picks a default per engine.
	MaxOpenConns int
	// Logger receives the warning that a URL is pooled where it must not
	// be; nil means slog.Default().
	Logger *slog.Logger
	// AllowOtherTables lets the first migration run in a Postgres schema
	// that already holds tables of another application (see checkTarget).
	AllowOtherTables bool
	// Shared says that other processes use the SQLite file at Path at the
	// same time (ctalk stdio --local): notifications between them then go
	// through the file (see Listen and Notify). Ignored on Postgres.
	Shared bool
	// Role is the Postgres role every statement runs as (SET LOCAL ROLE,
	// inside each statement's transaction, so that it holds through a
	// pooler in transaction mode): one that owns nothing and cannot bypass
	// row-level security, while migrations keep running as the URL's
	// user, the tables' owner. Empty runs statements as the URL's user.
	// See DB.RLS.
	Role string
}

// Open connects to the configured database, checks that it answers and
// applies every pending migration.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	d, err := Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := d.MigrateUp(); err != nil {
		d.Close()
		return nil, err
	}
	if err := d.checkRLS(ctx); err != nil {
		d.Close()
		return nil, err
	}
	if d.Engine == SQLite {
		// Gather the statistics the query planner wants, as SQLite
		// recommends for every long-lived connection pool.
		if _, err := d.pool.ExecContext(ctx, "PRAGMA optimize=0x10002"); err != nil {
			d.Close()
			return nil, fmt.Errorf("sqlite optimize: %w", err)
		}
	}
	return d, nil
}

// Connect connects to the configured database and checks that it answers,
// without migrating.
func Connect(ctx context.Context, cfg Config) (*DB, error) {
	d := &DB{Now: func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }}
	d.allowOtherTables, d.log = cfg.AllowOtherTables, cfg.Logger
	if cfg.URL != "" {
		// Every statement carries its scope on Postgres, where row-level
		// security binds the tables' owner too (migration 0054); Open's
		// check turns that off for a user the policies do not bind.
		d.role, d.scoped = cfg.Role, true
	}
	if d.log == nil {
		d.log = slog.Default()
	}
	open := d.openSQLite
	if cfg.URL != "" {
		open = d.openPostgres
	}
	if err := open(cfg); err != nil {
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := d.pool.PingContext(pingCtx); err != nil {
		d.pool.Close()
		if hint := missingDatabase(err, cfg.URL); hint != "" {
			return nil, fmt.Errorf("cannot open the %s database (%s): %s", d.Engine, d.Describe(cfg), hint)
		}
		return nil, fmt.Errorf("cannot reach the %s database (%s): %w", d.Engine, d.Describe(cfg), err)
	}
	if d.Engine == Postgres {
		if err := d.checkDirect(ctx, cfg); err != nil {
			d.pool.Close()
			return nil, err
		}
	}
	if d.Engine == SQLite {
		cctx, stop := context.WithCancel(context.Background())
		d.stopCheckpoints, d.checkpointsDone = stop, make(chan struct{})
		go d.checkpoints(cctx, checkpointEvery)
	}
	return d, nil
}

// openPostgres opens the pool of cfg.URL (with statements sent unprepared
// when it goes through a pooler, that is, when a direct URL differs).
func (d *DB) openPostgres(cfg Config) error {
	d.Engine, d.URL, d.DirectURL = Postgres, cfg.URL, cfg.URL
	if cfg.DirectURL != "" {
		d.DirectURL = cfg.DirectURL
	}
	if _, err := pgconnConfig(d.DirectURL); err != nil {
		return fmt.Errorf("the direct database URL: %w", err)
	}
	pc, err := pgconnConfig(cfg.URL)
	if err != nil {
		return err
	}
	if d.DirectURL != d.URL {
		pooledExecMode(pc, cfg.URL)
	}
	d.notifyScope = notifyScope(pc.RuntimeParams["search_path"])
	d.pool = stdlib.OpenDB(*pc)
	n := cfg.MaxOpenConns
	if n == 0 {
		n = 20
	}
	d.pool.SetMaxOpenConns(n)
	d.pool.SetMaxIdleConns(n)
	d.pool.SetConnMaxIdleTime(5 * time.Minute)
	d.writes = d.pool
	return nil
}

// openSQLite opens the file cfg.Path with its writer queue.
func (d *DB) openSQLite(cfg Config) error {
	d.Engine, d.path = SQLite, cfg.Path
	if cfg.Shared {
		d.shared = &sharedListener{}
	}
	if err := checkSQLitePath(cfg.Path); err != nil {
		if cfg.PathSetting != "" {
			return fmt.Errorf("%w. To keep it elsewhere, set %s to a file in a writable directory", err, cfg.PathSetting)
		}
		return err
	}
	connector, err := newStmtCacheConnector(sqliteDSN(cfg.Path))
	if err != nil {
		return fmt.Errorf("open sqlite %s: %w", cfg.Path, err)
	}
	d.pool = sql.OpenDB(connector)
	// SQLite serializes writers; a handful of connections lets readers
	// proceed in WAL mode while busy_timeout queues the writers.
	n := cfg.MaxOpenConns
	if n == 0 {
		n = 8
	}
	d.pool.SetMaxOpenConns(n)
	d.pool.SetMaxIdleConns(n)
	// Every write goes through one connection of its own: SQLite drops a
	// connection's page cache whenever another connection has committed
	// since its last transaction, so writes spread over the pool each
	// began cold, reading every page they touched again from the file. The
	// one writer's cache stays warm, since only it commits.
	d.writes = sql.OpenDB(connector)
	d.writes.SetMaxOpenConns(1)
	d.writes.SetMaxIdleConns(1)
	d.writer = make(chan struct{}, 1)
	return nil
}

// checkSQLitePath says in words what would stop SQLite from writing the
// database at path, which the driver reports only as "unable to open
// database file" or, at the first write, "attempt to write a readonly
// database": a directory that is missing, is not one or is not writable
// (SQLite creates the file and its -wal and -shm files there), or a file
// that is not writable. It tries, rather than reading permission bits,
// which do not stop root, a read-only mount or an immutable file.
func checkSQLitePath(path string) error {
	if path == "" || path == ":memory:" {
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	dir := filepath.Dir(abs)
	switch fi, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the SQLite database %s cannot be created: its directory %s does not exist; create it", abs, dir)
	case errors.Is(err, syscall.ENOTDIR) || err == nil && !fi.IsDir():
		return fmt.Errorf("the SQLite database %s cannot be created: %s is not a directory", abs, dir)
	case err != nil:
		return fmt.Errorf("the SQLite database %s cannot be used: its directory %s: %w", abs, dir, pathErr(err))
	}
	probe, err := os.CreateTemp(dir, ".ctalk-write-check-*")
	if err != nil {
		return fmt.Errorf("the directory %s of the SQLite database %s is not writable (%w): SQLite creates the database and its -wal and -shm files there; make it writable", dir, abs, pathErr(err))
	}
	probe.Close()
	os.Remove(probe.Name())
	f, err := os.OpenFile(abs, os.O_RDWR, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("the SQLite database file %s is not writable (%w); make it writable", abs, pathErr(err))
	default:
		f.Close()
	}
	return nil
}

// pathErr drops the operation and path an os error repeats.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// checkpointEvery is how often the SQLite checkpointer runs.
const checkpointEvery = 250 * time.Millisecond

// checkpoints copies the SQLite write-ahead log into the database file now
// and then, until ctx ends. SQLite would otherwise checkpoint inside the
// commit that fills the log past 1,000 pages, and that commit's writer holds
// the writer queue (see Write) while the checkpoint copies pages and syncs
// the file: every writer queued behind it waits milliseconds. A passive
// checkpoint here runs beside the writers instead of in front of them.
func (d *DB) checkpoints(ctx context.Context, every time.Duration) {
	defer close(d.checkpointsDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// A failed checkpoint is retried at the next tick; the log
			// only grows meanwhile.
			d.pool.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
		}
	}
}

// Close stops the SQLite checkpointer, then closes the pool.
//
// Returns the pool's error closing it, with no error code.
func (d *DB) Close() error {
	d.closed.Store(true)
	if d.stopCheckpoints != nil {
		d.stopCheckpoints()
		<-d.checkpointsDone
	}
	if d.writes != d.pool {
		d.writes.Close()
	}
	return d.pool.Close()
}

// openSibling opens a second pool on the same database.
func (d *DB) openSibling() (*sql.DB, error) {
	if d.Engine == SQLite {
		return sql.Open("sqlite", sqliteDSN(d.path))
	}
	pc, err := pgconnConfig(d.DirectURL)
	if err != nil {
		return nil, err
	}
	// The migrations run as the tables' owner, whom row-level security
	// binds too: in the operator's scope for the whole session, so that
	// a migration that reads or rewrites rows does so for every org. Set
	// once connected rather than as a startup parameter, which a pooler
	// in session mode (PgBouncer) may refuse.
	pc.AfterConnect = func(ctx context.Context, c *pgconn.PgConn) error {
		return c.Exec(ctx, `SET `+settingScope+` = '`+scopeOperator+`'`).Close()
	}
	return stdlib.OpenDB(*pc), nil
}

// checkDirect finds out whether the direct URL really is direct (see
// notifyProbe), and says so in the log when it is not. When no direct URL
// was given, DATABASE_URL then goes through a transaction-mode pooler, and
// the request pool is reopened in pooledExecMode so that at least every
// request works; wake-ups across replicas and the migration lock need
// DATABASE_URL_UNPOOLED.
func (d *DB) checkDirect(ctx context.Context, cfg Config) error {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	direct, err := notifyProbe(ctx, d.DirectURL)
	switch {
	case err != nil:
		log.Warn("could not check that the database URL is direct (LISTEN/NOTIFY); wake-ups across replicas may not work", "error", err)
		return nil
	case direct:
		return nil
	case d.DirectURL != d.URL:
		log.Error("DATABASE_URL_UNPOOLED does not deliver notifications: a LISTEN on it did not receive its own NOTIFY, as through a pooler in transaction mode. Set it to the direct (unpooled) URL of the database: without it agents on other replicas see changes only at their next re-check (seconds late), and replicas that migrate together may both run a migration",
			"database_url_unpooled", RedactURL(d.DirectURL))
		return nil
	}
	log.Error("DATABASE_URL looks pooled: a LISTEN on it did not receive its own NOTIFY, as through a pooler in transaction mode (PgBouncer, Supabase's pooler, Neon's pooled URL). Requests still work, but agents on other replicas see changes only at their next re-check (seconds late), and replicas that migrate together may both run a migration. Set DATABASE_URL_UNPOOLED to the database's direct URL",
		"database_url", RedactURL(d.URL))
	pc, err := pgconnConfig(d.URL)
	if err != nil {
		return err
	}
	pooledExecMode(pc, d.URL)
	max := d.pool.Stats().MaxOpenConnections
	d.pool.Close()
	d.pool = stdlib.OpenDB(*pc)
	d.pool.SetMaxOpenConns(max)
	d.pool.SetMaxIdleConns(max)
	d.pool.SetConnMaxIdleTime(5 * time.Minute)
	d.writes = d.pool
	return nil
}

// pooledExecMode makes pgx run queries without named prepared statements,
// which a transaction-mode pooler cannot keep: the statement is prepared on
// one server connection and executed on another. pgx's cache_describe mode
// caches each query's parameter and result types per client connection and
// sends every query as one unnamed parse, bind and execute, in one round
// trip. The server then plans every query anew, which on the direct path
// cost about twice the time of a short indexed SELECT on a loaded test
// machine; so the direct path keeps pgx's default, cache_statement. A
// default_query_exec_mode in the URL wins.
func pooledExecMode(pc *pgx.ConnConfig, rawURL string) {
	if u, err := url.Parse(rawURL); err == nil && u.Query().Has("default_query_exec_mode") {
		return
	}
	pc.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
}

// Ping checks that the database answers.
//
// Returns EUnavailable when the database does not answer.
func (d *DB) Ping(ctx context.Context) error { return Translate(d.pool.PingContext(ctx)) }

// Stats returns the statistics of the connection pool.
func (d *DB) Stats() sql.DBStats { return d.pool.Stats() }

// StatsCollector exports the connection pool's statistics to Prometheus.
func (d *DB) StatsCollector() prometheus.Collector {
	return collectors.NewDBStatsCollector(d.pool, string(d.Engine))
}

// Describe names the database for logs without revealing a password.
func (d *DB) Describe(cfg Config) string {
	if d.Engine == SQLite {
		p, err := filepath.Abs(cfg.Path)
		if err != nil {
			return cfg.Path
		}
		return p
	}
	if d.DirectURL != d.URL {
		return RedactURL(d.URL) + " (direct: " + RedactURL(d.DirectURL) + ")"
	}
	return RedactURL(d.URL)
}

// RedactURL returns a Postgres URL with its password replaced.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "(unparseable DATABASE_URL)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

func pgconnConfig(s string) (*pgx.ConnConfig, error) {
	c, err := pgx.ParseConfig(s)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL is not a valid Postgres connection string: %w", err)
	}
	return c, nil
}

// sqliteDSN sets every pragma in the DSN so that each pooled connection has
// them: WAL lets readers run beside the writer, busy_timeout makes writers
// wait for the lock instead of failing, foreign keys are off by default in
// SQLite, and immediate transactions take the write lock at BEGIN so that two
// read-then-write transactions cannot deadlock on lock upgrade.
func sqliteDSN(path string) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	// The checkpointer of Connect copies the log back; see checkpoints.
	q.Add("_pragma", "wal_autocheckpoint(0)")
	q.Set("_txlock", "immediate")
	q.Set("_time_format", "sqlite")
	return "file:" + path + "?" + q.Encode()
}

// Translate maps driver errors to ctalk codes by SQLSTATE or SQLite result
// code, never by message text. Errors that already carry a code, and errors
// that are not recognized, are returned unchanged.
func Translate(err error) error {
	if err == nil {
		return nil
	}
	var ce *ctalk.Error
	if errors.As(err, &ce) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23505":
			return &wrapped{ctalk.Errorf(ctalk.EConflict, "that already exists"), err}
		case pe.Code == "22021" || pe.Code == "22P05":
			// Text Postgres cannot store, such as a NUL character.
			return &wrapped{ctalk.Errorf(ctalk.EInvalid, "the text contains a character that cannot be stored, such as NUL; remove it"), err}
		case pe.Code == "23503":
			return &wrapped{ctalk.Errorf(ctalk.ENotFound, "a referenced record does not exist"), err}
		case pe.Code == "40001" || pe.Code == "40P01":
			return &wrapped{ctalk.Errorf(ctalk.EUnavailable, "the database was busy; retry the call"), err}
		case strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03" || strings.HasPrefix(pe.Code, "53"):
			return &wrapped{ctalk.Errorf(ctalk.EUnavailable, "the database is unavailable; retry in a few seconds"), err}
		}
		return err
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return &wrapped{ctalk.Errorf(ctalk.EConflict, "that already exists"), err}
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return &wrapped{ctalk.Errorf(ctalk.ENotFound, "a referenced record does not exist"), err}
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_BUSY_SNAPSHOT, sqlite3.SQLITE_BUSY_TIMEOUT:
			return &wrapped{ctalk.Errorf(ctalk.EUnavailable, "the database was busy; retry the call"), err}
		}
		return err
	}
	// A connection that died mid-call (the server crashed or restarted)
	// reads as an unexpected EOF or a closed connection, and is not safe to
	// retry blindly: the caller retries, with its idempotency key.
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) || isConnError(err) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) {
		return &wrapped{ctalk.Errorf(ctalk.EUnavailable, "the database is unavailable; retry in a few seconds"), err}
	}
	return err
}

// isConnError reports whether err says the database could not be reached.
func isConnError(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// wrapped carries a ctalk error for callers and the driver error for logs.
type wrapped struct {
	code  *ctalk.Error
	cause error
}

func (w *wrapped) Error() string   { return w.code.Error() + ": " + w.cause.Error() }
func (w *wrapped) Unwrap() []error { return []error{w.code, w.cause} }

// IsDuplicate reports whether err is the database's refusal of a row whose
// unique key another row has (SQLSTATE 23505, or SQLite's unique and
// primary key constraints), rather than a conflict a service explained.
func IsDuplicate(err error) bool {
	var w *wrapped
	return errors.As(err, &w) && w.code.Code == ctalk.EConflict
}
