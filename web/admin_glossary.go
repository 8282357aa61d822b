package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk/knowledge"
)

// glossaryData is the glossary page: the org's entries, and the form as
// sent with why it was refused.
type glossaryData struct {
	CSRF               string
	Entries            []knowledge.GlossaryEntry
	Term, Means, Error string
	MaxEntries, MaxLen int
}

var glossaryFlash = map[string]string{
	"saved":   "Saved. find_answers and the look before each question use it from now on.",
	"removed": "Removed from the glossary.",
}

// mountGlossary adds the admins' glossary page (behind adminOnly, with the
// other admin routes).
func (p *Pages) mountGlossary(r routes) {
	r.GET("/admin/glossary", p.glossaryPage)
	r.POST("/admin/glossary", p.setGlossaryEntry)
	r.POST("/admin/glossary/remove", p.removeGlossaryEntry)
}

func (p *Pages) glossaryPage(c echo.Context) error {
	return p.glossary(c, http.StatusOK, &glossaryData{}, flash(c, glossaryFlash))
}

// glossary renders the glossary page around d.
func (p *Pages) glossary(c echo.Context, status int, d *glossaryData, flashed string) error {
	var err error
	if d.Entries, err = p.knowledge.Glossary(c.Request().Context(), me(c).Caller()); err != nil {
		return err
	}
	d.CSRF, d.MaxEntries, d.MaxLen = csrfToken(c), knowledge.MaxGlossaryEntries, knowledge.MaxGlossaryLen
	return p.app(c, status, "admin-glossary", &page{Section: "admin", Title: "Glossary", Data: d, Flash: flashed})
}

func (p *Pages) setGlossaryEntry(c echo.Context) error {
	start := time.Now()
	d := &glossaryData{Term: c.FormValue("term"), Means: c.FormValue("means")}
	err := p.knowledge.SetGlossaryEntry(c.Request().Context(), me(c).Caller(), d.Term, d.Means)
	p.recordAction(c, "web:set_glossary_entry", start, err)
	if err != nil {
		return adminRefused(err, func(status int, msg string) error {
			d.Error = msg
			return p.glossary(c, status, d, "")
		})
	}
	return done(c, "/admin/glossary", "saved")
}

func (p *Pages) removeGlossaryEntry(c echo.Context) error {
	start := time.Now()
	err := p.knowledge.DeleteGlossaryEntry(c.Request().Context(), me(c).Caller(), c.FormValue("term"))
	p.recordAction(c, "web:remove_glossary_entry", start, err)
	if err != nil {
		return adminRefused(err, func(status int, msg string) error {
			return p.glossary(c, status, &glossaryData{Error: msg}, "")
		})
	}
	return done(c, "/admin/glossary", "removed")
}
