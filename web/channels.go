package web

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/channels"
)

// mountChannels adds the routes of the app's channels section: my channels
// and the public ones I can join, creating one, searching them; a channel's
// messages and members, posting, joining, leaving and its topic. The
// channel page's live updates come through /events (see channelFeed).
func (p *Pages) mountChannels(r routes) {
	r.GET("/channels", p.channelsPage)
	r.POST("/channels", p.createChannel)
	r.GET("/channels/:name", p.channelPage)
	r.POST("/channels/:name/messages", p.postMessage)
	r.POST("/channels/:name/join", p.joinChannel)
	r.POST("/channels/:name/leave", p.leaveChannel)
	r.POST("/channels/:name/topic", p.channelTopic)
}

// Sizes of the channels section's lists.
const (
	// channelPageSize is how many messages a channel page shows.
	channelPageSize = 50
	// channelSearchSize is how many search results the list shows.
	channelSearchSize = 20
)

// channelsFlash says what each action of the section did, by done key.
var channelsFlash = map[string]string{
	"created": "The channel is created, with you as its first member.",
	"posted":  "Your message is posted. Every member sees it, and their agents can read it.",
	"joined":  "You joined the channel. Earlier messages do not count as unread.",
	"left":    "You left the channel.",
	"topic":   "The topic is saved.",
}

// caller is the person signed in, as the channels service knows them.
func caller(c echo.Context) ctalk.Caller { return me(c).Caller() }

// createForm is the form that creates a channel, as typed.
type createForm struct {
	Name, Topic string
	Private     bool
}

// channelsData is the channels list page.
type channelsData struct {
	// Mine are the channels I am a member of, Open the public ones I am not.
	Mine, Open []*channels.Channel
	// Query is the search typed, Results what it found among my channels.
	Query       string
	Searched    bool
	Results     []*channels.Message
	SearchError string
	Form        createForm
	// Errors are the create form's, by field (name, topic, form).
	Errors   map[string]string
	MaxTopic int
}

func (p *Pages) channelsPage(c echo.Context) error {
	return p.renderChannels(c, http.StatusOK, createForm{}, nil)
}

// renderChannels shows my channels, the public ones I can join, the search
// the request asks for, and the create form with its errors, if any.
func (p *Pages) renderChannels(c echo.Context, status int, form createForm, errs map[string]string) error {
	ctx, who := c.Request().Context(), caller(c)
	all, err := p.channels.List(ctx, who, false)
	if err != nil {
		return err
	}
	data := channelsData{Form: form, Errors: errs, MaxTopic: channels.MaxTopicLen, Query: c.QueryParam("q")}
	for _, ch := range all {
		if ch.IsMember {
			data.Mine = append(data.Mine, ch)
		} else {
			data.Open = append(data.Open, ch)
		}
	}
	if strings.TrimSpace(data.Query) != "" {
		data.Searched = true
		data.Results, err = p.channels.Search(ctx, who, channels.Search{Query: data.Query, Limit: channelSearchSize})
		if code := ctalk.ErrorCode(err); code == ctalk.EInvalid {
			data.SearchError = ctalk.ErrorMessage(fieldLabelled(err, "query", "The search"))
			status = http.StatusBadRequest
		} else if err != nil {
			return err
		}
	}
	return p.app(c, status, "channels", &page{Section: "channels", Title: "Channels", Flash: flash(c, channelsFlash), Data: data})
}

// createChannel creates a channel from the form, with the person signed in
// as its first member.
func (p *Pages) createChannel(c echo.Context) error {
	start := time.Now()
	visibility := c.FormValue("visibility")
	form := createForm{Name: c.FormValue("name"), Topic: c.FormValue("topic"), Private: visibility == "private"}
	if visibility != "" && visibility != "public" && visibility != "private" {
		// A value the form does not offer is refused, not taken for public:
		// a channel meant to be hidden must never be created open.
		err := ctalk.Errorf(ctalk.EInvalid, "Who can see it must be public or private, not %q: choose one of the two and create the channel again.", ctalk.Shorten(visibility, 40))
		p.recordAction(c, "web:create_channel", start, err)
		return p.renderChannels(c, http.StatusBadRequest, form, map[string]string{"form": ctalk.ErrorMessage(err)})
	}
	ch, err := p.channels.Create(c.Request().Context(), caller(c), channels.NewChannel{Name: form.Name, Private: form.Private, Topic: form.Topic})
	name := ""
	if ch != nil {
		name = ch.Name
	}
	p.recordAction(c, "web:create_channel", start, err, name)
	if err == nil {
		return done(c, "/channels/"+name, "created")
	}
	code := ctalk.ErrorCode(err)
	if code == ctalk.EInternal {
		return err
	}
	field, msg := "form", ctalk.ErrorMessage(err)
	_, badName := channels.ParseName(form.Name)
	switch {
	case badName != nil:
		field, msg = "name", ctalk.ErrorMessage(fieldLabelled(badName, "channel", "The name"))
	case code == ctalk.EConflict:
		field, msg = "name", "A channel with this name exists already in your organization: join it from the list, or pick another name."
	case code == ctalk.EInvalid:
		field, msg = "topic", ctalk.ErrorMessage(fieldLabelled(err, "topic", "The topic"))
	}
	return p.renderChannels(c, ctalk.HTTPStatus(code), form, map[string]string{field: msg})
}

