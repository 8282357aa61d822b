package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// publicURL is PUBLIC_URL, or else the URL the request came in on, as a
// proxy reports it.
func (s *Server) publicURL(r *http.Request) string {
	if s.cfg.PublicURL != "" {
		return strings.TrimRight(s.cfg.PublicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil || r.Header.Get(echo.HeaderXForwardedProto) == "https" {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
