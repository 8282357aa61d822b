package web

import (
	"net/http"
	"net/url"
	"regexp"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/orgs"
)

// auditData is the audit page: the filters as typed, the page of events
// they chose, and the links to the next page and back to the newest.
type auditData struct {
	UserID, Tool, Outcome, Since, Until string
	Outcomes                            []string
	Members                             []*orgs.User
	// FormerUser is the person filtered on when they are no longer a
	// member, so that the filter still shows them.
	FormerUser    string
	Events        []audit.Event
	Older, Newest string
	Paged         bool
	Error         string
}

// auditOutcomes are the outcomes an event can have, for the filter.
var auditOutcomes = []string{"ok", "cancelled", "invalid", "unauthorized", "forbidden", "not_found", "conflict", "rate_limited", "unavailable", "internal"}

// auditLocalMinute is the value of a datetime-local input: a time without a
// zone, which the page says is UTC.
var auditLocalMinute = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$`)

// auditUTC turns a datetime-local value into RFC 3339 in UTC; anything else
// goes to the audit query as typed, to be checked there.
func auditUTC(v string) string {
	if !auditLocalMinute.MatchString(v) {
		return v
	}
	if len(v) == len("2006-01-02T15:04") {
		v += ":00"
	}
	return v + "Z"
}

// auditPage shows the org's audit log, newest first, filtered and paged
// by the same query as the get_audit_log tool.
func (p *Pages) auditPage(c echo.Context) error {
	ctx, m := c.Request().Context(), me(c)
	d := &auditData{UserID: c.QueryParam("user_id"), Tool: c.QueryParam("tool"), Outcome: c.QueryParam("outcome"),
		Since: c.QueryParam("since"), Until: c.QueryParam("until"), Outcomes: auditOutcomes}
	var err error
	if d.Members, err = p.orgs.Users(ctx, m.OrgID); err != nil {
		return err
	}
	d.FormerUser = d.UserID
	for _, u := range d.Members {
		if u.ID == d.UserID {
			d.FormerUser = ""
		}
	}
	status := http.StatusOK
	if p.audit == nil {
		return p.adminNotFound(c, ctalk.Errorf(ctalk.EUnavailable, "the audit log is not enabled on this server"))
	}
	events, err := p.audit.Query(ctx, m.OrgID, audit.Query{UserID: d.UserID, Tool: d.Tool, Outcome: d.Outcome,
		Since: auditUTC(d.Since), Until: auditUTC(d.Until), Cursor: c.QueryParam("cursor")})
	if err != nil {
		if ctalk.ErrorCode(err) == ctalk.EInternal {
			return err
		}
		status, d.Error = ctalk.HTTPStatus(ctalk.ErrorCode(err)), ctalk.ErrorMessage(err)
	} else {
		d.Events = events.Events
		q := url.Values{}
		for k, v := range map[string]string{"user_id": d.UserID, "tool": d.Tool, "outcome": d.Outcome, "since": d.Since, "until": d.Until} {
			if v != "" {
				q.Set(k, v)
			}
		}
		d.Newest = "/admin/audit?" + q.Encode()
		if events.NextCursor != "" {
			q.Set("cursor", events.NextCursor)
			d.Older = "/admin/audit?" + q.Encode()
		}
		d.Paged = c.QueryParam("cursor") != ""
	}
	return p.app(c, status, "admin-audit", &page{Section: "admin", Title: "Audit log", Data: d})
}
