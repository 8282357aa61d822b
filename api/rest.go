package api

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/channels"
	"github.com/ctalk/ctalk/internal/reqctx"
	"github.com/ctalk/ctalk/internal/sse"
	"github.com/ctalk/ctalk/links"
	"github.com/ctalk/ctalk/tools"
	"github.com/ctalk/ctalk/wait"
)

// openAPI describes the REST mirror; a test checks it against the routes.
//
//go:embed openapi.json
var openAPI []byte

// registerREST adds the REST mirror of the channel tools under /api/v1, for
// scripts, bots and the web app, with the same bearer tokens as /mcp.
func (s *Server) registerREST(e *echo.Echo) {
	e.GET("/api/v1/openapi.json", s.restOpenAPI)
	identified := []echo.MiddlewareFunc{s.bearer, s.requireSession}
	e.GET("/api/v1/channels", s.restListChannels, identified...)
	e.GET("/api/v1/channels/:channel/messages", s.restGetMessages, identified...)
	e.POST("/api/v1/channels/:channel/messages", s.restPostMessage, identified...)
	e.GET("/api/v1/wait", s.restWait, identified...)
	e.GET("/api/v1/channels/:channel/events", s.restEvents, identified...)
}

func (s *Server) restOpenAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openAPI)
}

// requireSession refuses a REST call without a valid bearer token; the
// bearer middleware has already checked one that was sent.
func (s *Server) requireSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		if err := reqctx.AuthError(ctx); err != nil {
			return err
		}
		sess := reqctx.Session(ctx)
		if sess == nil {
			return s.unauthorized(c, "send the header \"Authorization: Bearer <token>\" with a login or personal token")
		}
		s.presence.Seen(sess.Caller())
		return next(c)
	}
}

func restCaller(c echo.Context) ctalk.Caller {
	return reqctx.Session(c.Request().Context()).Caller()
}

// hold returns ctx, ended once the credential the request was identified
// with is revoked (see wait.Broker.Hold): for a stream, whose waits come
// one after another.
func (s *Server) hold(ctx context.Context) (context.Context, func()) {
	return s.inbox.Broker().Hold(ctx, reqctx.Credential(ctx))
}

// queryNumber reads an optional number from the query string.
func queryNumber(c echo.Context, name string) (*float64, error) {
	v := c.QueryParam(name)
	if v == "" {
		return nil, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return nil, ctalk.Errorf(ctalk.EInvalid, "%s must be a number, not %q", name, ctalk.Shorten(v, 40))
	}
	return &f, nil
}

// queryInt reads an optional whole number from the query string.
func queryInt(c echo.Context, name string, def, lo, hi int) (int, error) {
	v, err := queryNumber(c, name)
	if err != nil {
		return 0, err
	}
	return tools.IntArg(name, v, def, lo, hi)
}

func (s *Server) restListChannels(c echo.Context) error {
	chs, err := s.channels.List(c.Request().Context(), restCaller(c), c.QueryParam("include_archived") == "true")
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, tools.ListChannelsResult{Channels: chs})
}

func (s *Server) restGetMessages(c echo.Context) error {
	after, err := queryInt(c, "after", 0, 0, tools.MaxSeq)
	if err != nil {
		return err
	}
	latest, err := queryInt(c, "latest", 0, 1, tools.MaxMessages)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", tools.DefaultMessages, 1, tools.MaxMessages)
	if err != nil {
		return err
	}
	p, err := s.channels.Messages(c.Request().Context(), restCaller(c), c.Param("channel"), channels.Read{After: int64(after), Latest: latest, Limit: limit})
	if err != nil {
		return err
	}
	res := tools.MessagesResult{Messages: p.Messages, HasMore: p.HasMore}
	if p.HasMore {
		res.NextAfter = p.Messages[len(p.Messages)-1].Seq
	}
	return c.JSON(http.StatusOK, res)
}

// restPost is the body of a post; the channel comes from the path.
type restPost struct {
	Text     string `json:"text"`
	ReplyTo  string `json:"reply_to"`
	Type     string `json:"type"`
	Priority string `json:"priority"`
}

func (s *Server) restPostMessage(c echo.Context) error {
	b, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "the request body could not be read")
	}
	var in restPost
	if err := tools.DecodeArgs(json.RawMessage(b), &in, []string{"text"}); err != nil {
		return err
	}
	got, err := s.channels.AgentPost(c.Request().Context(), restCaller(c), channels.Post{Channel: c.Param("channel"), Text: in.Text, ReplyTo: in.ReplyTo, Type: in.Type, Priority: in.Priority})
	if err != nil {
		return err
	}
	if got.Held != nil {
		return c.JSON(http.StatusAccepted, restHeld{HeldPost: got.Held, ApprovalURL: links.HeldPost(s.publicURL(c.Request()), got.Held.ID)})
	}
	return c.JSON(http.StatusCreated, got.Message)
}

// restHeld is a post held for its person's approval (channel_post_mode
// human): nothing is in the channel yet.
type restHeld struct {
	*channels.HeldPost
	ApprovalURL string `json:"approval_url"`
}

