package web

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/notify"
)

// routes adds the app's routes, each behind the same middleware.
type routes struct {
	e  *echo.Echo
	mw []echo.MiddlewareFunc
}

func (r routes) GET(path string, h echo.HandlerFunc)  { r.e.GET(path, h, r.mw...) }
func (r routes) POST(path string, h echo.HandlerFunc) { r.e.POST(path, h, r.mw...) }

// with returns routes that also pass through mw.
func (r routes) with(mw ...echo.MiddlewareFunc) routes {
	return routes{e: r.e, mw: append(append([]echo.MiddlewareFunc{}, r.mw...), mw...)}
}

// meKey holds the signed-in person of a request to the app.
const meKey = "ctalk.me"

// signedIn lets a request through only with a browser session; any other is
// sent to the sign-in page, which returns it here afterwards.
func (p *Pages) signedIn(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		sess := p.Session(c)
		if sess == nil {
			if c.Request().Method != http.MethodGet {
				return p.render(c, http.StatusUnauthorized, "message", &page{Title: "Signed out",
					Message: "You are not signed in (or your session ended), so nothing was changed. Sign in and try again.", Next: "/signin"})
			}
			return c.Redirect(http.StatusSeeOther, "/signin?"+url.Values{"next": {c.Request().URL.RequestURI()}}.Encode())
		}
		c.Set(meKey, sess)
		if held, err := p.breakGlass(c, sess); held || err != nil {
			return err
		}
		return next(c)
	}
}

// me is the person signed in on a request that passed signedIn.
func me(c echo.Context) *auth.Session {
	s, _ := c.Get(meKey).(*auth.Session)
	return s
}

// adminOnly lets only the org's admins through.
func (p *Pages) adminOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !me(c).IsAdmin() {
			return p.render(c, http.StatusForbidden, "message", &page{Me: me(c), Title: "Admins only",
				Message: "Only an admin of your organization can open this page. Ask one of them to make the change, or to make you an admin."})
		}
		return next(c)
	}
}

// app renders one of the app's pages for the person signed in: pg, with
// Me and the count of what waits for them (shown in the title) filled in.
func (p *Pages) app(c echo.Context, status int, name string, pg *page) error {
	pg.Me = me(c)
	n, err := p.inbox.Waiting(c.Request().Context(), pg.Me.Caller())
	if err != nil {
		return err
	}
	pg.Waiting = n
	return p.render(c, status, name, pg)
}

// done redirects after a successful form (post/redirect/get), with what
// happened as a key into the flash messages of the page it lands on; a
// fragment of path (the item the person returns to) stays last.
func done(c echo.Context, path, what string) error {
	path, fragment, _ := strings.Cut(path, "#")
	if what != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + url.Values{"done": {what}}.Encode()
	}
	if fragment != "" {
		path += "#" + fragment
	}
	return c.Redirect(http.StatusSeeOther, path)
}

// nextItemField names the hidden field of a list's forms that says which
// item the person returns to once theirs has left the list: the one after
// it, or before it when it was the last.
const nextItemField = "next_item"

// at is path with the fragment of the page's element id, when id has the
// shape of one; the person lands at that item of the list, not its top.
func at(path, id string) string {
	if !ctalk.IsID(id) {
		return path
	}
	return path + "#" + id
}

// neighbour is the id of the item after ids[i], or the one before it when it
// is the last: where a list's page returns once ids[i] has left it.
func neighbour(ids []string, i int) string {
	switch {
	case i+1 < len(ids):
		return ids[i+1]
	case i > 0:
		return ids[i-1]
	}
	return ""
}

// flash is what the last action did, in words, when the request names a
// message of the page's own: no text of the request reaches the page.
func flash(c echo.Context, messages map[string]string) string {
	return messages[c.QueryParam("done")]
}

// home is the signed-in person's inbox, or what ctalk is and how to start.
func (p *Pages) home(c echo.Context) error {
	if sess := p.Session(c); sess != nil {
		return c.Redirect(http.StatusSeeOther, "/inbox")
	}
	return p.render(c, http.StatusOK, "home", &page{Title: "ctalk", Data: homeData{
		Version: p.cfg.Version, Build: p.cfg.Build, MCP: p.cfg.PublicURL(c.Request()) + "/mcp",
	}})
}

type homeData struct{ Version, Build, MCP string }

// signinForm is the sign-in page of the app (the OAuth sign-in has its own,
// which names the client).
func (p *Pages) signinForm(c echo.Context) error {
	next := localPath(c.QueryParam("next"), "/inbox")
	if p.Session(c) != nil {
		return c.Redirect(http.StatusSeeOther, next)
	}
	return p.render(c, http.StatusOK, "signin", &page{Title: "Sign in to ctalk", Action: "/signin", Next: next,
		Hidden: url.Values{"next": {next}}, SignupURL: "/signup?" + url.Values{"next": {next}}.Encode(), ForgotURL: p.forgotURL()})
}

