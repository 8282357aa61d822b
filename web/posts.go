package web

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/channels"
)

// mountPosts adds the page of the channel posts a person's agent made while
// the org holds agents' posts for approval (channel_post_mode human), with
// the approve, edit and reject actions. Each action is the author's own, in
// their session, with the form's CSRF token: another member's post is "not
// found", and a link alone changes nothing.
func (p *Pages) mountPosts(r routes) {
	r.GET("/inbox/posts", p.postsPage)
	// Each decision needs the org's approval factor (approvalFactor).
	d := r.with(p.approvalFactor)
	d.POST("/inbox/posts/:post_id/approve", p.postAction("approve", p.approvePost))
	d.POST("/inbox/posts/:post_id/edit", p.postAction("edit", p.editPost))
	d.POST("/inbox/posts/:post_id/reject", p.postAction("reject", p.rejectPost))
}

// postForms names each form of a held post in the audit log and in the
// flash after it succeeds.
var postForms = map[string]struct{ audit, done string }{
	"approve": {"web:approve_post", "post-approved"},
	"edit":    {"web:edit_post", "post-edited"},
	"reject":  {"web:reject_post", "post-rejected"},
}

var postsFlash = map[string]string{
	"post-approved": "Approved. The post is in its channel, marked as posted by your agent and approved by you.",
	"post-edited":   "Posted. Your text is in the channel, as yours.",
	"post-rejected": "Rejected. Nothing was posted; your agent reads your note.",
}

// postsData is the page of held posts, with the refusal of one form.
type postsData struct {
	CSRF  string
	Posts []*channels.HeldPost
	Fail  *postFail
	// Above is a refusal about a post the list does not show.
	Above string
}

// postFail is a refused action on a held post: which post and form, why,
// and what was typed.
type postFail struct {
	ID, Form, Message, Text string
}

// FailOn is the refusal of form on post id, or empty.
func (d postsData) FailOn(id, form string) string {
	if d.Fail == nil || d.Fail.ID != id || d.Fail.Form != form {
		return ""
	}
	return d.Fail.Message
}

// Neighbour is the post the page returns to once post id is decided (and
// so leaves the list).
func (d postsData) Neighbour(id string) string {
	ids := make([]string, len(d.Posts))
	pos := -1
	for i, h := range d.Posts {
		ids[i] = h.ID
		if h.ID == id {
			pos = i
		}
	}
	if pos < 0 {
		return ""
	}
	return neighbour(ids, pos)
}

// Kept is what was typed in form on post id before it was refused, else
// fallback.
func (d postsData) Kept(id, form, fallback string) string {
	if d.Fail == nil || d.Fail.ID != id || d.Fail.Form != form {
		return fallback
	}
	return d.Fail.Text
}

func (p *Pages) postsPage(c echo.Context) error {
	return p.showPosts(c, http.StatusOK, nil)
}

// showPosts renders the person's held posts, with fail next to its form,
// or above the list when its post is not listed (decided meanwhile, or not
// the person's).
func (p *Pages) showPosts(c echo.Context, status int, fail *postFail) error {
	posts, err := p.channels.HeldPosts(c.Request().Context(), caller(c))
	if err != nil {
		return err
	}
	csrf := csrfToken(c)
	d := postsData{CSRF: csrf, Posts: posts, Fail: fail}
	if fail != nil && !heldIn(posts, fail.ID) {
		d.Above, d.Fail = fail.Message, nil
	}
	return p.app(c, status, "posts", &page{Section: "inbox", Title: "Channel posts waiting for you",
		Data: d, Flash: flash(c, postsFlash)})
}

func heldIn(posts []*channels.HeldPost, id string) bool {
	for _, h := range posts {
		if h.ID == id {
			return true
		}
	}
	return false
}

// postAct is one decision on held post id: it returns what the person
// typed, kept when the decision is refused.
type postAct func(ctx context.Context, c echo.Context, id string) (typed string, err error)

// postAction runs act for form, records it in the audit log (never what was
// typed), and redirects to the list after success, at the post after the
// decided one (or before it, when it was the last); a refusal shows the list
// again with the message next to the form, with the status of its code
// (404 for a post that is not the person's).
func (p *Pages) postAction(form string, act postAct) echo.HandlerFunc {
	return func(c echo.Context) error {
		start, id := time.Now(), strings.TrimSpace(c.Param("post_id"))
		kept, err := act(c.Request().Context(), c, id)
		p.recordAction(c, postForms[form].audit, start, err, id)
		if err == nil {
			return done(c, at("/inbox/posts", c.FormValue(nextItemField)), postForms[form].done)
		}
		code := ctalk.ErrorCode(err)
		if code == ctalk.EInternal || code == ctalk.EUnavailable {
			return err
		}
		return p.showPosts(c, ctalk.HTTPStatus(code), &postFail{ID: id, Form: form, Message: ctalk.ErrorMessage(err), Text: kept})
	}
}

func (p *Pages) approvePost(ctx context.Context, c echo.Context, id string) (string, error) {
	_, err := p.channels.ApprovePost(ctx, caller(c), id)
	return "", err
}

func (p *Pages) editPost(ctx context.Context, c echo.Context, id string) (string, error) {
	text := typed(c, "text")
	_, err := p.channels.EditPost(ctx, caller(c), id, text)
	return text, err
}

func (p *Pages) rejectPost(ctx context.Context, c echo.Context, id string) (string, error) {
	note := typed(c, "note")
	_, err := p.channels.RejectPost(ctx, caller(c), id, note)
	return note, err
}

// heldCount is how many channel posts wait for who's approval, for the link
// from the inbox and the live counts.
func (p *Pages) heldCount(ctx context.Context, who ctalk.Caller) (int, error) {
	posts, err := p.channels.HeldPosts(ctx, who)
	return len(posts), err
}