// MaxRESTPerUser caps, per user and server, the REST event streams
// (/api/v1/channels/{c}/events) and, apart, the REST long-polls
// (/api/v1/wait) held open at once; one more is answered 429 with
// Retry-After restRetryAfter.
const MaxRESTPerUser = 10

// restRetryAfter is the Retry-After of a stream or long-poll over the cap:
// a guess, since a place frees when the caller closes one.
const restRetryAfter = 10 * time.Second

// restPlace takes a place of the caller's in l, or says what to do.
func restPlace(l *wait.Limit, who ctalk.Caller, what string) (release func(), err error) {
	release, ok := l.Take(who.OrgID, who.UserID)
	if !ok {
		return nil, &ctalk.Error{Code: ctalk.ERateLimited, RetryAfter: restRetryAfter,
			Message: fmt.Sprintf("you hold %d %s open on this server, the most one user may; close one, then retry", l.Max(), what)}
	}
	return release, nil
}

func (s *Server) restWait(c echo.Context) error {
	v, err := queryNumber(c, "timeout_s")
	if err != nil {
		return err
	}
	timeout, err := tools.WaitArg(v)
	if err != nil {
		return err
	}
	var after *int64
	if c.QueryParam("after") != "" {
		n, err := queryInt(c, "after", 0, 0, tools.MaxSeq)
		if err != nil {
			return err
		}
		a := int64(n)
		after = &a
	}
	who := restCaller(c)
	release, err := restPlace(s.restPolls, who, "long-polls (/api/v1/wait)")
	if err != nil {
		return err
	}
	defer release()
	done := s.presence.Waiting(who)
	ctx := c.Request().Context()
	d, err := s.channels.Wait(ctx, who, c.QueryParam("channel"), after, wait.Options{Timeout: timeout, Stop: s.stop, Credential: reqctx.Credential(ctx)})
	done()
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, tools.WaitMessageResult{Delivery: d, TimedOut: len(d.Messages) == 0})
}

// restEvents streams a channel's messages as Server-Sent Events, each with
// its seq as the event id, so that a client that reconnects with
// Last-Event-ID resumes after the last message it got. Without it (or
// ?after=), the stream starts with the next message posted. Between
// messages it holds no database connection.
func (s *Server) restEvents(c echo.Context) error {
	ctx := c.Request().Context()
	who := restCaller(c)
	ch, err := s.channels.Channel(ctx, who, c.Param("channel"))
	if err != nil {
		return err
	}
	if !ch.IsMember {
		return ctalk.Errorf(ctalk.EForbidden, "you are not a member of #%s; join it first", ch.Name)
	}
	after, err := streamAfter(c, ch.LastSeq)
	if err != nil {
		return err
	}
	release, err := restPlace(s.restStreams, who, "channel event streams (/api/v1/channels/{channel}/events)")
	if err != nil {
		return err
	}
	defer release()
	w := c.Response()
	if err := sse.Start(w); err != nil {
		return nil
	}
	// A bot reading the stream is waiting for messages, as an agent in
	// wait_for_message is.
	defer s.presence.Waiting(who)()
	// Held for the whole stream, so that a revocation between two waits
	// ends it too.
	ctx, unhold := s.hold(ctx)
	defer unhold()
	s.streamMessages(ctx, w, who, ch.Name, after)
	return nil
}

// streamAfter is the seq a channel's event stream resumes after: the
// request's Last-Event-ID, else its after parameter, else last, the
// channel's latest.
func streamAfter(c echo.Context, last int64) (int64, error) {
	for _, v := range []string{c.Request().Header.Get("Last-Event-ID"), c.QueryParam("after")} {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, ctalk.Errorf(ctalk.EInvalid, "Last-Event-ID and after must be the seq of a message, not %q", ctalk.Shorten(v, 40))
		}
		return n, nil
	}
	return last, nil
}

// streamMessages writes channel's messages after seq to the started stream
// w as they come, until the server drains, the client goes or ctx's
// credential is revoked; an error becomes the stream's last event.
func (s *Server) streamMessages(ctx context.Context, w http.ResponseWriter, who ctalk.Caller, channel string, after int64) {
	for !s.draining() {
		d, err := s.channels.Wait(ctx, who, channel, &after, wait.Options{Timeout: sse.KeepAlive, Stop: s.stop})
		if err := wait.Refused(ctx); err != nil {
			sse.Fail(w, err)
			return
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if ctalk.ErrorCode(err) == ctalk.EInternal {
				s.log.Error("event stream failed", "request_id", requestID(ctx), "error", err)
			}
			// Headers are sent: the error becomes the stream's last event.
			sse.Fail(w, err)
			return
		}
		for _, m := range d.Messages {
			sse.Write(w, sse.Event{ID: strconv.FormatInt(m.Seq, 10), Name: "message", Data: m})
			after = m.Seq
		}
		if len(d.Messages) == 0 {
			err = sse.Ping(w)
		} else {
			err = sse.Flush(w)
		}
		if err != nil {
			return
		}
	}
}
