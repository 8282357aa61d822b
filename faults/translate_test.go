package faults_test

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// TestTranslateLostConnection checks that the errors a Postgres crash
// produces in calls already under way read as unavailable and retryable.
// Before the fix, the first two surfaced as "internal error" during
// TestPostgresRestart, and through the bearer check as HTTP 500 from /mcp.
func TestTranslateLostConnection(t *testing.T) {
	for name, err := range map[string]error{
		"server gone mid-reply":           io.ErrUnexpectedEOF,
		"connection closed earlier":       fmt.Errorf("begin: %w", pgconn.ErrConnClosed),
		"pool handed a dead connection":   driver.ErrBadConn,
		"transaction's connection closed": fmt.Errorf("commit: %w", sql.ErrConnDone),
		"immediate shutdown":              &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"},
		"server starting up":              &pgconn.PgError{Code: "57P03", Message: "the database system is starting up"},
	} {
		t.Run(name, func(t *testing.T) {
			got := db.Translate(err)
			if code := ctalk.ErrorCode(got); code != ctalk.EUnavailable {
				t.Errorf("Translate(%v) has code %q; want %q", err, code, ctalk.EUnavailable)
			}
			if msg := ctalk.ErrorMessage(got); !strings.Contains(msg, "retry") {
				t.Errorf("Translate(%v) says %q; want it to say retry", err, msg)
			}
		})
	}
}
