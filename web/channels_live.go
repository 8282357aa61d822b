package web

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/channels"
	"github.com/ctalk/ctalk/internal/sse"
)

// channelFeed is the part of an open channel page's /events stream that
// carries the channel's new messages, for a member of it: "post" events,
// each with the message's number as its event id, so that a browser that
// reconnects resumes after the last one it got. Sending them moves the
// member's read cursor, as opening the page does. A nil feed carries
// nothing.
type channelFeed struct {
	p     *Pages
	who   ctalk.Caller
	name  string
	after int64
	wake  <-chan struct{}
	stop  func()
}

// maxFeedBatch is the most messages the feed reads at once, and
// maxFeedPages the most batches it reads for one wake-up; the rest come
// with the next wake-up or keep-alive.
const (
	maxFeedBatch = 50
	maxFeedPages = 4
)

// postEvent is the data of a "post" event: the message as the page shows
// it, rendered by the page's own template.
type postEvent struct {
	Seq  int64  `json:"seq"`
	ID   string `json:"id"`
	HTML string `json:"html"`
}

// openChannelFeed returns the feed of the channel /events?channel= names,
// after the message Last-Event-ID (a reconnecting browser) or ?after= (the
// last one the page shows) names, or after the newest; nil when the request
// names no channel. It watches the channel's posts before its first read,
// so nothing posted in between is missed.
//
// Returns EInvalid, ENotFound, EForbidden (not a member).
func (p *Pages) openChannelFeed(c echo.Context) (*channelFeed, error) {
	name := c.QueryParam("channel")
	if name == "" {
		return nil, nil
	}
	who := caller(c)
	ch, err := p.channels.Channel(c.Request().Context(), who, name)
	if ctalk.ErrorCode(err) == ctalk.EInvalid {
		// As on the channel's page: no channel has that name.
		return nil, ctalk.Errorf(ctalk.ENotFound, "no channel of yours has that name")
	}
	if err != nil {
		return nil, err
	}
	if !ch.IsMember {
		return nil, ctalk.Errorf(ctalk.EForbidden, "you are not a member of #%s: join it to see its messages", ch.Name)
	}
	f := &channelFeed{p: p, who: who, name: ch.Name, after: ch.LastSeq}
	for _, v := range []string{c.Request().Header.Get("Last-Event-ID"), c.QueryParam("after")} {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, ctalk.Errorf(ctalk.EInvalid, "Last-Event-ID and after must be the number of a message, not %q", ctalk.Shorten(v, 40))
		}
		f.after = n
		break
	}
	if f.wake, f.stop, err = p.channels.WatchPosts(who, ch.Name); err != nil {
		return nil, err
	}
	return f, nil
}

// wakeups is woken by every post to the channel.
func (f *channelFeed) wakeups() <-chan struct{} {
	if f == nil {
		return nil
	}
	return f.wake
}

func (f *channelFeed) close() {
	if f != nil {
		f.stop()
	}
}

// read returns the messages posted since the last one sent, oldest first,
// leaving the read cursor where it is: they are not shown yet.
func (f *channelFeed) read(ctx context.Context) ([]*channels.Message, error) {
	if f == nil {
		return nil, nil
	}
	var out []*channels.Message
	after := f.after
	for range maxFeedPages {
		pg, err := f.p.channels.Messages(ctx, f.who, f.name, channels.Read{After: after, Limit: maxFeedBatch, Peek: true})
		if err != nil {
			return nil, err
		}
		out = append(out, pg.Messages...)
		if n := len(pg.Messages); n > 0 {
			after = pg.Messages[n-1].Seq
		}
		if !pg.HasMore {
			break
		}
	}
	return out, nil
}

// send sends messages read by read, then moves the person's read cursor
// past them, as the page does when it opens: they are shown.
func (f *channelFeed) send(ctx context.Context, w http.ResponseWriter, msgs []*channels.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	for _, m := range msgs {
		var b bytes.Buffer
		if err := f.p.pages["channels-channel"].ExecuteTemplate(&b, "channels-message", messageView{Message: m, New: m.From != f.who.UserID}); err != nil {
			return err
		}
		ev := sse.Event{ID: strconv.FormatInt(m.Seq, 10), Name: "post", Data: postEvent{Seq: m.Seq, ID: m.ID, HTML: b.String()}}
		if err := sse.Write(w, ev); err != nil {
			return err
		}
	}
	if err := sse.Flush(w); err != nil {
		return err
	}
	f.after = msgs[len(msgs)-1].Seq
	return f.p.channels.MarkRead(ctx, f.who, f.name, f.after)
}
