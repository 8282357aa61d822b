package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/knowledge"
	"github.com/ctalk/ctalk/orgs"
)

// mountAsked adds the routes of the app's asked section: my questions, their
// status and answers, asking a question myself, and withdrawing one.
func (p *Pages) mountAsked(r routes) {
	r.GET("/asked", p.askedPage)
	r.POST("/asked", p.askSubmit)
	r.POST("/asked/:id/withdraw", p.withdrawSubmit)
}

// askedPageSize is how many of my questions a page of /asked shows.
const askedPageSize = 20

// askedFlash is what the asked section's actions did, by done key.
var askedFlash = map[string]string{
	"asked":     "Your question is sent. Their agent shows it to them; the answer appears here once they approve it.",
	"withdrawn": "The question is withdrawn. Their agent is told, if it had already shown it to them.",
	// route.go's
	"info-provided": "Sent. The question is back with them, with your reply.",
	"followed-up":   "Your follow-up is sent, on the same thread. The answer appears here once they approve it.",
}

// askForm is the form that asks a question, as typed.
type askForm struct {
	To, Text string
	// Key makes a second submission of the same form (a double click, a
	// retry after a lost response) return the first question.
	Key string
	// Earlier and Away say why the question was not asked yet, as
	// ask_person says it: shared answers that may answer it (other
	// people's words), or the recipient away (their note is their words).
	// The form then offers to ask anyway.
	Earlier []*knowledge.Answer
	Away    *orgs.Away
}

// askedData is the asked page.
type askedData struct {
	Items []*inbox.AskedItem
	// Cursor is this page's position (empty for the newest), Next the
	// next page's.
	Cursor, Next string
	// People are whom I may ask: the org's members but me.
	People []*orgs.User
	Form   askForm
	// Errors are the ask form's, by field (to, text, form); ItemErrors a
	// withdrawal's, by question id.
	Errors     map[string]string
	ItemErrors map[string]string
	MaxLen     int
}

func (p *Pages) askedPage(c echo.Context) error {
	form := askForm{To: c.QueryParam("to"), Key: newAskKey()}
	return p.renderAsked(c, http.StatusOK, c.QueryParam("cursor"), form, nil, nil)
}

// renderAsked shows a page of my questions after cursor, with the ask form
// and the errors of the last action, if any.
func (p *Pages) renderAsked(c echo.Context, status int, cursor string, form askForm, errs, itemErrs map[string]string) error {
	ctx, m := c.Request().Context(), me(c)
	items, next, err := p.inbox.Asked(ctx, m.Caller(), askedPageSize, cursor)
	if ctalk.ErrorCode(err) == ctalk.EInvalid {
		// A cursor of an old link: start again from the newest.
		cursor = ""
		items, next, err = p.inbox.Asked(ctx, m.Caller(), askedPageSize, "")
	}
	if err != nil {
		return err
	}
	users, err := p.orgs.Users(ctx, m.OrgID)
	if err != nil {
		return err
	}
	users = slices.DeleteFunc(users, func(u *orgs.User) bool { return u.ID == m.UserID })
	data := askedData{Items: items, Cursor: cursor, Next: next, People: users, Form: form,
		Errors: errs, ItemErrors: itemErrs, MaxLen: inbox.MaxQuestionLen}
	return p.app(c, status, "asked", &page{Section: "asked", Title: "Asked", Flash: flash(c, askedFlash), Data: data})
}

// askSubmit asks a question from the web, under the rules of ask_person:
// it looks first, and a question that shared answers may answer, or to a
// person away, is not asked unless the person asks anyway (the form's
// ask_anyway button); a follow-up is asked at once.
func (p *Pages) askSubmit(c echo.Context) error {
	ctx, m := c.Request().Context(), me(c)
	form := askForm{To: strings.TrimSpace(c.FormValue("to")), Text: c.FormValue("text"), Key: c.FormValue("key")}
	if instead := strings.TrimSpace(c.FormValue("instead")); instead != "" {
		// The away person's delegate, asked instead: looked up anew.
		form.To = instead
	}
	followUp := strings.TrimSpace(c.FormValue("follow_up_of"))
	anyway := c.FormValue("ask_anyway") != "" || followUp != ""
	if form.Earlier = p.lookFirst(ctx, m, form, knowledge.LookUp{Anyway: anyway, FollowUp: followUp != ""}); len(form.Earlier) > 0 {
		return p.renderAsked(c, http.StatusOK, "", form, nil, nil)
	}
	_, err := p.inbox.Ask(ctx, m.Caller(), inbox.Ask{To: form.To, Text: form.Text, IdempotencyKey: form.Key, FollowUpOf: followUp, UnlessAway: !anyway})
	var away *inbox.AwayError
	if errors.As(err, &away) {
		form.Away = &away.Away
		return p.renderAsked(c, http.StatusOK, "", form, nil, nil)
	}
	if err == nil && followUp != "" {
		return done(c, "/asked", "followed-up")
	}
	if err == nil {
		return done(c, "/asked", "asked")
	}
	if ctalk.ErrorCode(err) == ctalk.EInternal {
		return err
	}
	field, msg := askError(m.UserID, form.To, err)
	if ctalk.ErrorCode(err) == ctalk.EConflict {
		// The form's key was spent on another question (the page was
		// reused after going back): this one needs a key of its own.
		form.Key = newAskKey()
	}
	return p.renderAsked(c, ctalk.HTTPStatus(ctalk.ErrorCode(err)), "", form, map[string]string{field: msg}, nil)
}

