package channels

import (
	"context"
	"sync"
	"time"
)

// sharedReads lets the waiters of one channel that wake together read the
// new messages once: when a post wakes 500 waiters after the same sequence
// number, they share one query instead of sending 500 identical ones.
//
// A caller never gets a read that began before it asked, which could miss
// the message whose wake-up it is answering: while a read of a key runs,
// callers queue for the next one, which starts when it ends, and all of them
// share that one. So a burst of callers costs at most two reads.
type sharedReads struct {
	mu    sync.Mutex
	reads map[pageKey]*readState
}

// pageKey names what a shared read reads: a channel's messages after a
// sequence number, at most MaxHanded.
type pageKey struct {
	org, channel string
	after        int64
}

type readState struct{ running, next *sharedRead }

type sharedRead struct {
	done chan struct{}
	msgs []*Message
	err  error
}

// sharedReadTimeout bounds a shared read, which runs apart from any one
// caller's context: a caller that gives up does not fail the others.
const sharedReadTimeout = 10 * time.Second

// page returns the messages that read(key) returns, sharing the read with
// the concurrent callers of the same key. The messages are shared: callers
// must copy before changing them.
func (g *sharedReads) page(k pageKey, read func(ctx context.Context) ([]*Message, error)) ([]*Message, error) {
	g.mu.Lock()
	if g.reads == nil {
		g.reads = map[pageKey]*readState{}
	}
	st := g.reads[k]
	if st == nil {
		st = &readState{}
		g.reads[k] = st
	}
	if st.running == nil {
		r := &sharedRead{done: make(chan struct{})}
		st.running = r
		g.mu.Unlock()
		return g.run(k, st, r, read)
	}
	if r := st.next; r != nil {
		g.mu.Unlock()
		<-r.done
		return r.msgs, r.err
	}
	r := &sharedRead{done: make(chan struct{})}
	st.next = r
	prev := st.running
	g.mu.Unlock()
	// The read in progress may have begun before this call: run the next
	// one once it ends (it becomes the running read then).
	<-prev.done
	return g.run(k, st, r, read)
}

func (g *sharedReads) run(k pageKey, st *readState, r *sharedRead, read func(ctx context.Context) ([]*Message, error)) ([]*Message, error) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedReadTimeout)
	r.msgs, r.err = read(ctx)
	cancel()
	g.mu.Lock()
	if st.next != nil {
		st.running, st.next = st.next, nil
	} else {
		st.running = nil
		delete(g.reads, k)
	}
	close(r.done)
	g.mu.Unlock()
	return r.msgs, r.err
}
