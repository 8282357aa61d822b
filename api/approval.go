package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/links"
)

// A person approves their agent's drafts in the web app, signed in as the
// question's recipient: a link is no credential, since whoever holds it (the
// agent it was handed to, anyone it was forwarded to) could use it. An
// approval_url is now a page of the app; the links of earlier releases,
// /approve/{token}, only lead their person there.

// approvalLink sends the browser from an old approval link to the question
// it named, in the web app, which asks for sign-in first; a link that names
// nothing leads to the inbox. It changes nothing.
func (s *Server) approvalLink(c echo.Context) error {
	msgID, version, err := s.inbox.LinkedDraft(c.Request().Context(), c.Param("token"))
	switch ctalk.ErrorCode(err) {
	case "":
		return c.Redirect(http.StatusSeeOther, links.Draft("", msgID, version))
	case ctalk.ENotFound:
		return c.Redirect(http.StatusSeeOther, "/inbox")
	}
	return err
}

// approvalLinkPost answers the approve and reject buttons of an old
// approval page: a link approves nothing.
func (s *Server) approvalLinkPost(c echo.Context) error {
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	return c.HTML(http.StatusGone, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>ctalk: nothing was changed</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head><body>
<h1>Nothing was changed</h1>
<p>Approval links no longer approve answers. Open the question in <a href="/inbox">your ctalk inbox</a>, signed in, and approve it there.</p>
</body></html>`)
}
