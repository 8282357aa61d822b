package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// pushWorkerPath is the service worker that shows Web Push notifications
// (static/push-worker.js). It lives under /static/ with the other assets
// and is served with Service-Worker-Allowed: / so that its scope can be
// the whole site: a click on a notification opens any of the app's pages.
const pushWorkerPath = "/static/push-worker.js"

// serviceWorker serves the push service worker with the page headers (its
// CSP holds for what it fetches; no-store, so that a new release's worker
// replaces the old one at once) and the type browsers require of a worker
// script.
func (p *Pages) serviceWorker(c echo.Context) error {
	body, err := staticFS.ReadFile("static/push-worker.js")
	if err != nil {
		return err
	}
	c.Response().Header().Set("Service-Worker-Allowed", "/")
	return c.Blob(http.StatusOK, "text/javascript; charset=utf-8", body)
}