// postForm is the form that posts a message, as typed.
type postForm struct {
	Text, Type, Priority, ReplyTo string
}

// messageView is a message as a channel page shows it.
type messageView struct {
	*channels.Message
	// New marks a message I had not read when the page opened, or that
	// arrived while it was open.
	New bool
}

// channelData is a channel's page.
type channelData struct {
	Channel *channels.Channel
	Members []*channels.Member
	// Messages are a page of the channel's messages, oldest first; Earlier
	// and Later link to the pages around it; Latest says that it ends with
	// the newest message, so that live updates add to it after After.
	Messages       []messageView
	Earlier, Later string
	Latest         bool
	After          int64
	// Replying is the message the post form replies to, when it is on the
	// page.
	Replying  *channels.Message
	CanManage bool
	Form      postForm
	// Errors are the forms' errors, by field (text, type, priority,
	// reply_to, post, topic, join, leave).
	Errors           map[string]string
	MaxText, MaxType int
	MaxTopic         int
	Priorities       []string
}

func (p *Pages) channelPage(c echo.Context) error {
	return p.renderChannel(c, http.StatusOK, postForm{ReplyTo: c.QueryParam("reply_to"), Priority: channels.PriorityNormal}, nil)
}

// renderChannel shows the channel of the path: its members, and for a
// member a page of its messages, which moves their read cursor as
// get_messages does.
func (p *Pages) renderChannel(c echo.Context, status int, form postForm, errs map[string]string) error {
	ctx, who := c.Request().Context(), caller(c)
	ch, members, err := p.channels.Get(ctx, who, c.Param("name"))
	if err != nil {
		return p.channelRefused(c, err)
	}
	data := &channelData{Channel: ch, Members: members, Form: form, Errors: errs,
		CanManage: who.Admin || ch.CreatedBy == who.UserID,
		MaxText:   channels.MaxTextLen, MaxType: channels.MaxTypeLen, MaxTopic: channels.MaxTopicLen,
		Priorities: []string{channels.PriorityNormal, channels.PriorityHigh, channels.PriorityUrgent}}
	if ch.IsMember {
		if err := p.channelMessages(c, who, data); err != nil {
			return err
		}
	}
	title := "#" + ch.Name
	return p.app(c, status, "channels-channel", &page{Section: "channels", Title: title, Flash: flash(c, channelsFlash), Data: data})
}

// channelMessages reads the page of messages the request asks for: the
// newest by default, the page before ?before= (a message number), or the
// page around ?message= (a message id, as search results link to).
func (p *Pages) channelMessages(c echo.Context, who ctalk.Caller, data *channelData) error {
	ctx, ch := c.Request().Context(), data.Channel
	before, _ := strconv.ParseInt(c.QueryParam("before"), 10, 64)
	if id := c.QueryParam("message"); id != "" {
		seq, err := p.channels.Locate(ctx, who, ch.Name, id)
		if err != nil && ctalk.ErrorCode(err) != ctalk.ENotFound {
			return err
		}
		if err == nil {
			before = seq + channelPageSize/2
		}
	}
	read := channels.Read{Latest: channelPageSize}
	if before > 0 && before <= ch.LastSeq {
		before = max(before, 2)
		read = channels.Read{After: max(0, before-1-channelPageSize), Limit: int(min(channelPageSize, before-1))}
	}
	// Messages after the read cursor were unread when the page opened.
	readTo := ch.LastSeq - ch.UnreadCount
	pg, err := p.channels.Messages(ctx, who, ch.Name, read)
	if err != nil {
		return err
	}
	data.After = ch.LastSeq
	for _, m := range pg.Messages {
		data.Messages = append(data.Messages, messageView{Message: m, New: m.Seq > readTo && m.From != who.UserID})
		data.After = m.Seq
		if m.ID == data.Form.ReplyTo {
			data.Replying = m
		}
	}
	data.Latest = data.After >= ch.LastSeq
	base := "/channels/" + ch.Name
	if n := len(pg.Messages); n > 0 && pg.Messages[0].Seq > 1 {
		data.Earlier = base + "?" + url.Values{"before": {strconv.FormatInt(pg.Messages[0].Seq, 10)}}.Encode()
	}
	if !data.Latest {
		data.Later = base
		if next := data.After + 1 + channelPageSize; next <= ch.LastSeq {
			data.Later += "?" + url.Values{"before": {strconv.FormatInt(next, 10)}}.Encode()
		}
	}
	return nil
}

