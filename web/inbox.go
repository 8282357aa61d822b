package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// mountInbox adds the routes of the app's inbox section: the questions
// waiting for me, the drafts my agent proposed, and the approve, edit,
// reject, decline and answer-myself actions.
func (p *Pages) mountInbox(r routes) {
	r.GET("/inbox", p.inboxPage)
}

func (p *Pages) inboxPage(c echo.Context) error {
	return p.app(c, http.StatusOK, "inbox", "inbox", "Inbox", nil)
}
