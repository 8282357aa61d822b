package web

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/sse"
	"github.com/ctalk/ctalk/wait"
)

// MaxStreams caps the live streams one person may hold open on one server:
// one per open page.
const MaxStreams = 10

// reconnectAfter is how long a browser waits before it reconnects a stream
// that ended, for example because its server is draining.
const reconnectAfter = 2 * time.Second

// live serves /events, the Server-Sent Events stream that keeps a person's
// open pages up to date, and counts the streams open per person.
type live struct {
	p    *Pages
	open *wait.Limit
}

// mountLive adds the routes of the app's live section: the Server-Sent
// Events stream that updates open pages without a reload.
func (p *Pages) mountLive(r routes) {
	l := &live{p: p, open: wait.NewLimit(MaxStreams)}
	// Not behind signedIn: a browser's event source cannot follow it to
	// the sign-in page, so a stream without a session is answered 401.
	r.e.GET("/events", l.events, p.headers, l.signedIn)
}

// signedIn lets a stream through only with a browser session.
func (l *live) signedIn(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		sess := l.p.Session(c)
		if sess == nil {
			return c.String(http.StatusUnauthorized, "Sign in to get live updates: this stream is for a browser signed in to ctalk.")
		}
		c.Set(meKey, sess)
		return next(c)
	}
}

// liveCounts is what a "counts" event carries: the inbox's counts and the
// channel posts waiting for the person's approval.
type liveCounts struct {
	inbox.Counts
	// Posts counts the person's agents' channel posts held for their
	// approval (the org's channel_post_mode is human).
	Posts int `json:"posts"`
}

// events streams the signed-in person's counts (liveCounts) as "counts"
// events: one at once, then one whenever they change; with ?channel=, also
// the channel's new messages (see channelFeed). It is woken by the
// inbox's broker (on Postgres, by any replica), re-reads on each keep-alive
// in case a wake-up was lost, and holds no database connection in between.
// It ends when the session ends (with an "error" event) and when the server
// drains.
func (l *live) events(c echo.Context) error {
	m := me(c)
	w := c.Response()
	if l.draining() {
		// An event source gives up on any status but 200: tell it to come
		// back, to whichever replica is serving by then.
		if err := sse.Start(w); err == nil {
			sse.Retry(w, reconnectAfter)
		}
		return nil
	}
	release, ok := l.open.Take(m.OrgID, m.UserID)
	if !ok {
		return c.String(http.StatusTooManyRequests, fmt.Sprintf(
			"You have %d ctalk pages with live updates open; close some of those tabs or windows, then reload this page.", MaxStreams))
	}
	defer release()
	// A channel page's stream also carries the channel's new messages.
	feed, err := l.p.openChannelFeed(c)
	if err != nil {
		if ctalk.ErrorCode(err) == ctalk.EInternal {
			return err
		}
		return c.String(ctalk.HTTPStatus(ctalk.ErrorCode(err)), ctalk.ErrorMessage(err))
	}
	defer feed.close()
	// Subscribed before the first read, so nothing committed in between is missed.
	wake, cancel := l.p.inbox.Broker().Watch(m.OrgID, m.UserID)
	defer cancel()
	if err := sse.Start(w); err != nil {
		return nil
	}
	if err := sse.Retry(w, reconnectAfter); err != nil {
		return nil
	}
	// Ended at once when the session is signed out, here or on another
	// replica; the stream's first read checks the session after this.
	broker := l.p.inbox.Broker()
	ctx, release := broker.Hold(c.Request().Context(), &wait.Credential{
		OrgID: m.OrgID, UserID: m.UserID, ID: m.TokenHash, Seen: broker.Revocations(),
		Check: func(ctx context.Context) error { return l.p.auth.StillSignedIn(ctx, m) },
	})
	defer release()
	l.stream(ctx, w, m, wake, feed)
	return nil
}

// stream sends the counts, and the feed's messages, until the client
// leaves, the session ends or the server drains.
func (l *live) stream(ctx context.Context, w http.ResponseWriter, m *auth.Session, wake <-chan struct{}, feed *channelFeed) {
	keepAlive := time.NewTicker(sse.KeepAlive)
	defer keepAlive.Stop()
	var last *liveCounts
	for {
		var counts liveCounts
		var err error
		if counts.Counts, err = l.p.inbox.Counts(ctx, m.Caller()); err == nil {
			counts.Posts, err = l.p.heldCount(ctx, m.Caller())
		}
		if err != nil {
			l.fail(ctx, w, err)
			return
		}
		posts, err := feed.read(ctx)
		if err != nil {
			l.fail(ctx, w, err)
			return
		}
		// Whatever woke the stream, what it read goes only to a signed-in
		// person: checked after the reads, so that nothing written after a
		// sign-out reaches the page.
		if err := l.p.auth.StillSignedIn(ctx, m); err != nil {
			l.fail(ctx, w, err)
			return
		}
		if last == nil || counts != *last {
			if sse.Send(w, sse.Event{Name: "counts", Data: counts}) != nil {
				return
			}
			last = &counts
		} else if len(posts) == 0 && sse.Ping(w) != nil {
			return
		}
		if err := feed.send(ctx, w, posts); err != nil {
			l.fail(ctx, w, err)
			return
		}
		select {
		case <-wake:
		case <-feed.wakeups():
		case <-keepAlive.C:
		case <-l.p.cfg.Stop:
			return
		case <-ctx.Done():
			if err := wait.Refused(ctx); err != nil {
				sse.Fail(w, err)
			}
			return
		}
	}
}

// fail ends a stream with the error as its last event.
func (l *live) fail(ctx context.Context, w http.ResponseWriter, err error) {
	if refused := wait.Refused(ctx); refused != nil {
		sse.Fail(w, refused)
		return
	}
	if ctx.Err() != nil {
		return
	}
	if ctalk.ErrorCode(err) == ctalk.EInternal {
		l.p.cfg.Logger.Error("live updates failed", "error", err)
	}
	sse.Fail(w, err)
}

func (l *live) draining() bool {
	select {
	case <-l.p.cfg.Stop:
		return true
	default:
		return false
	}
}
