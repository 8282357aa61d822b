package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/inbox"
)

// mountInbox adds the routes of the app's inbox section: the questions
// waiting for me, the drafts my agent proposed, and the approve, edit,
// reject, decline and answer-myself actions. Every action is the
// recipient's, in their own session: a link, or another member's session,
// changes nothing.
func (p *Pages) mountInbox(r routes) {
	r.GET("/inbox", p.inboxPage)
	r.GET("/inbox/:message_id", p.questionPage)
	r.POST("/inbox/:message_id/approve", p.approveDraft)
	r.POST("/inbox/:message_id/edit", p.editDraft)
	r.POST("/inbox/:message_id/reject", p.rejectDraft)
	r.POST("/inbox/:message_id/decline", p.declineQuestion)
	r.POST("/inbox/:message_id/answer", p.answerQuestion)
}

// inboxPageSize is how many questions one page of the inbox shows.
const inboxPageSize = 20

// inboxFlash says what each inbox action did.
var inboxFlash = map[string]string{
	"approved": "Approved. Your agent may now send exactly this text.",
	"edited":   "Your version is approved. Your agent may now send exactly your text.",
	"rejected": "Rejected. Your agent reads your note and may not send this draft.",
	"declined": "Declined. The asker's agent receives your reason.",
	"answered": "Sent. The asker's agent receives your answer.",
}

// inboxList is the data of the inbox page.
type inboxList struct {
	Questions []questionView
	// Next is the cursor of the next page, if there is one.
	Next string
}

func (p *Pages) inboxPage(c echo.Context) error {
	m := me(c)
	rs, next, err := p.inbox.Pending(c.Request().Context(), m.OrgID, m.UserID, inboxPageSize, c.QueryParam("after"))
	if err != nil {
		return p.inboxMessage(c, "Inbox", err)
	}
	data := inboxList{Next: next}
	for _, r := range rs {
		data.Questions = append(data.Questions, newQuestionView(c, r, true, nil))
	}
	return p.inboxRender(c, http.StatusOK, "inbox", "Inbox", data)
}

func (p *Pages) questionPage(c echo.Context) error {
	return p.showQuestion(c, http.StatusOK, nil)
}

// showQuestion renders the page of the question in the path, with fail
// next to the form it is about.
func (p *Pages) showQuestion(c echo.Context, status int, fail *formError) error {
	m := me(c)
	r, err := p.inbox.Review(c.Request().Context(), m.OrgID, m.UserID, c.Param("message_id"))
	if err != nil {
		return p.inboxMessage(c, "Question not found", err)
	}
	title := "Question from " + visibleText(r.Sender.Name)
	return p.inboxRender(c, status, "inbox-question", title, newQuestionView(c, r, false, fail))
}

func (p *Pages) approveDraft(c echo.Context) error {
	m := me(c)
	v, err := formVersion(c)
	if err == nil {
		_, err = p.inbox.Approve(c.Request().Context(), m.OrgID, m.UserID, c.Param("message_id"), v)
	}
	return p.afterAction(c, &formError{Form: "approve"}, err, "approved")
}

func (p *Pages) editDraft(c echo.Context) error {
	m := me(c)
	text := typed(c, "text")
	v, err := formVersion(c)
	if err == nil {
		_, err = p.inbox.Edit(c.Request().Context(), m.OrgID, m.UserID, c.Param("message_id"), v, text)
	}
	return p.afterAction(c, &formError{Form: "edit", Text: text}, err, "edited")
}

func (p *Pages) rejectDraft(c echo.Context) error {
	m := me(c)
	note := typed(c, "note")
	v, err := formVersion(c)
	if err == nil {
		_, err = p.inbox.Reject(c.Request().Context(), m.OrgID, m.UserID, c.Param("message_id"), v, note)
	}
	return p.afterAction(c, &formError{Form: "reject", Text: note}, err, "rejected")
}

func (p *Pages) declineQuestion(c echo.Context) error {
	m := me(c)
	reason := typed(c, "reason")
	_, err := p.inbox.Decline(c.Request().Context(), m.OrgID, m.UserID, c.Param("message_id"), reason)
	return p.afterAction(c, &formError{Form: "decline", Text: reason}, err, "declined")
}

func (p *Pages) answerQuestion(c echo.Context) error {
	m := me(c)
	text := typed(c, "text")
	_, err := p.inbox.AnswerDirectly(c.Request().Context(), m.OrgID, m.UserID, c.Param("message_id"), text)
	return p.afterAction(c, &formError{Form: "answer", Text: text}, err, "answered")
}

