package api

import (
	"html/template"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

var homePage = template.Must(template.New("home").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ctalk</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:3rem auto;padding:0 1rem;color:#222}code,pre{background:#f4f4f4;border-radius:4px}pre{padding:.8rem;overflow-x:auto}</style>
</head><body>
<h1>ctalk</h1>
<p>A hosted MCP server where the people of an organization ask each other questions through their AI agents, and every answer is approved by a person before it is sent.</p>
<p>Version <code>{{.Version}}</code>{{with .Build}} ({{.}}){{end}}. MCP endpoint: <code>{{.MCP}}</code></p>
<h2>Connect Claude Code</h2>
<pre>claude mcp add --transport http ctalk {{.MCP}}</pre>
<p>The first time your agent needs to know who you are, run <code>/mcp</code> in Claude Code and sign in in your browser (or create your organization there). Cursor, VS Code and other clients with MCP authorization sign in the same way.</p>
<p>Clients without OAuth: ask your agent to <code>login</code>, then add the server with the token it returns:</p>
<pre>claude mcp add --transport http ctalk {{.MCP}} --header "Authorization: Bearer &lt;token&gt;"</pre>
<p>Health: <a href="/health">/health</a> · Readiness: <a href="/ready">/ready</a></p>
</body></html>
`))

func (s *Server) home(c echo.Context) error {
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(http.StatusOK)
	return homePage.Execute(c.Response(), map[string]string{
		"Version": s.cfg.Version,
		"Build":   s.cfg.Build,
		"MCP":     s.publicURL(c.Request()) + "/mcp",
	})
}

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
