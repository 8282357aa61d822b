package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/audit"
)

// mountAdmin adds the routes of the app's admin section: members,
// organization settings and the audit log (admins only).
func (p *Pages) mountAdmin(r routes) {}

// appFlash is app with what the last action did.
func (p *Pages) appFlash(c echo.Context, status int, name, section, title string, data any, flashed string) error {
	m := me(c)
	n, err := p.inbox.Waiting(c.Request().Context(), m.OrgID, m.UserID)
	if err != nil {
		return err
	}
	return p.render(c, status, name, &page{Me: m, Section: section, Title: title, Data: data, Waiting: n, Flash: flashed})
}

// record writes an action taken in the web app to the org's audit log, as
// the MCP tools' calls are: who, what (tool, named "web:" and the action),
// the outcome, how long it took and the ids it touched; never what was
// typed.
func (p *Pages) record(c echo.Context, tool string, start time.Time, err error, ids ...string) {
	if p.audit == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = string(ctalk.ErrorCode(err))
	}
	var touched []string
	for _, id := range ids {
		if ctalk.IsID(id) {
			touched = append(touched, id)
		}
	}
	d := time.Since(start)
	m := me(c)
	p.audit.Record(audit.Event{At: start.UTC(), OrgID: m.OrgID, UserID: m.UserID, Tool: tool, Outcome: outcome,
		DurationMS: float64(d.Microseconds()) / 1000, IDs: touched, RequestID: c.Response().Header().Get(echo.HeaderXRequestID)})
}

var _ = http.StatusOK