// afterAction redirects after a successful action to the page the form
// came from (post/redirect/get), saying what happened; after a refused one
// it shows the question again with the refusal next to its form and what
// the person typed kept. Internal errors go to the server's handler.
func (p *Pages) afterAction(c echo.Context, fail *formError, err error, what string) error {
	if err == nil {
		back := "/inbox/" + c.Param("message_id")
		if c.FormValue("back") == "/inbox" {
			back = "/inbox"
		}
		return done(c, back, what)
	}
	code := ctalk.ErrorCode(err)
	if code == ctalk.EInternal || code == ctalk.EUnavailable {
		return err
	}
	fail.Message = ctalk.ErrorMessage(err)
	return p.showQuestion(c, ctalk.HTTPStatus(code), fail)
}

// formVersion is the draft version a form names.
func formVersion(c echo.Context) (int, error) {
	v, err := strconv.Atoi(strings.TrimSpace(c.FormValue("version")))
	if err != nil {
		return 0, ctalk.Errorf(ctalk.EInvalid, "the form names no draft version; reload the page and try again")
	}
	return v, nil
}

// typed is what the person typed in a text area, with the browser's CRLF
// line breaks made plain, so that what their agent sends is what they
// typed.
func typed(c echo.Context, name string) string {
	return strings.ReplaceAll(c.FormValue(name), "\r\n", "\n")
}

// inboxRender renders a page of the inbox section with the waiting count
// and the flash of the last action.
func (p *Pages) inboxRender(c echo.Context, status int, name, title string, data any) error {
	m := me(c)
	n, err := p.inbox.Waiting(c.Request().Context(), m.OrgID, m.UserID)
	if err != nil {
		return err
	}
	return p.render(c, status, name, &page{Me: m, Section: "inbox", Title: title, Waiting: n, Data: data,
		Flash: flash(c, inboxFlash)})
}

// inboxMessage renders what went wrong in words, inside the app: a
// question that is not the person's is "not found", whoever asks.
func (p *Pages) inboxMessage(c echo.Context, title string, err error) error {
	code := ctalk.ErrorCode(err)
	if code == ctalk.EInternal || code == ctalk.EUnavailable {
		return err
	}
	m := me(c)
	n, werr := p.inbox.Waiting(c.Request().Context(), m.OrgID, m.UserID)
	if werr != nil {
		return werr
	}
	return p.render(c, ctalk.HTTPStatus(code), "message", &page{Me: m, Section: "inbox", Title: title, Waiting: n,
		Message: ctalk.ErrorMessage(err) + ". Your inbox lists the questions sent to you.", Next: "/inbox"})
}

func visibleText(s string) string { v, _ := ctalk.Visible(s); return v }

// formError is a refused action: which form, why, and what was typed.
type formError struct {
	// Form is approve, edit, reject, decline or answer.
	Form    string
	Message string
	Text    string
}

// questionView is one question as the inbox shows it.
type questionView struct {
	*inbox.Review
	CSRF string
	// Listed is true in the inbox's list, whose forms return there, and
	// false on the question's own page.
	Listed bool
	Newest *draftView
	Older  []draftView
	Fail   *formError
}

// draftView is a draft with its element id, the target of #v{version}
// on the question's page.
type draftView struct {
	*inbox.Draft
	Anchor string
}

func newQuestionView(c echo.Context, r *inbox.Review, listed bool, fail *formError) questionView {
	csrf, _ := c.Get("csrf").(string)
	v := questionView{Review: r, CSRF: csrf, Listed: listed, Fail: fail}
	for i, d := range r.Drafts {
		anchor := "v" + strconv.Itoa(d.Version)
		if listed {
			anchor = r.ID + "-" + anchor
		}
		if i == 0 {
			v.Newest = &draftView{Draft: d, Anchor: anchor}
			continue
		}
		v.Older = append(v.Older, draftView{Draft: d, Anchor: anchor})
	}
	return v
}

// Pending says whether the question still waits for an answer.
func (v questionView) Pending() bool { return v.Status == inbox.StatusPending }

// Back is where the question's forms return after success.
func (v questionView) Back() string {
	if v.Listed {
		return "/inbox"
	}
	return "/inbox/" + v.ID
}

// FailOn is the refusal of form, shown next to it, or empty.
func (v questionView) FailOn(form string) string {
	if v.Fail == nil || v.Fail.Form != form || !v.Pending() {
		return ""
	}
	return v.Fail.Message
}

// FailAbove is a refusal that has no form to stand next to: the question
// was resolved meanwhile.
func (v questionView) FailAbove() string {
	if v.Fail == nil || v.Pending() {
		return ""
	}
	return v.Fail.Message
}

// Kept is what the person typed in form before it was refused, else
// fallback.
func (v questionView) Kept(form, fallback string) string {
	if v.Fail == nil || v.Fail.Form != form {
		return fallback
	}
	return v.Fail.Text
}

// Hidden is how many drafts the page leaves out.
func (v questionView) Hidden() int { return v.DraftCount - len(v.Drafts) }

// NextVersion is the version an edit of the latest draft becomes.
func (v questionView) NextVersion() int { return v.Newest.Version + 1 }
