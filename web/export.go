package web

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/usecase"
)

// mountExport adds the downloads of an organization's data (admins only)
// and of a person's own (docs/data.md). Both are forms posted with the
// CSRF token, so that no other site can start one in a signed-in browser,
// and both are recorded in the audit log.
func (p *Pages) mountExport(r routes) {
	r.POST("/profile/export", p.exportMine)
	r.with(p.adminOnly).POST("/admin/export", p.exportOrg)
}

func (p *Pages) exportOrg(c echo.Context) error {
	return p.download(c, "web:export_organization", "", p.export.Organization)
}

func (p *Pages) exportMine(c echo.Context) error {
	return p.download(c, "web:export_my_data", me(c).UserID, p.export.Person)
}

// download streams an archive, of the org or of person's own data, to
// the browser as an attachment. The response starts with the archive's
// first bytes: an error before them is shown as a page; one after them
// leaves the archive without its manifest (which the docs say marks it
// incomplete), and is logged.
func (p *Pages) download(c echo.Context, tool, person string, write func(context.Context, ctalk.Caller, io.Writer) (*usecase.Manifest, error)) error {
	start, m := time.Now(), me(c)
	a := &attachment{c: c, name: archiveName(m.OrgID, person, start)}
	_, err := write(c.Request().Context(), m.Caller(), a)
	p.recordAction(c, tool, start, err)
	switch {
	case err == nil:
		return nil
	case !a.started:
		return err
	default:
		p.cfg.Logger.Error("export cut short", "tool", tool, "org_id", m.OrgID, "error", err)
		return nil
	}
}

// attachment is the response as a download: its headers are set at the
// first write, so that an error before it can still be a page.
type attachment struct {
	c       echo.Context
	name    string
	started bool
}

func (a *attachment) Write(b []byte) (int, error) {
	if !a.started {
		a.started = true
		h := a.c.Response().Header()
		h.Set(echo.HeaderContentType, "application/zip")
		h.Set(echo.HeaderContentDisposition, `attachment; filename="`+a.name+`"`)
		a.c.Response().WriteHeader(http.StatusOK)
	}
	return a.c.Response().Write(b)
}

// archiveName is the file name of an archive of orgID (and userID, when
// it is one person's) made at t: ids are [a-z0-9_-] only.
func archiveName(orgID, userID string, t time.Time) string {
	parts := []string{"ctalk", orgID}
	if userID != "" {
		parts = append(parts, userID)
	}
	return strings.Join(append(parts, t.UTC().Format("20060102-150405")), "-") + ".zip"
}
