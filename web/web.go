// Package web is ctalk's web app for people: where they sign in (also to end
// an OAuth authorization), create their organization, read and approve what
// their agents propose, answer, ask, talk in channels, and run their org.
// Pages are rendered on the server from embedded templates, every action is
// a form that works without JavaScript, and every page shares one browser
// session, layout, stylesheet, CSRF protection and set of security headers.
// Domain rules stay in the domain packages (inbox, orgs, auth, channels),
// shared with the MCP tools.
package web

import (
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/access"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/channels"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/knowledge"
	"github.com/ctalk/ctalk/notify"
	"github.com/ctalk/ctalk/oauth"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/scim"
	"github.com/ctalk/ctalk/slackapp"
	"github.com/ctalk/ctalk/sso"
	"github.com/ctalk/ctalk/usecase"
)

//go:embed templates
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// SessionCookie is the name of the browser session cookie; over https it
// carries hostOnly's prefix.
const SessionCookie = "ctalk_session"

// csrfCookie holds the CSRF token that every form repeats; over https it
// carries hostOnly's prefix.
const csrfCookie = "ctalk_csrf"

// hostOnly prefixes the names of the cookies of a site served over https:
// browsers let only the site itself set a cookie named so (Secure, Path /,
// no Domain), where a sibling host of the same domain could set the plain
// name for it, planting its own session or a CSRF token to match a forged
// form.
const hostOnly = "__Host-"

// cookieName is name as the cookie of a request over https or not.
func cookieName(name string, https bool) string {
	if https {
		return hostOnly + name
	}
	return name
}

// Config is what the pages need from the server around them.
type Config struct {
	Logger *slog.Logger
	// PublicURL returns the URL a request reached this server at.
	PublicURL func(*http.Request) string
	// CheckSignup enforces the sign-up rules of register_organization; it
	// is given the sign-up secret the person typed.
	CheckSignup func(secret string) error
	// SecureCookies marks the CSRF cookie Secure: set it when PUBLIC_URL
	// is https. The session cookie follows each request's public URL.
	SecureCookies bool
	// SignupNeedsSecret says whether the sign-up form asks for the secret.
	SignupNeedsSecret bool
	// Version and Build are shown on the home page.
	Version, Build string
	// Stop is closed when the server starts draining: the pages' event
	// streams end (browsers reconnect to another replica) and new ones are
	// refused.
	Stop <-chan struct{}
	// LocalSignIn, set on a local store's server alone (ctalk serve
	// --local), names the member whom the link /local/signin/TOKEN signs
	// in, with no password: there the machine account is the boundary.
	// Nil everywhere else, where the route answers 404.
	LocalSignIn func(token string) (orgID, userID string, ok bool)
}

// Services are the domain services behind the pages.
type Services struct {
	Auth     *auth.Service
	Orgs     *orgs.Service
	OAuth    *oauth.Service
	Inbox    *inbox.Service
	Channels *channels.Service
	Audit    *audit.Log
	// Access invites and resets passwords by email.
	Access *access.Service
	// Knowledge holds the answers people shared with their org.
	Knowledge *knowledge.Service
	// Answers carries out the person's decisions on the questions sent
	// to them, as every front door does.
	Answers *usecase.Answers
	// Departures removes members, declining what waits for them.
	Departures *usecase.Departures
	// Slack is the Slack door, whose pages and routes are mounted here;
	// nil mounts none.
	Slack *slackapp.Service
	// SSO is the organizations' single sign-on; nil offers none.
	SSO *sso.Service
	// SCIM keeps the orgs' SCIM tokens, which admins make on /admin/scim;
	// nil mounts no such page.
	SCIM *scim.Service
}

// Pages serves the pages.
type Pages struct {
	cfg      Config
	auth     *auth.Service
	orgs     *orgs.Service
	oauth    *oauth.Service
	inbox    *inbox.Service
	channels *channels.Service
	audit    *audit.Log
	access   *access.Service
	// knowledge holds the org's shared answers.
	knowledge *knowledge.Service
	answers   *usecase.Answers
	departs   *usecase.Departures
	// export writes archives of the org's data and of a person's.
	export *usecase.Export
	slack  *slackapp.Service
	sso    *sso.Service
	scim   *scim.Service
	// notify is set by SetNotify; nil means no notifications.
	notify *notify.Service
	pages  map[string]*template.Template
	// overviews keeps the overview pages' reads for their charts.
	overviews overviewMemo
	// owned are the paths of the routes Mount added (see Owns).
	owned map[string]bool
}

// New returns the pages over the given services.
func New(cfg Config, s Services) *Pages {
	return &Pages{cfg: cfg, auth: s.Auth, orgs: s.Orgs, oauth: s.OAuth, inbox: s.Inbox, channels: s.Channels, audit: s.Audit, access: s.Access, knowledge: s.Knowledge, answers: s.Answers, departs: s.Departures, slack: s.Slack, sso: s.SSO, scim: s.SCIM, pages: pages(),
		export: usecase.NewExport(s.Orgs, s.Inbox, s.Knowledge, s.Channels, identityFiles(s)...)}
}

