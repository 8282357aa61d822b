package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk/auth"
)

// csrfField is the form field, and csrfHeader the header, that carry a
// form's CSRF token; the key under which a request's token is kept for
// its page's forms is csrfField too.
const (
	csrfField  = "csrf"
	csrfHeader = "X-CSRF-Token"
)

// csrf protects every form: a request that changes something must repeat
// the token of the browser's CSRF cookie in its form body or its
// X-CSRF-Token header, whatever else it says. The token is never taken
// from the query string, which URLs, logs and Referer headers carry; and
// a browser's Sec-Fetch-Site: same-origin is no pass without it. A post
// the browser says came from another site, or from a sibling host of this
// one's registrable domain (Sec-Fetch-Site cross-site or same-site), is
// refused even with the token: such a host can set the CSRF cookie for
// this one (over http, where the cookie has no __Host- prefix) and post
// its value.
func (p *Pages) csrf() echo.MiddlewareFunc {
	name := cookieName(csrfCookie, p.cfg.SecureCookies)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			var token string
			if ck, err := req.Cookie(name); err == nil {
				token = ck.Value
			}
			if !safeMethod(req.Method) {
				switch req.Header.Get("Sec-Fetch-Site") {
				case "cross-site", "same-site":
					return echo.NewHTTPError(http.StatusForbidden, "cross-site request blocked by CSRF")
				}
				if !sameToken(token, sentToken(req)) {
					return p.render(c, http.StatusForbidden, "message", &page{Title: "Form expired",
						Message: "This form expired or did not come from this site. Go back, reload the page and try again."})
				}
			}
			if token == "" {
				token = newCSRFToken()
			}
			c.SetCookie(&http.Cookie{Name: name, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
				Secure: p.cfg.SecureCookies, MaxAge: int(auth.WebSessionTTL.Seconds())})
			c.Set(csrfField, token)
			c.Response().Header().Add(echo.HeaderVary, echo.HeaderCookie)
			return next(c)
		}
	}
}

// safeMethod says whether a request of method changes nothing (RFC 9110),
// so needs no token.
func safeMethod(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// sentToken is the token a request repeats: from its header, else from
// its form body (readForm parsed it; PostForm holds the body only, never
// the query string).
func sentToken(req *http.Request) string {
	if t := req.Header.Get(csrfHeader); t != "" {
		return t
	}
	if req.PostForm == nil {
		_ = req.ParseForm()
	}
	return req.PostForm.Get(csrfField)
}

// sameToken compares the cookie's token with the one sent, in constant
// time; no token matches nothing.
func sameToken(cookie, sent string) bool {
	return cookie != "" && sent != "" && subtle.ConstantTimeCompare([]byte(cookie), []byte(sent)) == 1
}

// newCSRFToken is 256 random bits.
func newCSRFToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// csrfToken is the token the forms of a request's page repeat.
func csrfToken(c echo.Context) string {
	t, _ := c.Get(csrfField).(string)
	return t
}
