package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/usecase"
)

// mountInbox adds the routes of the app's inbox section: the questions
// waiting for me, the drafts my agent proposed, and the approve, edit,
// reject, decline and answer-myself actions. Every action is the
// recipient's, in their own session: a link, or another member's session,
// changes nothing.
func (p *Pages) mountInbox(r routes) {
	r.GET("/inbox", p.inboxPage)
	r.GET("/inbox/:message_id", p.questionPage)
	// Each decision needs the org's approval factor (approvalFactor).
	d := r.with(p.approvalFactor)
	d.POST("/inbox/:message_id/approve", p.inboxAction("approve", p.decision(usecase.Approve, "")))
	d.POST("/inbox/:message_id/edit", p.inboxAction("edit", p.decision(usecase.Edit, "text")))
	d.POST("/inbox/:message_id/reject", p.inboxAction("reject", p.decision(usecase.Reject, "note")))
	d.POST("/inbox/:message_id/decline", p.inboxAction("decline", p.decision(usecase.Decline, "reason")))
	d.POST("/inbox/:message_id/answer", p.inboxAction("answer", p.decision(usecase.Answer, "text")))
}

// inboxForms names each form of a question in the audit log and in the
// flash after it succeeds.
var inboxForms = map[string]struct{ audit, done string }{
	"approve": {"web:approve_draft", "approved"},
	"edit":    {"web:edit_draft", "edited"},
	"reject":  {"web:reject_draft", "rejected"},
	"decline": {"web:decline_question", "declined"},
	"answer":  {"web:answer_question", "answered"},
	// route.go's
	"forward":      {"web:forward_question", "forwarded"},
	"request-info": {"web:request_info", "info-requested"},
}

// inboxPageSize is how many questions one page of the inbox shows.
const inboxPageSize = 20

// inboxFlash says what each inbox action did (see inboxForms).
var inboxFlash = map[string]string{
	"approved": "Approved and sent. The asker's agent receives exactly this text.",
	"edited":   "Your version is sent. The asker's agent receives exactly your text.",
	"rejected": "Rejected. Your agent reads your note and may not send this draft.",
	"declined": "Declined. The asker's agent receives your reason.",
	"answered": "Sent. The asker's agent receives your answer.",
	// route.go's
	"forwarded":      "Forwarded. Their agent receives the question, and the asker's agent is told who has it now.",
	"info-requested": "Asked. The question waits for the asker's information; it comes back here with their reply.",
}

// inboxList is the data of the inbox page.
type inboxList struct {
	Questions []questionView
	// Next is the cursor of the next page, if there is one.
	Next string
	// HeldPosts counts the channel posts waiting for me (posts.go).
	HeldPosts int
	// Start is what is left of my first steps (firststeps.go), nil once
	// they are all done.
	Start *firstSteps
	// VerifyFirst is the questions' (see questionView.VerifyFirst).
	VerifyFirst bool
}

