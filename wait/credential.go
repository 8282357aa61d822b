package wait

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctalk/ctalk"
)

// Credential is what a waiting call or open stream was opened with: a
// token, an OAuth access token or a browser session of a user of an org.
type Credential struct {
	OrgID, UserID string
	// ID tells credentials of one user apart (a token's hash): one check
	// serves every wait opened with it.
	ID string
	// Check reads the credential anew, bypassing any cache, and returns
	// the error to end its waits with (EUnauthorized, EForbidden) once it
	// no longer holds; other errors (the database is away) keep them open.
	Check func(ctx context.Context) error
	// Seen is the broker's Revocations taken before the credential was
	// last checked: a revocation announced since makes Hold check it at
	// once, so that none is missed between the check and the Hold.
	Seen uint64
}

// Revocations counts the revocations announced (Revoked) so far; see
// Credential.Seen.
func (b *Broker) Revocations() uint64 { return b.revocations.count() }

// refusal is the cause a hold ends its context with.
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }
func (r refusal) Unwrap() error { return r.err }

// Ended returns nil while ctx has not ended, the credential's refusal when
// a hold ended it, and ctx.Err() otherwise.
func Ended(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	var r refusal
	if errors.As(context.Cause(ctx), &r) {
		return r.err
	}
	return ctx.Err()
}

// Refused returns the credential's refusal that ended ctx (see Hold), or
// nil when ctx has not ended or ended otherwise.
func Refused(ctx context.Context) error {
	var r refusal
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &r) {
		return r.err
	}
	return nil
}

// heldKey marks a context held for its credential, and carries its holder.
type heldKey struct{}

// Settle waits, when ctx is held (Hold) and a revocation of its user was
// announced, until its credential has been checked anew (ending ctx when it
// was refused), for at most the check's own bound. Whatever hands over
// something a wake-up brought calls it first, so that a revocation heard
// before the wake-up keeps it from being handed over.
func Settle(ctx context.Context) {
	h, _ := ctx.Value(heldKey{}).(*holder)
	if h == nil {
		return
	}
	if p := h.pending.Load(); p != nil {
		select {
		case <-*p:
		case <-time.After(checkTimeout):
		}
	}
}

// checkTimeout bounds one check of a credential.
const checkTimeout = 5 * time.Second

// Hold returns ctx, ended with the refusal of credential c as soon as a
// revocation of c's user is announced (Revoked) and c's Check refuses it; a
// revocation announced since c was checked (Checked) makes it check at
// once. Release it when the wait or stream it holds ends. Without a
// credential, or when ctx is held already, it returns ctx as it is.
func (b *Broker) Hold(ctx context.Context, c *Credential) (context.Context, func()) {
	if c == nil || c.Check == nil || ctx.Value(heldKey{}) != nil {
		return ctx, func() {}
	}
	h := &holder{cred: c}
	ctx, cancel := context.WithCancelCause(context.WithValue(ctx, heldKey{}, h))
	h.end = cancel
	remove := b.revocations.add(h)
	if b.revocations.count() != c.Seen {
		b.revocations.check([]*holder{h})
	}
	return ctx, func() {
		remove()
		cancel(nil)
	}
}

// Revoked makes the open waits and streams of credentials of orgID/userID
// (of every user of orgID when userID is empty, of everyone when orgID is
// empty too, as after announcements were lost) check their credential
// anew, and end if it no longer holds. Call it for every revocation
// announced, on this replica or another.
func (b *Broker) Revoked(orgID, userID string) {
	b.revocations.check(b.revocations.of(orgID, userID))
}

// holder is one open wait or stream held for its credential.
type holder struct {
	cred *Credential
	end  context.CancelCauseFunc
	// pending is closed once the check of the last announcement that
	// touched the holder is done (see Settle).
	pending atomic.Pointer[chan struct{}]
}

// revocations holds the open holders by user, and counts revocations.
type revocations struct {
	mu      sync.Mutex
	n       uint64
	holders map[string]map[*holder]struct{}
	// checks bounds the credential checks run at once after an
	// announcement that touches many (a listener's reconnect).
	checks chan struct{}
}

func (r *revocations) count() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

func (r *revocations) add(h *holder) (remove func()) {
	k := userKey(h.cred.OrgID, h.cred.UserID)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.holders == nil {
		r.holders = map[string]map[*holder]struct{}{}
		r.checks = make(chan struct{}, 8)
	}
	set := r.holders[k]
	if set == nil {
		set = map[*holder]struct{}{}
		r.holders[k] = set
	}
	set[h] = struct{}{}
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(set, h)
		if len(r.holders[k]) == 0 {
			delete(r.holders, k)
		}
	}
}

// of counts a revocation and returns the holders it touches.
func (r *revocations) of(orgID, userID string) []*holder {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	var out []*holder
	if userID != "" {
		for h := range r.holders[userKey(orgID, userID)] {
			out = append(out, h)
		}
		return out
	}
	for _, set := range r.holders {
		for h := range set {
			c := h.cred
			if orgID == "" || c.OrgID == orgID {
				out = append(out, h)
			}
		}
	}
	return out
}

// check checks the credentials of hs, once each, in the background, and
// ends the holders of each one refused. Until a check is done its holders
// are pending (see Settle): marked here, before check returns.
func (r *revocations) check(hs []*holder) {
	byCred := map[string][]*holder{}
	for _, h := range hs {
		id := h.cred.OrgID + "/" + h.cred.UserID + "/" + h.cred.ID
		byCred[id] = append(byCred[id], h)
	}
	for _, group := range byCred {
		done := make(chan struct{})
		for _, h := range group {
			h.pending.Store(&done)
		}
		go func() {
			defer close(done)
			r.mu.Lock()
			checks := r.checks
			r.mu.Unlock()
			checks <- struct{}{}
			defer func() { <-checks }()
			ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
			defer cancel()
			err := group[0].cred.Check(ctx)
			if c := ctalk.ErrorCode(err); c != ctalk.EUnauthorized && c != ctalk.EForbidden {
				return
			}
			for _, h := range group {
				h.end(refusal{err})
			}
		}()
	}
}