// identityFiles are the files of an organization's archive that hold its
// single sign-on and SCIM settings, of the services the server has.
func identityFiles(s Services) []usecase.OrgFile {
	var files []usecase.OrgFile
	if s.SSO != nil {
		files = append(files, usecase.OrgFile{Name: "sso.jsonl", Rows: s.SSO.ExportProvider}, usecase.OrgFile{Name: "sso_domains.jsonl", Rows: s.SSO.ExportDomains})
	}
	if s.SCIM != nil {
		files = append(files, usecase.OrgFile{Name: "scim_tokens.jsonl", Rows: s.SCIM.ExportTokens})
	}
	return files
}

// pages returns the parsed pages, parsed once per process: they are
// embedded, their functions are package-level, and executing a template is
// safe from many goroutines, so every Pages of a process (a test starts
// hundreds) shares one set, read only.
var pages = sync.OnceValue(parsePages)

// parsePages parses each page of templates/ (every file but the layout)
// with the layout and the shared parts of templates/parts/.
func parsePages() map[string]*template.Template {
	files, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".html")
		if name == "layout" {
			continue
		}
		t := template.New(name).Funcs(funcs)
		t = template.Must(t.ParseFS(templateFS, "templates/layout.html", "templates/parts/*.html", f))
		out[name] = t
	}
	return out
}

// Mount adds the pages' routes to e. Every page gets the security headers;
// every form is CSRF-protected.
func (p *Pages) Mount(e *echo.Echo) {
	defer p.own(e, routeSet(e))
	e.GET(pushWorkerPath, p.serviceWorker, p.headers)
	e.GET("/static/*", serveStatic(), p.headers, compress)
	// Per route, not an echo Group: a group's middleware would also run on
	// every path no route matches, answering them with CSRF refusals.
	mw := []echo.MiddlewareFunc{p.headers, readForm, p.csrf()}
	e.GET(oauth.AuthorizePath, p.authorize, mw...)
	e.POST(oauth.AuthorizePath, p.authorizeForm, mw...)
	e.GET("/signup", p.signupPage, mw...)
	e.POST("/signup", p.signup, mw...)
	e.POST("/signout", p.signout, mw...)
	e.GET("/signin", p.signinForm, mw...)
	e.POST("/signin", p.signinSubmit, mw...)
	e.GET("/", p.home, mw...)
	e.GET("/local/signin/:token", p.localSignIn, mw...)
	p.mountPasskeySignIn(e, mw)
	p.mountSlackRoutes(e)
	p.mountSSO(e, mw)
	// The app's sections: each file mounts its own routes, every one of
	// them behind a signed-in session.
	r := routes{e: e, mw: append(mw, p.signedIn)}
	p.mountInbox(r)
	p.mountPosts(r)
	p.mountAsked(r)
	p.mountPeople(r)
	p.mountRoute(r)
	p.mountKnowledge(r)
	p.mountTokens(r)
	p.mountNotifications(r)
	p.mountPasskeys(r)
	p.mountSlackProfile(r)
	p.mountChannels(r)
	p.mountExport(r)
	p.mountAdmin(r.with(p.adminOnly))
	p.mountInvites(r.with(p.adminOnly))
	p.mountSlackAdmin(r.with(p.adminOnly))
	p.mountSSOAdmin(r.with(p.adminOnly))
	p.mountSCIMAdmin(r.with(p.adminOnly))
	p.mountAccess(e, mw)
	p.mountLive(r)
}

// contentSecurityPolicy allows only this site's own stylesheet, images and
// script files (never inline script), its own event stream, and forms that
// post back to it.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// headers sets the security headers of every page: no inline script, no
// framing, no referrer to other sites, no caching of pages that show who
// is signed in.
func (p *Pages) headers(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p.setHeaders(c)
		return next(c)
	}
}

func (p *Pages) setHeaders(c echo.Context) {
	h := c.Response().Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if p.secure(c.Request()) {
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
}

func (p *Pages) secure(r *http.Request) bool {
	return strings.HasPrefix(p.cfg.PublicURL(r), "https://")
}

// readForm reads a posted form before anything looks into it. A form that
// cannot be read (over the body limit when sent without a length, so that
// only reading finds it too large; or malformed) is refused with what went
// wrong, where echo's FormValue would ignore the error and see an empty form.
func readForm(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.Method != http.MethodPost {
			return next(c)
		}
		var err error
		if strings.HasPrefix(req.Header.Get(echo.HeaderContentType), echo.MIMEMultipartForm) {
			err = req.ParseMultipartForm(32 << 20)
		} else {
			err = req.ParseForm()
		}
		var he *echo.HTTPError
		switch {
		case errors.As(err, &he):
			return he
		case err != nil:
			return echo.NewHTTPError(http.StatusBadRequest, "the form could not be read; reload the page and send it again")
		}
		return next(c)
	}
}

