package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/ctalk/ctalk/db"
)

// backends are the Postgres server processes serving one database, when
// Postgres runs on this machine: their CPU time shows what a phase costs
// the database, which shares the cores with the server and the clients and
// which this process's own CPU time leaves out.
type backends struct {
	pids []int
	// last is each backend's CPU time when cpu last read it.
	mu   sync.Mutex
	last map[int]time.Duration
}

// dbBackends lists the backends connected to d's database, other than the
// one that answers; nil on SQLite, or when their CPU time cannot be read
// here (Postgres on another machine, or another user's processes).
func dbBackends(ctx context.Context, d *db.DB) (*backends, error) {
	if d == nil || d.Engine != db.Postgres {
		return nil, nil
	}
	rows, err := d.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	if err != nil {
		return nil, fmt.Errorf("list the database's backends: %w", err)
	}
	defer rows.Close()
	b := &backends{}
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			return nil, err
		}
		b.pids = append(b.pids, pid)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(b.pids) == 0 {
		return nil, nil
	}
	if _, ok := schedCPU(b.pids[0]); !ok {
		return nil, nil
	}
	return b, nil
}

// cpu is the CPU time the backends have used so far. A backend that ended
// counts what it had used when cpu last read it, so that the sum never
// falls: the database's other backends (another test's, a pool's idle
// connection closed) end while a phase runs, and their time dropping out
// made a round's share negative.
func (b *backends) cpu() time.Duration {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil {
		b.last = make(map[int]time.Duration, len(b.pids))
	}
	var sum time.Duration
	for _, pid := range b.pids {
		if d, ok := schedCPU(pid); ok {
			b.last[pid] = d
		}
		sum += b.last[pid]
	}
	return sum
}

// schedCPU reads a process's time on a CPU, in nanoseconds, from the first
// field of /proc/<pid>/schedstat (finer than the clock ticks of
// /proc/<pid>/stat).
func schedCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat")
	if err != nil {
		return 0, false
	}
	f, _, _ := bytes.Cut(b, []byte(" "))
	ns, err := strconv.ParseInt(string(f), 10, 64)
	return time.Duration(ns), err == nil
}
