package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/notify"
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
	// Filters are the filters as typed, for the export form to send on.
	Filters map[string]string
	// Format is the export's format as chosen; ExportError why the export
	// was refused.
	Format, ExportError string
	// Retention is how long the org's events are kept; RetentionError why
	// a change of it was refused, Days the number then sent.
	Retention      audit.Retention
	RetentionError string
	Days           string
	MinDays        int
	MaxDays        int
	CSRF           string
	// Streams says whether the server can stream the log (it has
	// notifications); Stream is the org's stream, nil when off.
	// StreamSecret is a new stream's secret, shown this once;
	// StreamError why a change or a test of it failed, StreamURL the URL
	// then sent.
	Streams                              bool
	Stream                               *notify.AuditStream
	StreamSecret, StreamError, StreamURL string
}

// auditFlash are the audit page's messages after a change.
var auditFlash = map[string]string{
	"stream-tested": "The test event reached your audit stream.",
	"stream-off":    "The audit stream is off: nothing more is sent to it.",
	"retention":     "Retention saved. Events older than it are deleted at the next daily pruning, which keeps a signed checkpoint of where it cut the chain.",
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
	return p.auditView(c, http.StatusOK, &auditData{})
}

// auditView renders the audit page around d, its filters and page of
// events read from the request's query.
func (p *Pages) auditView(c echo.Context, status int, d *auditData) error {
	ctx, m := c.Request().Context(), me(c)
	d.UserID, d.Tool, d.Outcome, d.Since, d.Until = c.QueryParam("user_id"), c.QueryParam("tool"), c.QueryParam("outcome"), c.QueryParam("since"), c.QueryParam("until")
	d.Outcomes, d.MinDays, d.MaxDays, d.CSRF = auditOutcomes, audit.MinRetentionDays, audit.MaxRetentionDays, csrfToken(c)
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
	if p.audit == nil {
		return p.adminNotFound(c, ctalk.Errorf(ctalk.EUnavailable, "the audit log is not enabled on this server"))
	}
	if d.Retention, err = p.audit.Retention(ctx, m.OrgID); err != nil {
		return err
	}
	if d.Days == "" {
		d.Days = strconv.Itoa(d.Retention.Days)
	}
	if d.Streams = p.notify != nil; d.Streams {
		if d.Stream, err = p.notify.AuditStream(ctx, m.OrgID); err != nil {
			return err
		}
	}
	d.Filters = map[string]string{}
	for k, v := range map[string]string{"user_id": d.UserID, "tool": d.Tool, "outcome": d.Outcome, "since": d.Since, "until": d.Until} {
		if v != "" {
			d.Filters[k] = v
		}
	}
	events, err := p.audit.Query(ctx, m.OrgID, audit.Query{UserID: d.UserID, Tool: d.Tool, Outcome: d.Outcome,
		Since: auditUTC(d.Since), Until: auditUTC(d.Until), Cursor: c.QueryParam("cursor")})
	if err != nil {
		if ctalk.ErrorCode(err) == ctalk.EInternal {
			return err
		}
		if d.ExportError == "" {
			status, d.Error = ctalk.HTTPStatus(ctalk.ErrorCode(err)), ctalk.ErrorMessage(err)
		}
	} else {
		d.Events = events.Events
		q := url.Values{}
		for k, v := range d.Filters {
			q.Set(k, v)
		}
		d.Newest = "/admin/audit?" + q.Encode()
		if events.NextCursor != "" {
			q.Set("cursor", events.NextCursor)
			d.Older = "/admin/audit?" + q.Encode()
		}
		d.Paged = c.QueryParam("cursor") != ""
	}
	return p.app(c, status, "admin-audit", &page{Section: "admin", Title: "Audit log", Data: d, Flash: flash(c, auditFlash)})
}

// exportAudit streams the org's events that the audit page's filters
// select, oldest first, as a JSON Lines or CSV download: each row is
// written as it is read, so that a log of millions of events costs the
// server no more memory than a page. The export is itself recorded in the
// audit log, with its outcome.
func (p *Pages) exportAudit(c echo.Context) error {
	start, ctx, m := time.Now(), c.Request().Context(), me(c)
	if p.audit == nil {
		return p.adminNotFound(c, ctalk.Errorf(ctalk.EUnavailable, "the audit log is not enabled on this server"))
	}
	format, err := audit.ParseFormat(c.QueryParam("format"))
	var f audit.Filter
	if err == nil {
		f, err = audit.Query{UserID: c.QueryParam("user_id"), Tool: c.QueryParam("tool"), Outcome: c.QueryParam("outcome"),
			Since: auditUTC(c.QueryParam("since")), Until: auditUTC(c.QueryParam("until"))}.Filter()
	}
	if err != nil {
		p.recordAction(c, "web:export_audit_log", start, err)
		if ctalk.ErrorCode(err) == ctalk.EInternal {
			return err
		}
		return p.auditView(c, ctalk.HTTPStatus(ctalk.ErrorCode(err)), &auditData{Format: c.QueryParam("format"), ExportError: ctalk.ErrorMessage(err)})
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, audit.ContentType(format))
	h.Set(echo.HeaderContentDisposition, fmt.Sprintf("attachment; filename=%q", "audit-"+m.OrgID+"-"+start.UTC().Format("20060102T150405Z")+"."+format))
	h.Set("Cache-Control", "no-store")
	c.Response().WriteHeader(http.StatusOK)
	n, err := p.audit.Export(ctx, m.OrgID, f, format, c.Response())
	p.recordAction(c, "web:export_audit_log", start, err)
	if err != nil {
		// The status is sent: the download ends short, and the log says why.
		p.cfg.Logger.Warn("audit export ended early", "org", m.OrgID, "written", n, "error", err)
	}
	return nil
}