func (p *Pages) signinSubmit(c echo.Context) error {
	next := localPath(c.FormValue("next"), "/inbox")
	// The sign-in acts in the org the person typed (see ctalk.WithOrg).
	c.SetRequest(c.Request().WithContext(ctalk.WithTypedOrg(c.Request().Context(), c.FormValue("org_id"))))
	raw, sess, dev, err := p.auth.SignInOnDevice(c.Request().Context(), c.FormValue("org_id"), c.FormValue("user_id"), c.FormValue("password"), c.RealIP(), p.device(c))
	if err != nil {
		if ctalk.ErrorCode(err) == ctalk.EInternal {
			return err
		}
		return p.render(c, ctalk.HTTPStatus(ctalk.ErrorCode(err)), "signin", &page{Title: "Sign in to ctalk", Action: "/signin", Next: next,
			Error: ctalk.ErrorMessage(err), Hidden: url.Values{"next": {next}}, OrgID: c.FormValue("org_id"), UserID: c.FormValue("user_id"),
			SignupURL: "/signup?" + url.Values{"next": {next}}.Encode(), ForgotURL: p.forgotURL()})
	}
	p.setSession(c, raw)
	if dev != "" {
		p.setDevice(c, dev)
	}
	return c.Redirect(http.StatusSeeOther, p.afterSignIn(c, sess, next))
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	// asset is a static file's address with the hash of its content.
	"asset": asset,
	// hooks is the argument of the notifications page's webhook list.
	"hooks": func(h []*notify.Webhook, csrf, scope string) any {
		return struct {
			Hooks       []*notify.Webhook
			CSRF, Scope string
		}{h, csrf, scope}
	},
	// deliveries is the argument of the notifications page's delivery log:
	// its deliveries to the webhooks hooks (the person's, or with scope
	// "org" the org's) can be sent again.
	"deliveries": func(d []*notify.Delivery, csrf, scope string, hooks []*notify.Webhook) any {
		ours := map[string]bool{}
		for _, h := range hooks {
			ours[h.ID] = true
		}
		return struct {
			Log         []*notify.Delivery
			CSRF, Scope string
			Hooks       map[string]bool
		}{d, csrf, scope, ours}
	},
	// visible shows text another person wrote with every invisible or
	// direction-changing character made visible (see ctalk.Visible).
	"visible": func(s string) string { v, _ := ctalk.Visible(s); return v },
	// hidden counts the characters visible would mark in s.
	"hidden": func(s string) int { _, n := ctalk.Visible(s); return n },
	// iso is a time as the datetime attribute of <time>; the page's script
	// shows it in the person's time zone.
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	// ago is a time relative to now, for people without the script.
	"ago": ago,
	// count is a number with its noun, singular or plural to agree:
	// "1 question", "2 questions".
	"count": count,
	// utc is the absolute time for the title of a <time>.
	"utc": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
	// shareBox is the argument of an inbox form's "Share" choice.
	"shareBox": func(v questionView, form string) shareBoxView {
		return shareBoxView{ID: "share-" + form + "-" + v.ID, Sharing: v.Sharing}
	},
}

// ago says how long ago t was, in the words people use.
func ago(t time.Time) string {
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return plural(int(d/time.Minute), "min") + " ago"
	case d < 24*time.Hour:
		return plural(int(d/time.Hour), "hour") + " ago"
	case d < 30*24*time.Hour:
		return plural(int(d/(24*time.Hour)), "day") + " ago"
	}
	return t.UTC().Format("2 Jan 2006")
}

// count is n followed by one when n is 1, and by many otherwise.
func count(n any, one, many string) string {
	var v int64
	switch n := n.(type) {
	case int:
		v = int64(n)
	case int64:
		v = n
	default:
		return fmt.Sprint(n) + " " + many
	}
	if v == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(v, 10) + " " + many
}

func plural(n int, unit string) string {
	s := strconv.Itoa(n) + " " + unit
	if n != 1 && unit != "min" {
		s += "s"
	}
	return s
}

// recordAction writes an action taken in the web app to the org's audit log, as
// the MCP tools' calls are: who, what (tool, named "web:" and the action),
// the outcome, how long it took and the ids it touched; never what was
// typed.
func (p *Pages) recordAction(c echo.Context, tool string, start time.Time, err error, ids ...string) {
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
	m := me(c)
	p.audit.Record(audit.Event{At: start.UTC(), OrgID: m.OrgID, UserID: m.UserID, Tool: tool, Outcome: outcome,
		DurationMS: float64(time.Since(start).Microseconds()) / 1000, IDs: touched, RequestID: c.Response().Header().Get(echo.HeaderXRequestID),
		Factor: m.Factor(start)})
}
