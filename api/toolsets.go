package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/tools"
)

// toolsets reads the optional toolsets a client wants offered, from the
// X-MCP-Toolsets header or the /mcp?toolsets= parameter (the header wins),
// into the header the tool list reads, and refuses a name that is not a
// toolset before anything else runs.
func toolsets(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.URL.RawQuery != "" && req.Header.Get(tools.ToolsetsHeader) == "" {
			if v := req.URL.Query().Get("toolsets"); v != "" {
				req.Header.Set(tools.ToolsetsHeader, v)
			}
		}
		v := req.Header.Get(tools.ToolsetsHeader)
		if v == "" {
			// All of them, as most clients ask: nothing to check.
			return next(c)
		}
		if _, err := tools.ParseToolsets(v); err != nil {
			return invalidRequest(c, http.StatusBadRequest, ctalk.ErrorMessage(err))
		}
		return next(c)
	}
}