// setAuditRetention sets how many days the org's events are kept. In an
// org that asks for passkeys, shortening it (which deletes evidence) needs
// a fresh passkey verification of the admin's, as weakening any setting of
// oversight does; an agent cannot change it at all, having no tool for it.
func (p *Pages) setAuditRetention(c echo.Context) error {
	start, ctx, m := time.Now(), c.Request().Context(), me(c)
	if p.audit == nil {
		return p.adminNotFound(c, ctalk.Errorf(ctalk.EUnavailable, "the audit log is not enabled on this server"))
	}
	raw := strings.TrimSpace(c.FormValue("retention_days"))
	days, convErr := strconv.Atoi(raw)
	if convErr != nil {
		days = -1 // SetRetention says what is allowed.
	}
	cur, err := p.audit.Retention(ctx, m.OrgID)
	if err != nil {
		return err
	}
	if days >= audit.MinRetentionDays && days < cur.Days {
		org, err := p.orgs.Org(ctx, m.OrgID)
		if err != nil {
			return err
		}
		if org.AsksForPasskeys() && !m.PasskeyVerifiedRecently(time.Now()) {
			return p.stepUp(c, http.StatusUnauthorized, fmt.Sprintf("Your organization asks for passkeys, and keeping its audit log %d days instead of %d deletes evidence sooner: it takes a passkey verification of yours. Nothing was changed yet: verify with your passkey, and the retention is saved.", days, cur.Days),
				c.Request().URL.Path, replayed(c), "")
		}
	}
	err = p.audit.SetRetention(ctx, m.OrgID, days)
	p.recordAction(c, "web:set_audit_retention", start, err)
	if err != nil {
		if ctalk.ErrorCode(err) == ctalk.EInternal {
			return err
		}
		return p.auditView(c, ctalk.HTTPStatus(ctalk.ErrorCode(err)), &auditData{RetentionError: ctalk.ErrorMessage(err), Days: raw})
	}
	return done(c, "/admin/audit", "retention")
}

// auditVerifyData is the verification page: what checking the org's
// chain found.
type auditVerifyData struct {
	V *audit.Verification
	// First is the first event checked: the one after the checkpoint.
	First int64
}

// verifyAudit checks the org's audit chain, as "ctalk audit verify" does,
// and shows the first break, if any. The check is recorded.
func (p *Pages) verifyAudit(c echo.Context) error {
	start, ctx, m := time.Now(), c.Request().Context(), me(c)
	if p.audit == nil {
		return p.adminNotFound(c, ctalk.Errorf(ctalk.EUnavailable, "the audit log is not enabled on this server"))
	}
	v, err := p.audit.Verify(ctx, m.OrgID)
	p.recordAction(c, "web:verify_audit_log", start, err)
	if err != nil {
		return err
	}
	return p.app(c, http.StatusOK, "admin-audit-verify", &page{Section: "admin", Title: "Audit log · verification", Data: &auditVerifyData{V: v, First: v.From + 1}})
}

// auditStreamFailed shows the audit page with why a change or a test of
// its stream failed.
func (p *Pages) auditStreamFailed(c echo.Context, err error) error {
	if ctalk.ErrorCode(err) == ctalk.EInternal {
		return err
	}
	return p.auditView(c, ctalk.HTTPStatus(ctalk.ErrorCode(err)), &auditData{StreamError: ctalk.ErrorMessage(err), StreamURL: c.FormValue("url")})
}

// setAuditStream streams the org's audit log to the URL sent, or moves
// its stream there, and shows the new signing secret on this response
// only. The audit record says who did it, never the URL or the secret.
func (p *Pages) setAuditStream(c echo.Context) error {
	start, m := time.Now(), me(c)
	err := p.requireNotify()
	var secret string
	if err == nil {
		_, secret, err = p.notify.SetAuditStream(c.Request().Context(), m.OrgID, m.UserID, c.FormValue("url"))
	}
	p.recordAction(c, "web:set_audit_stream", start, err)
	if err != nil {
		return p.auditStreamFailed(c, err)
	}
	return p.auditView(c, http.StatusOK, &auditData{StreamSecret: secret})
}

// testAuditStream sends the org's stream a test event and says what its
// receiver answered.
func (p *Pages) testAuditStream(c echo.Context) error {
	return p.auditStreamAction(c, "web:test_audit_stream", "stream-tested", func(n *notify.Service) func(context.Context, string) error { return n.TestAuditStream })
}

// stopAuditStream turns the org's stream off.
func (p *Pages) stopAuditStream(c echo.Context) error {
	return p.auditStreamAction(c, "web:stop_audit_stream", "stream-off", func(n *notify.Service) func(context.Context, string) error { return n.StopAuditStream })
}

// auditStreamAction does to the org's stream what act picks, audited as
// tool, and lands back on the audit page saying done.
func (p *Pages) auditStreamAction(c echo.Context, tool, what string, act func(*notify.Service) func(context.Context, string) error) error {
	start, m := time.Now(), me(c)
	err := p.requireNotify()
	if err == nil {
		err = act(p.notify)(c.Request().Context(), m.OrgID)
	}
	p.recordAction(c, tool, start, err)
	if err != nil {
		return p.auditStreamFailed(c, err)
	}
	return done(c, "/admin/audit#stream", what)
}