// channelRefused answers a channel the person may not see, or a refused
// action on one, in words.
func (p *Pages) channelRefused(c echo.Context, err error) error {
	code := ctalk.ErrorCode(err)
	switch code {
	case ctalk.EInternal:
		return err
	case ctalk.ENotFound, ctalk.EInvalid:
		return p.peopleMessage(c, http.StatusNotFound, "channels", "Channel not found",
			"There is no such channel in your organization, or it is private and you are not a member. Your channels, and the public ones you can join, are listed under Channels.")
	}
	return p.peopleMessage(c, ctalk.HTTPStatus(code), "channels", "Not done", ctalk.ErrorMessage(err))
}

// postMessage posts the person's own message (not labelled as an agent's)
// to the channel of the path.
func (p *Pages) postMessage(c echo.Context) error {
	start := time.Now()
	form := postForm{Text: c.FormValue("text"), Type: c.FormValue("type"), Priority: c.FormValue("priority"), ReplyTo: c.FormValue("reply_to")}
	m, err := p.channels.Post(c.Request().Context(), caller(c), channels.Post{Channel: c.Param("name"),
		Text: form.Text, Type: form.Type, Priority: form.Priority, ReplyTo: form.ReplyTo})
	var ids []string
	if m != nil {
		ids = []string{m.Channel, m.ID}
	}
	p.recordAction(c, "web:post_message", start, err, ids...)
	if err == nil {
		return c.Redirect(http.StatusSeeOther, "/channels/"+m.Channel+"?"+url.Values{"done": {"posted"}}.Encode()+"#"+m.ID)
	}
	code := ctalk.ErrorCode(err)
	if code == ctalk.EInternal || code == ctalk.ENotFound && form.ReplyTo == "" {
		return p.channelRefused(c, err)
	}
	field := "post"
	switch {
	case code == ctalk.EForbidden:
		return p.renderChannel(c, http.StatusForbidden, form, map[string]string{"join": "Only members post here: join the channel first, then post."})
	case code == ctalk.ENotFound:
		field = "reply_to"
	case code == ctalk.EInvalid && strings.HasPrefix(ctalk.ErrorMessage(err), "priority "):
		field = "priority"
	case code == ctalk.EInvalid && strings.HasPrefix(ctalk.ErrorMessage(err), "type "):
		field = "type"
	case code == ctalk.EInvalid:
		field = "text"
	}
	msg := ctalk.ErrorMessage(fieldLabelled(fieldLabelled(fieldLabelled(err, "text", "The message"), "type", "The label"), "priority", "The priority"))
	if field == "reply_to" {
		msg = "The message you reply to is not in this channel. Reply from the message itself, or post without replying."
		form.ReplyTo = ""
	}
	return p.renderChannel(c, ctalk.HTTPStatus(code), form, map[string]string{field: msg})
}

// joinChannel makes the person a member of the public channel of the path.
func (p *Pages) joinChannel(c echo.Context) error {
	start := time.Now()
	ch, err := p.channels.Join(c.Request().Context(), caller(c), c.Param("name"))
	p.recordAction(c, "web:join_channel", start, err, c.Param("name"))
	if err != nil {
		return p.channelActionFailed(c, "join", err)
	}
	return done(c, "/channels/"+ch.Name, "joined")
}

// leaveChannel ends the person's membership of the channel of the path.
func (p *Pages) leaveChannel(c echo.Context) error {
	start := time.Now()
	_, err := p.channels.Leave(c.Request().Context(), caller(c), c.Param("name"))
	p.recordAction(c, "web:leave_channel", start, err, c.Param("name"))
	if err != nil {
		return p.channelActionFailed(c, "leave", err)
	}
	return done(c, "/channels", "left")
}

// channelTopic sets the topic of the channel of the path, for its creator
// and the org's admins.
func (p *Pages) channelTopic(c echo.Context) error {
	start := time.Now()
	topic := c.FormValue("topic")
	ch, err := p.channels.Update(c.Request().Context(), caller(c), c.Param("name"), &topic, nil)
	p.recordAction(c, "web:update_channel", start, err, c.Param("name"))
	if err != nil {
		if ctalk.ErrorCode(err) == ctalk.EInvalid {
			err = fieldLabelled(err, "topic", "The topic")
		}
		return p.channelActionFailed(c, "topic", err)
	}
	return done(c, "/channels/"+ch.Name, "topic")
}

// channelActionFailed shows the channel again with why an action on it was
// refused next to its form; a channel the person cannot see is "not found".
func (p *Pages) channelActionFailed(c echo.Context, field string, err error) error {
	code := ctalk.ErrorCode(err)
	if code == ctalk.EInternal || code == ctalk.ENotFound || code == ctalk.EInvalid && field != "topic" {
		return p.channelRefused(c, err)
	}
	return p.renderChannel(c, ctalk.HTTPStatus(code), postForm{Priority: channels.PriorityNormal}, map[string]string{field: ctalk.ErrorMessage(err)})
}
