package db

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// Listen calls receive with the payload of every Postgres notification on
// channel until ctx ends. It listens on a connection of its own to the direct
// URL (see Config.DirectURL), because a LISTEN through a transaction-mode
// pooler registers on a server connection that the pooler soon hands to
// someone else. It reconnects by itself and calls connected after every
// connect, before the first notification: notifications sent while it was
// away are lost, which the caller may want to make up for. On SQLite it
// returns at once.
func (d *DB) Listen(ctx context.Context, channel string, connected func(), receive func(payload string), log *slog.Logger) {
	if d.Engine != Postgres {
		return
	}
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := d.listenOnce(ctx, channel, func() {
			backoff = 100 * time.Millisecond
			connected()
		}, receive)
		if ctx.Err() != nil {
			return
		}
		log.Warn("notification listener lost its connection; reconnecting", "channel", channel, "error", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (d *DB) listenOnce(ctx context.Context, channel string, connected func(), receive func(string)) error {
	conn, err := pgx.Connect(ctx, d.DirectURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	connected()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		receive(n.Payload)
	}
}

// notifySQL sends a batch of payloads ($2) on a channel ($1) as one
// statement. Its transaction commits without waiting for the WAL flush: it
// carries no data, and Postgres commits every transaction that notifies one
// at a time, holding a global lock through the commit. Notifying inside the
// writing transactions, as ctalk first did, held that lock through their
// flush and halved ask_person's throughput. Both settings are local to the
// statement's own transaction, so it is safe through a transaction-mode
// pooler.
const notifySQL = `SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, p) FROM unnest($2::text[]) AS p`

// Notify sends every payload on channel, in one statement through the
// request pool. Listeners get them once it commits.
//
// Returns the statement's errors translated into codes (see Translate).
func (d *DB) Notify(ctx context.Context, channel string, payloads []string) error {
	_, err := d.pool.ExecContext(ctx, notifySQL, channel, payloads)
	return Translate(err)
}

// probeTimeout bounds how long notifyProbe waits for its own notification;
// on a direct connection it arrives within milliseconds.
const probeTimeout = 3 * time.Second

// probeChannel carries nothing but notifyProbe's test notifications.
const probeChannel = "ctalk_probe"

// notifyProbe reports whether a LISTEN on a connection to url receives a
// notification sent from a second connection to url. It does not through a
// pooler in transaction mode, which runs the LISTEN on whichever server
// connection is free and then hands that connection to other clients; the
// same pooler also breaks session advisory locks and named prepared
// statements. An error means the probe could not run.
func notifyProbe(ctx context.Context, url string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*probeTimeout)
	defer cancel()
	listener, err := pgx.Connect(ctx, url)
	if err != nil {
		return false, err
	}
	defer listener.Close(context.WithoutCancel(ctx))
	if _, err := listener.Exec(ctx, "LISTEN "+probeChannel); err != nil {
		return false, fmt.Errorf("LISTEN: %w", err)
	}
	sender, err := pgx.Connect(ctx, url)
	if err != nil {
		return false, err
	}
	defer sender.Close(context.WithoutCancel(ctx))
	var b [8]byte
	rand.Read(b[:])
	payload := hex.EncodeToString(b[:])
	if _, err := sender.Exec(ctx, "SELECT pg_notify($1, $2)", probeChannel, payload); err != nil {
		return false, fmt.Errorf("NOTIFY: %w", err)
	}
	waitCtx, stop := context.WithTimeout(ctx, probeTimeout)
	defer stop()
	for {
		n, err := listener.WaitForNotification(waitCtx)
		if err != nil {
			if waitCtx.Err() != nil && ctx.Err() == nil {
				return false, nil
			}
			return false, err
		}
		if n.Payload == payload {
			return true, nil
		}
	}
}
