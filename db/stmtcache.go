package db

import (
	"context"
	"database/sql/driver"
	"fmt"
	"sync"

	"modernc.org/sqlite"
)

// maxCachedStmts bounds the prepared statements kept per SQLite connection.
// ctalk's queries are a fixed set of constant texts, well under this; a
// text past the bound is prepared and finalized per use, as without a cache.
const maxCachedStmts = 256

// stmtCacheConnector opens SQLite connections that keep their prepared
// statements. The driver prepares a statement on every call when it is
// given SQL text directly, and on ctalk's short queries preparing is most of
// the work; a statement kept per connection and text is prepared once.
// Postgres needs none of this: pgx keeps its own statement cache per
// connection.
type stmtCacheConnector struct {
	driver.Connector
}

// newStmtCacheConnector returns a connector for the SQLite database at dsn.
func newStmtCacheConnector(dsn string) (driver.Connector, error) {
	base, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return stmtCacheConnector{base}, nil
}

func (c stmtCacheConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc, ok := conn.(sqliteConn)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("sqlite driver connection %T lacks the context-aware methods", conn)
	}
	return &cachingConn{conn: sc, stmts: map[string]*cachedStmt{}}, nil
}

// sqliteConn is what cachingConn needs of the driver's connection.
type sqliteConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// cachingConn wraps a SQLite connection. It deliberately does not implement
// driver.QueryerContext or driver.ExecerContext, so database/sql prepares
// every statement through PrepareContext, which serves it from the cache.
type cachingConn struct {
	conn sqliteConn

	// mu guards stmts; database/sql already serializes the use of one
	// connection, so it is never contended.
	mu    sync.Mutex
	stmts map[string]*cachedStmt
}

// cachedStmt is a prepared statement kept by its connection. While busy (from
// PrepareContext until database/sql closes it, which for a query is when its
// rows are closed), a second use of the same text on the same connection,
// such as a query issued while iterating the rows of the first, gets a
// statement of its own.
type cachedStmt struct {
	driver.Stmt
	conn *cachingConn
	busy bool
}

func (c *cachingConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *cachingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	c.mu.Lock()
	s, ok := c.stmts[query]
	if ok && !s.busy {
		s.busy = true
		c.mu.Unlock()
		return s, nil
	}
	c.mu.Unlock()

	ds, err := c.conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if ok {
		return ds, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.stmts) >= maxCachedStmts {
		return ds, nil
	}
	s = &cachedStmt{Stmt: ds, conn: c, busy: true}
	c.stmts[query] = s
	return s, nil
}

// Close releases the statement for the next use; the prepared statement
// itself is finalized with its connection.
func (s *cachedStmt) Close() error {
	s.conn.mu.Lock()
	s.busy = false
	s.conn.mu.Unlock()
	return nil
}

func (s *cachedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *cachedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}

func (c *cachingConn) Close() error {
	c.mu.Lock()
	stmts := c.stmts
	c.stmts = nil
	c.mu.Unlock()
	for _, s := range stmts {
		s.Stmt.Close()
	}
	return c.conn.Close()
}

func (c *cachingConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *cachingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.conn.BeginTx(ctx, opts)
}

// Unwrap returns the driver's connection, as the driver asks of wrappers.
func (c *cachingConn) Unwrap() driver.Conn { return c.conn }

func (c *cachingConn) Ping(ctx context.Context) error         { return c.conn.Ping(ctx) }
func (c *cachingConn) ResetSession(ctx context.Context) error { return c.conn.ResetSession(ctx) }
func (c *cachingConn) IsValid() bool                          { return c.conn.IsValid() }
