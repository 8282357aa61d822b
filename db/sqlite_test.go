package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// oneConn opens a SQLite database with a single pooled connection, so that
// every statement runs on the same cache.
func oneConn(t *testing.T) (*DB, *sql.Conn) {
	t.Helper()
	ctx := context.Background()
	d, err := Connect(ctx, Config{Path: filepath.Join(t.TempDir(), "cache.db"), MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if _, err := d.pool.ExecContext(ctx, `CREATE TABLE n (v INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if _, err := d.pool.ExecContext(ctx, `INSERT INTO n (v) VALUES ($1)`, i); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := d.pool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return d, conn
}

// cached returns the cached statement texts of conn's driver connection.
func cached(t *testing.T, conn *sql.Conn) map[string]*cachedStmt {
	t.Helper()
	var stmts map[string]*cachedStmt
	err := conn.Raw(func(dc any) error {
		cc, ok := dc.(*cachingConn)
		if !ok {
			return fmt.Errorf("driver connection is %T, want *cachingConn", dc)
		}
		stmts = cc.stmts
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return stmts
}

func TestStmtCacheReusesPreparedStatements(t *testing.T) {
	_, conn := oneConn(t)
	ctx := context.Background()
	const q = `SELECT v FROM n WHERE v = $1`
	for i := 1; i <= 3; i++ {
		var got int
		if err := conn.QueryRowContext(ctx, q, i).Scan(&got); err != nil || got != i {
			t.Fatalf("query %d: got %d, err %v", i, got, err)
		}
	}
	s := cached(t, conn)[q]
	if s == nil {
		t.Fatalf("%q is not cached; cache holds %d statements", q, len(cached(t, conn)))
	}
	first := s.Stmt
	var got int
	if err := conn.QueryRowContext(ctx, q, 2).Scan(&got); err != nil || got != 2 {
		t.Fatalf("got %d, err %v", got, err)
	}
	if again := cached(t, conn)[q]; again != s || again.Stmt != first || again.busy {
		t.Fatalf("statement after reuse: %+v, want the same idle statement %p", again, first)
	}
}

// TestStmtCacheNestedUseOfOneText runs a query while the rows of the same
// text are still open on the same connection: the second use must get a
// statement of its own, or it would reset the first one's cursor.
func TestStmtCacheNestedUseOfOneText(t *testing.T) {
	_, conn := oneConn(t)
	ctx := context.Background()
	const q = `SELECT v FROM n WHERE v >= $1 ORDER BY v`
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, q, 1)
	if err != nil {
		t.Fatal(err)
	}
	var outer, inner []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		outer = append(outer, v)
		var w int
		if err := tx.QueryRowContext(ctx, q, v).Scan(&w); err != nil {
			t.Fatal(err)
		}
		inner = append(inner, w)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if fmt.Sprint(outer) != "[1 2 3]" || fmt.Sprint(inner) != "[1 2 3]" {
		t.Fatalf("outer %v, inner %v; want [1 2 3] both", outer, inner)
	}
}

func TestStmtCacheIsBounded(t *testing.T) {
	_, conn := oneConn(t)
	ctx := context.Background()
	for i := range maxCachedStmts + 10 {
		var got int
		if err := conn.QueryRowContext(ctx, fmt.Sprintf(`SELECT %d`, i)).Scan(&got); err != nil || got != i {
			t.Fatalf("query %d: got %d, err %v", i, got, err)
		}
	}
	if n := len(cached(t, conn)); n > maxCachedStmts {
		t.Fatalf("cache holds %d statements, want at most %d", n, maxCachedStmts)
	}
}

// TestStmtCacheFailedStatementIsReusable checks that a statement whose
// execution failed is released and still works.
func TestStmtCacheFailedStatementIsReusable(t *testing.T) {
	_, conn := oneConn(t)
	ctx := context.Background()
	const q = `INSERT INTO n (v) VALUES ($1)`
	if _, err := conn.ExecContext(ctx, q, 1); err == nil {
		t.Fatal("duplicate key inserted")
	}
	if _, err := conn.ExecContext(ctx, q, 4); err != nil {
		t.Fatalf("insert after a failed one: %v", err)
	}
	if s := cached(t, conn)[q]; s == nil || s.busy {
		t.Fatalf("statement after use: %+v, want cached and idle", s)
	}
}

// TestWriterQueue checks the SQLite writer queue: a writer waits for the one
// before it, a queued writer whose context ends gives up with the context's
// error, and the queue is free again afterwards.
func TestWriterQueue(t *testing.T) {
	ctx := context.Background()
	d, err := Connect(ctx, Config{Path: filepath.Join(t.TempDir(), "writers.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.pool.ExecContext(ctx, `CREATE TABLE n (v INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	inFirst, releaseFirst := make(chan struct{}), make(chan struct{})
	firstDone := make(chan error)
	go func() {
		firstDone <- d.Tx(ctx, func(tx Querier) error {
			close(inFirst)
			<-releaseFirst
			_, err := tx.Exec(ctx, `INSERT INTO n (v) VALUES (1)`)
			return err
		})
	}()
	<-inFirst

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	ran := false
	err = d.Write(short, func(Querier) error { ran = true; return nil })
	if !errors.Is(err, context.DeadlineExceeded) || ran {
		t.Fatalf("queued Write with an ended context: ran %v, err %v; want not run, deadline exceeded", ran, err)
	}
	err = d.Tx(short, func(Querier) error { ran = true; return nil })
	if !errors.Is(err, context.DeadlineExceeded) || ran {
		t.Fatalf("queued Tx with an ended context: ran %v, err %v; want not run, deadline exceeded", ran, err)
	}

	second := make(chan error)
	go func() {
		second <- d.Write(ctx, func(q Querier) error {
			_, err := q.Exec(ctx, `INSERT INTO n (v) SELECT v + 1 FROM n`)
			return err
		})
	}()
	close(releaseFirst)
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	// The second writer ran after the first committed: it saw row 1.
	var got []int
	rows, err := d.pool.QueryContext(ctx, `SELECT v FROM n ORDER BY v`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("rows = %v, want [1 2]", got)
	}
}

// TestCheckpointerKeepsTheLogSmall writes in bursts further apart than the
// checkpointer's interval: SQLite's own checkpoint is off, so without the
// checkpointer the write-ahead log would hold every burst.
func TestCheckpointerKeepsTheLogSmall(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "log.db")
	d, err := Connect(ctx, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.pool.ExecContext(ctx, `CREATE TABLE blobs (b BLOB)`); err != nil {
		t.Fatal(err)
	}
	const bursts, perBurst, size = 10, 50, 4096
	for range bursts {
		err := d.Tx(ctx, func(tx Querier) error {
			for range perBurst {
				if _, err := tx.Exec(ctx, `INSERT INTO blobs (b) VALUES (randomblob($1))`, size); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(checkpointEvery * 3 / 2)
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	// One burst is about 50 pages of 4 KiB; all of them would be 2 MB.
	if all := int64(bursts * perBurst * size); fi.Size() > all/3 {
		t.Fatalf("the write-ahead log is %d bytes after %d bursts of %d bytes; the checkpointer does not keep up", fi.Size(), bursts, perBurst*size)
	}
}
