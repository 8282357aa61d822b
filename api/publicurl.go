package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// publicURL is PUBLIC_URL, or else the URL the request came in on, as a
// proxy reports it.
func (s *Server) publicURL(r *http.Request) string { return PublicURL(s.cfg.PublicURL, r) }

// PublicURL is configured (PUBLIC_URL), or when that is empty the URL r
// came in on, as a proxy reports it.
func PublicURL(configured string, r *http.Request) string {
	if configured != "" {
		return strings.TrimRight(configured, "/")
	}
	scheme := "http"
	if r.TLS != nil || r.Header.Get(echo.HeaderXForwardedProto) == "https" {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
