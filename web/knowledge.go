package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/knowledge"
)

// mountKnowledge adds the routes of the Knowledge page: searching the
// answers the org's people shared, and unsharing or editing one, for its
// answerer and the org's admins.
func (p *Pages) mountKnowledge(r routes) {
	r.GET("/knowledge", p.knowledgePage)
	r.POST("/knowledge/:message_id/unshare", p.unshareAnswer)
	r.POST("/knowledge/:message_id/edit", p.editSharedAnswer)
}

// knowledgeFlash says what the Knowledge page's actions did.
var knowledgeFlash = map[string]string{
	"unshared": "The answer is no longer shared. It stays between its two people.",
	"edited":   "The shared answer is saved. What its asker received stays as it was sent.",
}

// recentAnswers is how many shared answers the Knowledge page lists before
// a search, most recent first.
const recentAnswers = 10

// knowledgeData is the Knowledge page.
type knowledgeData struct {
	Query   string
	Answers []*knowledge.Answer
	// Sharing is the org's knowledge_sharing.
	Sharing string
	// Searched is true once a query was given; Error says why it failed.
	Searched bool
	Error    string
	// Fail is the refusal of an edit or unshare of FailID, with the text
	// that was typed.
	FailID, Fail, Kept string
	CSRF               string
	Caller             ctalk.Caller
}

func (p *Pages) knowledgePage(c echo.Context) error {
	return p.showKnowledge(c, http.StatusOK, &knowledgeData{})
}

// showKnowledge renders the Knowledge page for the query in the URL (or
// the form's back field), with d's refusal, if any.
func (p *Pages) showKnowledge(c echo.Context, status int, d *knowledgeData) error {
	ctx, m := c.Request().Context(), me(c)
	d.CSRF, d.Caller = csrfToken(c), m.Caller()
	d.Query = strings.TrimSpace(c.QueryParam("q"))
	if back, err := url.Parse(c.FormValue("back")); err == nil && d.Query == "" {
		d.Query = back.Query().Get("q")
	}
	k, err := p.knowledge.Settings(ctx, d.Caller)
	if err != nil {
		return err
	}
	d.Sharing = k.Sharing
	if d.Query != "" {
		d.Searched = true
		d.Answers, err = p.knowledge.Search(ctx, d.Caller, d.Query, knowledge.MaxLimit)
		if ctalk.ErrorCode(err) == ctalk.EInvalid {
			d.Error, err = ctalk.ErrorMessage(err), nil
		}
		if err != nil {
			return err
		}
	} else if d.Sharing != "off" {
		if d.Answers, err = p.knowledge.Recent(ctx, d.Caller, recentAnswers); err != nil {
			return err
		}
	}
	return p.app(c, status, "knowledge", &page{Section: "knowledge", Title: "Knowledge", Flash: flash(c, knowledgeFlash), Data: d})
}

func (p *Pages) unshareAnswer(c echo.Context) error {
	return p.changeShared(c, "web:unshare_answer", "unshared", func(ctx context.Context, who ctalk.Caller, id string) error {
		return p.knowledge.Unshare(ctx, who, id)
	})
}

func (p *Pages) editSharedAnswer(c echo.Context) error {
	return p.changeShared(c, "web:edit_shared_answer", "edited", func(ctx context.Context, who ctalk.Caller, id string) error {
		return p.knowledge.Edit(ctx, who, id, typed(c, "text"))
	})
}

// changeShared runs one change of the shared answer in the path, records
// it in the audit log, and returns to the search it came from, or shows
// the page again with the refusal next to the answer.
func (p *Pages) changeShared(c echo.Context, tool, what string, fn func(context.Context, ctalk.Caller, string) error) error {
	start, m, id := time.Now(), me(c), c.Param("message_id")
	err := fn(c.Request().Context(), m.Caller(), id)
	if !inbox.IsMessageID(id) {
		id = ""
	}
	p.recordAction(c, tool, start, err, id)
	code := ctalk.ErrorCode(err)
	switch {
	case err == nil:
		back := "/knowledge"
		if u, perr := url.Parse(c.FormValue("back")); perr == nil && u.Query().Get("q") != "" {
			back += "?" + url.Values{"q": {u.Query().Get("q")}}.Encode()
		}
		return done(c, back, what)
	case code == ctalk.EInternal || code == ctalk.EUnavailable:
		return err
	}
	return p.showKnowledge(c, ctalk.HTTPStatus(code), &knowledgeData{FailID: c.Param("message_id"), Fail: ctalk.ErrorMessage(err), Kept: typed(c, "text")})
}

// shareField and shareOffered name the inbox forms' "Share" box, and the
// hidden field saying the form offered it: a form without the box (sharing
// off) decides nothing.
const (
	shareField   = "share"
	shareOffered = "share_offered"
)

// shareBoxView is an inbox form's "Share" choice: its element id, and the
// org's knowledge_sharing.
type shareBoxView struct{ ID, Sharing string }

// sharingChoice is the person's choice in an inbox form, or nil when the
// form did not offer one.
func sharingChoice(c echo.Context) *bool {
	if c.FormValue(shareOffered) == "" {
		return nil
	}
	share := c.FormValue(shareField) == "yes"
	return &share
}

// sharing is the knowledge_sharing of the signed-in person's org.
func (p *Pages) sharing(c echo.Context) (string, error) {
	k, err := p.knowledge.Settings(c.Request().Context(), me(c).Caller())
	return k.Sharing, err
}