// page is what every template receives.
type page struct {
	Title   string
	CSRF    string
	Error   string
	Message string
	Next    string
	Back    string
	// Sign-in and consent.
	Action    string
	Hidden    url.Values
	Request   *oauth.AuthRequest
	Session   *auth.Session
	OrgID     string
	UserID    string
	SignupURL string
	// ForgotURL is the "forgot password" page, when the server mails
	// reset links.
	ForgotURL string
	// OfferSSO says whether the server offers single sign-on.
	OfferSSO bool
	// OfferPasskeys says whether the site, as this request reached it, can
	// offer passkeys (not at an IP address).
	OfferPasskeys bool
	// Sign-up.
	Form       signupForm
	NeedSecret bool

	// The app's pages.
	// Me is the person signed in; Section names the part of the app the
	// page belongs to (for the navigation), Waiting how many questions wait
	// for Me (shown in the title), Flash what the last action did.
	Me      *auth.Session
	Section string
	Waiting int
	Flash   string
	// Data is the page's own content.
	Data any
}

func (p *Pages) render(c echo.Context, status int, name string, data *page) error {
	if t := csrfToken(c); t != "" {
		data.CSRF = t
	}
	data.OfferPasskeys = auth.PasskeysPossible(p.cfg.PublicURL(c.Request()))
	data.OfferSSO = p.sso != nil
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	return p.pages[name].ExecuteTemplate(c.Response(), "layout", data)
}

// Session returns the person signed in on this browser, or nil; from then
// on the request's context is scoped to their org.
func (p *Pages) Session(c echo.Context) *auth.Session {
	ck, err := c.Cookie(cookieName(SessionCookie, p.secure(c.Request())))
	if err != nil || ck.Value == "" {
		return nil
	}
	sess, err := p.auth.WebSession(c.Request().Context(), ck.Value)
	if err != nil {
		if ctalk.ErrorCode(err) != ctalk.EUnauthorized {
			p.cfg.Logger.Warn("web session check failed", "error", err)
		}
		return nil
	}
	// The rest of the request acts in the person's org (see ctalk.WithOrg).
	c.SetRequest(c.Request().WithContext(ctalk.WithOrg(c.Request().Context(), sess.OrgID)))
	return sess
}

// setSession gives the browser the new session raw, ending the session it
// held before, if any: its cookie no longer names it, so nothing would use
// or end it.
func (p *Pages) setSession(c echo.Context, raw string) {
	if old := p.Session(c); old != nil {
		if err := p.auth.EndWebSession(c.Request().Context(), old); err != nil {
			p.cfg.Logger.Warn("earlier browser session not ended", "error", err)
		}
	}
	c.SetCookie(&http.Cookie{Name: cookieName(SessionCookie, p.secure(c.Request())), Value: raw, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: p.secure(c.Request()), MaxAge: int(auth.WebSessionTTL.Seconds())})
}

func (p *Pages) clearSession(c echo.Context) {
	c.SetCookie(&http.Cookie{Name: cookieName(SessionCookie, p.secure(c.Request())), Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: p.secure(c.Request()), MaxAge: -1})
}

// signout ends the browser session and returns to next.
func (p *Pages) signout(c echo.Context) error {
	if sess := p.Session(c); sess != nil {
		if err := p.auth.EndWebSession(c.Request().Context(), sess); err != nil {
			return err
		}
	}
	p.clearSession(c)
	return c.Redirect(http.StatusSeeOther, localPath(c.FormValue("next"), "/"))
}

// localPath returns next when it is a path on this site, else fallback, so
// that no form can send the browser elsewhere. Browsers drop tabs and line
// breaks anywhere in a URL and read a backslash as a slash, so "/<tab>/x"
// and "/\\x" are "//x", another site: a path with a control character or a
// backslash is refused whole.
func localPath(next, fallback string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsFunc(next, func(r rune) bool {
		return r < 0x20 || r == 0x7f || r == '\\'
	}) {
		return fallback
	}
	return next
}

// message renders a page that says what went wrong, in words.
func (p *Pages) message(c echo.Context, status int, title string, err error) error {
	msg := ctalk.ErrorMessage(err)
	var oe *oauth.Error
	if errors.As(err, &oe) {
		msg = oe.Description
	} else if ctalk.ErrorCode(err) == ctalk.EInternal {
		p.cfg.Logger.Error("page failed", "path", c.Path(), "error", err)
		msg = "Something went wrong on our side. Try again in a moment."
	}
	return p.render(c, status, "message", &page{Title: title, Message: msg})
}
