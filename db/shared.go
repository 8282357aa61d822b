package db

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Processes that share one SQLite file (Config.Shared) notify each other
// through the shared_notifications table, as Postgres replicas do with
// LISTEN and NOTIFY: Notify appends rows in the writer queue, and each
// process's one listener asks the file for PRAGMA data_version every
// sharedPoll, which changes when another connection, of any process,
// committed; only then does it read the rows after the last it handed
// over, in id order, which is commit order. Listening costs one cheap
// statement per poll and reads no table while nothing changes.
const (
	// sharedPoll is how often the listener asks whether the file changed.
	sharedPoll = 25 * time.Millisecond
	// sharedKeep is how long a notification row is kept: far longer than
	// any listener takes to read it.
	sharedKeep = time.Minute
	// sharedPruneEvery is how often a listener deletes rows past sharedKeep.
	sharedPruneEvery = 10 * time.Second
)

// Notifies reports whether d carries notifications between the processes
// or replicas that use it: always on Postgres, and on SQLite when the file
// is shared (Config.Shared).
func (d *DB) Notifies() bool {
	return d.Engine == Postgres || d.shared != nil
}

// notifyShared appends payloads on channel to the shared file's
// notifications.
func (d *DB) notifyShared(ctx context.Context, channel string, payloads []string) error {
	now := d.Now()
	return d.Write(ctx, func(q Querier) error {
		for _, p := range payloads {
			if _, err := q.Exec(ctx, `INSERT INTO shared_notifications (channel, payload, at) VALUES ($1, $2, $3)`, channel, p, now); err != nil {
				return fmt.Errorf("insert into shared_notifications: %w", err)
			}
		}
		return nil
	})
}

// sharedListener is the one listener of a shared SQLite file, shared by
// every Listen of its DB.
type sharedListener struct {
	mu      sync.Mutex
	subs    map[*subscriber]struct{}
	running bool
}

func (l *sharedListener) add(d *DB, sub *subscriber, log *slog.Logger) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.subs == nil {
		l.subs = map[*subscriber]struct{}{}
	}
	l.subs[sub] = struct{}{}
	if !l.running {
		l.running = true
		go l.run(d, log)
	}
}

func (l *sharedListener) remove(sub *subscriber) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.subs, sub)
}

// byChannel returns the subscribers by channel, calling connected for each
// that has not been told yet; it reports false once none is left, when the
// loop stops.
func (l *sharedListener) byChannel() (map[string][]*subscriber, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.subs) == 0 {
		l.running = false
		return nil, false
	}
	out := map[string][]*subscriber{}
	for s := range l.subs {
		if !s.live {
			s.live = true
			if s.connected != nil {
				s.connected()
			}
		}
		out[s.channel] = append(out[s.channel], s)
	}
	return out, true
}

// run polls the file until no subscriber is left or d closes, handing
// every new notification to the subscribers of its channel. A failed read
// is logged and tried again at the next poll; the rows wait.
func (l *sharedListener) run(d *DB, log *slog.Logger) {
	ctx := context.Background()
	conn, err := d.pool.Conn(ctx)
	if err != nil {
		log.Error("shared notifications: no connection", "error", err)
		l.stop()
		return
	}
	defer conn.Close()
	var last int64
	if err := conn.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM shared_notifications`).Scan(&last); err != nil {
		log.Error("shared notifications: read the last", "error", err)
		l.stop()
		return
	}
	version, pruned := int64(-1), time.Now()
	tick := time.NewTicker(sharedPoll)
	defer tick.Stop()
	for {
		subs, ok := l.byChannel()
		if !ok || d.closed.Load() {
			return
		}
		var v int64
		err := conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v)
		if err == nil && v != version {
			version = v
			last, err = l.deliver(ctx, conn, last, subs)
		}
		if err != nil && !d.closed.Load() {
			log.Warn("shared notifications: read", "error", err)
		}
		if time.Since(pruned) > sharedPruneEvery {
			pruned = time.Now()
			l.prune(d, log)
		}
		<-tick.C
	}
}

// stop marks the loop stopped, so that the next Listen starts another.
func (l *sharedListener) stop() {
	l.mu.Lock()
	l.running = false
	l.mu.Unlock()
}

// deliver hands the notifications after last to their channel's
// subscribers, and returns the id of the last one read.
func (l *sharedListener) deliver(ctx context.Context, conn *sql.Conn, last int64, subs map[string][]*subscriber) (int64, error) {
	rows, err := conn.QueryContext(ctx, `SELECT id, channel, payload FROM shared_notifications WHERE id > ? ORDER BY id`, last)
	if err != nil {
		return last, err
	}
	defer rows.Close()
	for rows.Next() {
		var channel, payload string
		if err := rows.Scan(&last, &channel, &payload); err != nil {
			return last, err
		}
		for _, s := range subs[channel] {
			s.receive(payload)
		}
	}
	return last, rows.Err()
}

// prune deletes the notifications older than sharedKeep.
func (l *sharedListener) prune(d *DB, log *slog.Logger) {
	ctx := context.Background()
	err := d.Write(ctx, func(q Querier) error {
		_, err := q.Exec(ctx, `DELETE FROM shared_notifications WHERE at < $1`, d.Now().Add(-sharedKeep))
		return err
	})
	if err != nil && !d.closed.Load() {
		log.Warn("shared notifications: prune", "error", err)
	}
}
