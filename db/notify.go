package db

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Listen calls receive with the payload of every Postgres notification on
// channel until ctx ends. Every Listen of one DB shares one connection of its
// own to the direct URL (see Config.DirectURL), because a LISTEN through a
// transaction-mode pooler registers on a server connection that the pooler
// soon hands to someone else. Sharing it also keeps order: Postgres delivers
// a connection's notifications in commit order, and they are handed to
// receive one at a time in that order, whatever their channel, so a
// revocation announced before a message is posted is applied before the
// message's wake-up is heard. receive must therefore be quick and must not
// block on another notification. The connection reconnects by itself, and
// connected is called after every connect, before the channel's first
// notification: notifications sent while it was away are lost, which the
// caller may want to make up for. On SQLite it returns at once, unless the
// file is shared by several processes (Config.Shared), whose notifications
// go through the file (see sharedListener), in commit order too.
func (d *DB) Listen(ctx context.Context, channel string, connected func(), receive func(payload string), log *slog.Logger) {
	if !d.Notifies() {
		return
	}
	sub := &subscriber{channel: channel + d.notifyScope, connected: connected, receive: receive}
	if d.Engine == SQLite {
		d.shared.add(d, sub, log)
		<-ctx.Done()
		d.shared.remove(sub)
		return
	}
	d.listener.add(d, sub, log)
	<-ctx.Done()
	d.listener.remove(sub)
}

// listener is the one LISTEN connection of a DB, shared by every Listen.
type listener struct {
	mu      sync.Mutex
	subs    map[*subscriber]struct{}
	running bool
	// changed wakes the connection's loop to LISTEN to a new subscriber's
	// channel (or to stop when none is left).
	changed chan struct{}
}

// subscriber is one Listen.
type subscriber struct {
	channel   string
	connected func()
	receive   func(string)
	// live is set once connected has been called on the current
	// connection; only the loop touches it.
	live bool
}

func (l *listener) add(d *DB, sub *subscriber, log *slog.Logger) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.subs == nil {
		l.subs = map[*subscriber]struct{}{}
		l.changed = make(chan struct{}, 1)
	}
	l.subs[sub] = struct{}{}
	if !l.running {
		l.running = true
		go l.run(d, log)
	}
	l.poke()
}

func (l *listener) remove(sub *subscriber) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.subs, sub)
	l.poke()
}

// poke wakes the loop; l.mu is held.
func (l *listener) poke() {
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// snapshot returns the subscribers, or nil and stops the loop's running
// mark when there are none.
func (l *listener) snapshot() []*subscriber {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.subs) == 0 {
		l.running = false
		return nil
	}
	out := make([]*subscriber, 0, len(l.subs))
	for s := range l.subs {
		out = append(out, s)
	}
	return out
}

// run keeps the connection while anyone listens, reconnecting with backoff.
func (l *listener) run(d *DB, log *slog.Logger) {
	backoff := 100 * time.Millisecond
	for {
		err, more := l.once(d, func() { backoff = 100 * time.Millisecond })
		if !more {
			return
		}
		log.Warn("notification listener lost its connection; reconnecting", "error", err, "retry_in", backoff)
		time.Sleep(backoff)
		backoff = min(backoff*2, 5*time.Second)
	}
}

// once runs one connection until it fails (more is true) or nobody listens
// any more (more is false).
func (l *listener) once(d *DB, connectedOK func()) (err error, more bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	subs := l.snapshot()
	if subs == nil {
		return nil, false
	}
	conn, err := pgx.Connect(ctx, d.DirectURL)
	if err != nil {
		return err, true
	}
	defer conn.Close(context.Background())
	for _, s := range subs {
		s.live = false
	}
	listening := map[string]bool{}
	for first := true; ; first = false {
		byChannel, subs, err := l.sync(ctx, conn, listening)
		if err != nil || subs == nil {
			return err, subs != nil
		}
		if first {
			connectedOK()
		}
		// Tell new subscribers, after their channel's LISTEN.
		for _, s := range subs {
			if !s.live {
				s.live = true
				s.connected()
			}
		}
		if err := l.deliver(ctx, conn, byChannel); err != nil {
			return err, true
		}
	}
}

// sync makes conn LISTEN to exactly the subscribers' channels, listening
// holding those it listens to, and returns the subscribers by channel; subs
// is nil when nobody listens any more.
func (l *listener) sync(ctx context.Context, conn *pgx.Conn, listening map[string]bool) (byChannel map[string][]*subscriber, subs []*subscriber, err error) {
	subs = l.snapshot()
	if subs == nil {
		return nil, nil, nil
	}
	byChannel = map[string][]*subscriber{}
	for _, s := range subs {
		byChannel[s.channel] = append(byChannel[s.channel], s)
	}
	for ch := range byChannel {
		if !listening[ch] {
			if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
				return nil, subs, err
			}
			listening[ch] = true
		}
	}
	for ch := range listening {
		if byChannel[ch] == nil {
			if _, err := conn.Exec(ctx, "UNLISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
				return nil, subs, err
			}
			delete(listening, ch)
		}
	}
	return byChannel, subs, nil
}

// deliver hands conn's notifications to their subscribers, in order, until
// the subscribers change (nil) or the connection fails (its error).
func (l *listener) deliver(ctx context.Context, conn *pgx.Conn, byChannel map[string][]*subscriber) error {
	waitCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-l.changed:
			stop()
		case <-waitCtx.Done():
		}
	}()
	for {
		n, err := conn.WaitForNotification(waitCtx)
		if err != nil {
			if waitCtx.Err() != nil && !conn.IsClosed() {
				return nil // the subscribers changed
			}
			return err
		}
		for _, s := range byChannel[n.Channel] {
			if s.live {
				s.receive(n.Payload)
			}
		}
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
// request pool (seen by OnStatement). Listeners get them once it commits.
// On a shared SQLite file the payloads are appended to it in the writer
// queue; on any other SQLite file nobody listens, so callers check
// Notifies first.
//
// Returns the statement's errors translated into codes (see Translate).
func (d *DB) Notify(ctx context.Context, channel string, payloads []string) error {
	if d.Engine == SQLite {
		return d.notifyShared(ctx, channel, payloads)
	}
	d.observe(notifySQL)
	_, err := d.pool.ExecContext(ctx, notifySQL, channel+d.notifyScope, payloads)
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

// notifyScope is what ends the notification channels of a database whose
// search_path is searchPath: nothing for the default (public) schema, else
// "_" and the schema's name, or a hash of it where that would make a channel
// name too long for Postgres (63 bytes).
func notifyScope(searchPath string) string {
	schema := strings.TrimSpace(strings.Split(searchPath, ",")[0])
	schema = strings.Trim(schema, `"`)
	if schema == "" || schema == "public" || schema == "$user" {
		return ""
	}
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return -1
	}, strings.ToLower(schema))
	if clean != schema || len(clean) > 24 {
		sum := sha256.Sum256([]byte(schema))
		clean = hex.EncodeToString(sum[:8])
	}
	return "_" + clean
}
