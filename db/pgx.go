package db

import (
	"errors"
	"net"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

type pgxConnConfig = pgx.ConnConfig

func parsePgxConfig(s string) (*pgx.ConnConfig, error) {
	return pgx.ParseConfig(s)
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
