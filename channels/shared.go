package channels

import (
	"context"
	"sync"
	"time"

	"github.com/ctalk/ctalk"
)

// sharedReads lets the waiters of one channel that wake together read the
// new messages once: when a post wakes 500 waiters after the same sequence
// number, they share one query for the page and one for which of them are
// still members, instead of sending 500 of each.
//
// A caller never gets a read that began before it asked, which could miss
// the message whose wake-up it is answering, or a change of its membership:
// while a read of a key runs, callers queue for the next one, which starts
// when it ends, and all of them share that one. So a burst of callers costs
// at most two reads.
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

// sharedPage is what one shared read returns: the page, and which of the
// read's callers are members of the channel.
type sharedPage struct {
	msgs    []*Message
	members map[string]bool
}

type readState struct{ running, next *sharedRead }

type sharedRead struct {
	done chan struct{}
	// readers are the users of the callers that share the read; callers
	// join under sharedReads.mu until the read starts.
	readers []string
	page    *sharedPage
	err     error
}

// sharedReadTimeout bounds a shared read, which runs apart from any one
// caller's context: a caller that gives up does not fail the others.
const sharedReadTimeout = 10 * time.Second

// page returns what read(ctx, readers) returns, sharing the read with the
// concurrent callers of the same key; readers are the users of the callers
// that share it, reader among them. The page is shared: callers must copy
// before changing its messages.
func (g *sharedReads) page(k pageKey, reader string, read func(ctx context.Context, readers []string) (*sharedPage, error)) (*sharedPage, error) {
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
		r := &sharedRead{done: make(chan struct{}), readers: []string{reader}}
		st.running = r
		g.mu.Unlock()
		return g.run(k, st, r, read)
	}
	if r := st.next; r != nil {
		r.readers = append(r.readers, reader)
		g.mu.Unlock()
		<-r.done
		return r.page, r.err
	}
	r := &sharedRead{done: make(chan struct{}), readers: []string{reader}}
	st.next = r
	prev := st.running
	g.mu.Unlock()
	// The read in progress may have begun before this call: run the next
	// one once it ends (it becomes the running read then, and takes no more
	// readers).
	<-prev.done
	return g.run(k, st, r, read)
}

func (g *sharedReads) run(k pageKey, st *readState, r *sharedRead, read func(ctx context.Context, readers []string) (*sharedPage, error)) (*sharedPage, error) {
	ctx, cancel := context.WithTimeout(ctalk.WithOrg(context.Background(), k.org), sharedReadTimeout)
	r.page, r.err = read(ctx, r.readers)
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
	return r.page, r.err
}
