package web

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// routeSet is the method and path of each route of e.
func routeSet(e *echo.Echo) map[string]bool {
	out := map[string]bool{}
	for _, r := range e.Routes() {
		out[r.Method+" "+r.Path] = true
	}
	return out
}

// own records the paths of the routes e gained since before.
func (p *Pages) own(e *echo.Echo, before map[string]bool) {
	p.owned = map[string]bool{}
	for _, r := range e.Routes() {
		if !before[r.Method+" "+r.Path] {
			p.owned[r.Path] = true
		}
	}
}

// Owns reports whether a request is to one of the app's routes, whose
// errors ErrorPage answers.
func (p *Pages) Owns(c echo.Context) bool { return p.owned[c.Path()] }

// Browser reports whether a request is a browser's asking for a page (a
// GET or HEAD whose Accept names HTML): a path no route serves answers it
// with ErrorPage's page, where an API client keeps its JSON.
func Browser(c echo.Context) bool {
	r := c.Request()
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && strings.Contains(r.Header.Get(echo.HeaderAccept), echo.MIMETextHTML)
}

// ErrorPage answers an error that reached the server's error handler from
// one of the app's routes (a form over the body limit, a post from another
// site, an internal error) with a page in words and the app's security
// headers, where a browser would otherwise show JSON. msg is the server's
// words for the person; an internal error's are only that something went
// wrong, with the request id to report.
func (p *Pages) ErrorPage(c echo.Context, status int, msg string) error {
	title, next := http.StatusText(status), ""
	switch status {
	case http.StatusNotFound:
		title, msg, next = "Page not found", "There is no page at this address. Check the link you followed, or continue to the home page.", "/"
	case http.StatusRequestEntityTooLarge:
		title, msg = "Too large to send", "What you sent is too large: "+msg+". Nothing was changed."
	case http.StatusForbidden:
		title = "Refused"
		if strings.Contains(msg, "CSRF") {
			msg = "This form did not come from this site, so nothing was changed. Go back, reload the page and try again."
		}
	}
	if status >= 500 {
		title, msg = "Something went wrong", "Something went wrong on our side, so nothing may have been saved. Try again in a moment; if it goes on, report request "+
			c.Response().Header().Get(echo.HeaderXRequestID)+"."
	}
	p.setHeaders(c)
	return p.render(c, status, "message", &page{Title: title, Message: msg, Next: next})
}