// lookFirst is the ask form's look-up, as ask_person's
// (knowledge.LookFirst): the shared answers that hold the question back;
// none when the look-up fails, which is logged and never stops the
// question.
func (p *Pages) lookFirst(ctx context.Context, m *auth.Session, form askForm, in knowledge.LookUp) []*knowledge.Answer {
	in.Question, in.Key = form.Text, form.Key
	found, err := p.knowledge.LookFirst(ctx, m.Caller(), in)
	if err != nil {
		p.cfg.Logger.Warn("shared answers not looked up before an ask", "error", err)
	}
	return found.Held
}

// askError says which field of the ask form err concerns, and what to do,
// in the words of the page.
func askError(me, to string, err error) (field, msg string) {
	code := ctalk.ErrorCode(err)
	_, badID := ctalk.ParseID("to_user_id", to)
	switch {
	case code == ctalk.ENotFound:
		return "to", "No one with that user id is in your organization; pick a person from the list."
	case code == ctalk.EInvalid && (badID != nil || to == me):
		if to == me {
			return "to", "You cannot ask yourself; pick a coworker from the list."
		}
		return "to", "Pick the person to ask from the list."
	case code == ctalk.EInvalid:
		return "text", ctalk.ErrorMessage(fieldLabelled(err, "question", "The question"))
	case code == ctalk.EConflict:
		return "form", "This form was already used to send another question, so this one was not sent. Check it and send it again."
	}
	return "form", ctalk.ErrorMessage(err)
}

// withdrawSubmit withdraws one of my pending questions.
func (p *Pages) withdrawSubmit(c echo.Context) error {
	m := me(c)
	id, cursor := c.Param("id"), c.FormValue("cursor")
	_, err := p.inbox.Withdraw(c.Request().Context(), m.Caller(), id)
	if err == nil {
		path := "/asked"
		if cursor != "" {
			path += "?" + url.Values{"cursor": {cursor}}.Encode()
		}
		return done(c, path, "withdrawn")
	}
	code := ctalk.ErrorCode(err)
	if code == ctalk.EInternal {
		return err
	}
	switch code {
	case ctalk.ENotFound:
		return p.peopleMessage(c, http.StatusNotFound, "asked", "Question not found",
			"That question is not one of yours, so nothing was withdrawn. Your questions are listed under Asked.")
	case ctalk.EForbidden:
		return p.peopleMessage(c, http.StatusForbidden, "asked", "Not your question",
			"Only the person who asked a question can withdraw it, so nothing was withdrawn. To refuse a question sent to you, decline it in your inbox.")
	}
	msg := ctalk.ErrorMessage(err)
	if code == ctalk.EConflict {
		msg = "This question is no longer waiting for an answer, so it cannot be withdrawn; its outcome is shown below."
	}
	return p.renderAsked(c, ctalk.HTTPStatus(code), cursor, askForm{Key: newAskKey()}, nil, map[string]string{id: msg})
}

// newAskKey returns a fresh idempotency key for one rendering of a form.
func newAskKey() string {
	var b [16]byte
	rand.Read(b[:])
	return "web-" + hex.EncodeToString(b[:])
}

// peopleMessage renders a refusal of the asked or people sections in the
// app's layout, so that the person keeps their navigation.
func (p *Pages) peopleMessage(c echo.Context, status int, section, title, msg string) error {
	return p.app(c, status, "message", &page{Section: section, Title: title, Message: msg})
}