func (p *Pages) inboxPage(c echo.Context) error {
	m := me(c)
	rs, next, err := p.inbox.Pending(c.Request().Context(), m.Caller(), inboxPageSize, c.QueryParam("after"))
	if err != nil {
		return p.inboxMessage(c, "Inbox", err)
	}
	data := inboxList{Next: next}
	if data.HeldPosts, err = p.heldCount(c.Request().Context(), caller(c)); err != nil {
		return err
	}
	if data.Start, err = p.firstSteps(c); err != nil {
		return err
	}
	if data.Start.Done() {
		data.Start = nil
	}
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	sharing, err := p.sharing(c)
	if err != nil {
		return err
	}
	verify, err := p.verifyFirst(c)
	if err != nil {
		return err
	}
	data.VerifyFirst = verify
	for i, r := range rs {
		v := newQuestionView(c, r, true, nil)
		v.Sharing, v.VerifyFirst = sharing, verify
		v.Position, v.Neighbour, v.Cursor = i+1, neighbour(ids, i), c.QueryParam("after")
		data.Questions = append(data.Questions, v)
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
	r, err := p.inbox.Review(c.Request().Context(), m.Caller(), c.Param("message_id"))
	if err != nil {
		return p.inboxMessage(c, "Question not found", err)
	}
	title := "Question from " + visibleText(r.Sender.Name)
	v := newQuestionView(c, r, false, fail)
	if v.Sharing, err = p.sharing(c); err != nil {
		return err
	}
	if v.VerifyFirst, err = p.verifyFirst(c); err != nil {
		return err
	}
	return p.inboxRender(c, status, "inbox-question", title, v)
}

// verifyFirst says whether the decision forms of this request's page
// verify with a passkey before they send (see questionView.VerifyFirst).
func (p *Pages) verifyFirst(c echo.Context) (bool, error) {
	m, ctx := me(c), c.Request().Context()
	org, err := p.orgs.Org(ctx, m.OrgID)
	if err != nil || org.ApprovalFactor != orgs.FactorPasskey || m.PasskeyVerifiedRecently(time.Now()) ||
		!auth.PasskeysPossible(p.cfg.PublicURL(c.Request())) {
		return false, err
	}
	keys, err := p.auth.Passkeys(ctx, m.OrgID, m.UserID)
	return confirmed(keys) > 0, err
}

// inboxAct is one action on the question msgID by the person m: it returns
// what they typed, kept when the action is refused.
type inboxAct func(ctx context.Context, c echo.Context, m *auth.Session, msgID string) (typed string, err error)

// inboxAction runs act for form, records it in the org's audit log as the
// MCP tools' calls are (who, what, outcome, duration and the message id;
// never what was typed), then redirects after success to the page the form
// came from (post/redirect/get), saying what happened, or shows the
// question again with the refusal next to its form and what the person
// typed kept. Internal errors go to the server's handler.
func (p *Pages) inboxAction(form string, act inboxAct) echo.HandlerFunc {
	return func(c echo.Context) error {
		start, m, id := time.Now(), me(c), c.Param("message_id")
		kept, err := act(c.Request().Context(), c, m, id)
		p.auditInbox(c, inboxForms[form].audit, start, err, id)
		if err == nil {
			return done(c, inboxReturn(c, form, id), inboxForms[form].done)
		}
		code := ctalk.ErrorCode(err)
		if code == ctalk.EInternal || code == ctalk.EUnavailable {
			return err
		}
		return p.showQuestion(c, ctalk.HTTPStatus(code), &formError{Form: form, Message: ctalk.ErrorMessage(err), Text: kept})
	}
}

// inboxReturn is where a successful form on question id returns: the
// question's page; or, from the inbox's list, that page of the list at the
// question when it is still listed (a rejected draft, or a request for
// information, leaves it pending), else at its neighbour (approved or
// edited, which sent the answer; declined, answered or forwarded).
func inboxReturn(c echo.Context, form, id string) string {
	back := c.FormValue("back")
	if back != "/inbox" && !strings.HasPrefix(back, "/inbox?") {
		if form == "forward" {
			return "/inbox" // it is no longer mine to show
		}
		return "/inbox/" + id
	}
	list := "/inbox"
	if u, err := url.Parse(back); err == nil && u.Query().Get("after") != "" {
		list += "?" + url.Values{"after": {u.Query().Get("after")}}.Encode()
	}
	if form != "reject" && form != "request-info" {
		return at(list, c.FormValue(nextItemField))
	}
	return at(list, id)
}

// decision is the inbox action of a decision of kind, made where the
// person is, as every front door makes it (usecase.Answers.Decide): an
// approval or an edit sends the answer at once. field names the form's
// text (the edit, the answer, the note or the reason), if any; a decision
// on a draft names its version; the "Share" box, where the form offers it,
// is the person's choice of sharing the answer.
func (p *Pages) decision(kind usecase.Kind, field string) inboxAct {
	return func(ctx context.Context, c echo.Context, m *auth.Session, id string) (string, error) {
		d := usecase.Decision{Kind: kind, MessageID: id, Share: sharingChoice(c)}
		if field != "" {
			d.Text = typed(c, field)
		}
		if kind == usecase.Approve || kind == usecase.Edit || kind == usecase.Reject {
			v, err := formVersion(c)
			if err != nil {
				return d.Text, err
			}
			d.Version = v
		}
		_, err := p.answers.Decide(ctx, m.Caller(), d)
		return d.Text, err
	}
}

// auditInbox records an inbox action in the org's audit log, with the
// message id when it has the shape of one.
func (p *Pages) auditInbox(c echo.Context, tool string, start time.Time, err error, msgID string) {
	if !inbox.IsMessageID(msgID) {
		msgID = ""
	}
	p.recordAction(c, tool, start, err, msgID)
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
	return p.app(c, status, name, &page{Section: "inbox", Title: title, Data: data, Flash: flash(c, inboxFlash)})
}

// inboxMessage renders what went wrong in words, inside the app: a
// question that is not the person's is "not found", whoever asks.
func (p *Pages) inboxMessage(c echo.Context, title string, err error) error {
	code := ctalk.ErrorCode(err)
	if code == ctalk.EInternal || code == ctalk.EUnavailable {
		return err
	}
	return p.app(c, ctalk.HTTPStatus(code), "message", &page{Section: "inbox", Title: title,
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
	// Position is the question's place in the list, from 1, which names
	// its drafts' region apart from the others'; Neighbour is the question
	// the list returns to once this one has left it, and Cursor the
	// list's page.
	Position          int
	Neighbour, Cursor string
	Newest            *draftView
	Older             []draftView
	Fail              *formError
	// Sharing is the org's knowledge_sharing: the forms offer "Share"
	// unless it is off, ticked when it is on.
	Sharing string
	// VerifyFirst is true where the org asks for a passkey before every
	// approval and this session holds no fresh verification, while the
	// person has a passkey to verify with: the decision forms then verify
	// on the page before they send (passkey.js), and without JavaScript
	// go to the step-up page, which verifies and sends them.
	VerifyFirst bool
}

// draftView is a draft with its element id, the target of #v{version}
// on the question's page.
type draftView struct {
	*inbox.Draft
	Anchor string
	// Sent is when the draft went out as the answer, or nil.
	Sent *time.Time
}

func newQuestionView(c echo.Context, r *inbox.Review, listed bool, fail *formError) questionView {
	csrf := csrfToken(c)
	v := questionView{Review: r, CSRF: csrf, Listed: listed, Fail: fail}
	sent := false
	for i, d := range r.Drafts {
		anchor := "v" + strconv.Itoa(d.Version)
		if listed {
			anchor = r.ID + "-" + anchor
		}
		dv := draftView{Draft: d, Anchor: anchor}
		// The newest approved version with the answer's text is the one sent.
		if !sent && r.Status == inbox.StatusAnswered && d.Approved && d.Text == r.Answer {
			dv.Sent, sent = r.ResolvedAt, true
		}
		if i == 0 {
			v.Newest = &dv
			continue
		}
		v.Older = append(v.Older, dv)
	}
	return v
}

// Pending says whether the question still waits for an answer, also while
// it waits for its asker's information.
func (v questionView) Pending() bool {
	return v.Status == inbox.StatusPending || v.Status == inbox.StatusNeedsInfo
}

// NeedsInfo says whether the question waits for its asker's information.
func (v questionView) NeedsInfo() bool { return v.Status == inbox.StatusNeedsInfo }

// MaxForwards is how many times a question may be forwarded.
func (v questionView) MaxForwards() int { return inbox.MaxForwards }

// Back is where the question's forms return after success: the page of
// the list it is on, or its own page.
func (v questionView) Back() string {
	switch {
	case v.Listed && v.Cursor != "":
		return "/inbox?" + url.Values{"after": {v.Cursor}}.Encode()
	case v.Listed:
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
