package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/orgs"
)

// A question's way in the web app: the recipient forwards it or asks its
// asker for more information (inbox), the asker replies (asked page), and a
// person sets themselves away (their profile). Every action is a form.

func (p *Pages) mountRoute(r routes) {
	r.POST("/inbox/:message_id/forward", p.inboxAction("forward", p.forwardQuestion))
	r.POST("/inbox/:message_id/request-info", p.inboxAction("request-info", p.requestInfo))
	r.POST("/asked/:id/provide-info", p.provideInfoSubmit)
	r.POST("/profile/away", p.awaySubmit)
	r.POST("/profile/away/clear", p.awayClear)
}

func (p *Pages) forwardQuestion(ctx context.Context, c echo.Context, m *auth.Session, id string) (string, error) {
	note := typed(c, "note")
	_, err := p.inbox.Forward(ctx, caller(c), id, strings.TrimSpace(c.FormValue("to_user_id")), note)
	return note, err
}

func (p *Pages) requestInfo(ctx context.Context, c echo.Context, m *auth.Session, id string) (string, error) {
	text := typed(c, "request")
	_, err := p.inbox.RequestInfo(ctx, caller(c), id, text)
	return text, err
}

// provideInfoSubmit is my reply to a request for information on one of my
// questions.
func (p *Pages) provideInfoSubmit(c echo.Context) error {
	id, cursor := c.Param("id"), c.FormValue("cursor")
	_, err := p.inbox.ProvideInfo(c.Request().Context(), caller(c), id, typed(c, "information"))
	if err == nil {
		path := "/asked"
		if cursor != "" {
			path += "?" + url.Values{"cursor": {cursor}}.Encode()
		}
		return done(c, at(path, "q-"+id), "info-provided")
	}
	switch code := ctalk.ErrorCode(err); code {
	case ctalk.EInternal, ctalk.EUnavailable:
		return err
	case ctalk.ENotFound, ctalk.EForbidden:
		return p.peopleMessage(c, http.StatusNotFound, "asked", "Question not found",
			"That question is not one of yours, so nothing was sent. Your questions are listed under Asked.")
	default:
		return p.renderAsked(c, ctalk.HTTPStatus(code), cursor, askForm{Key: newAskKey()}, nil, map[string]string{id: ctalk.ErrorMessage(err)})
	}
}

// awaySubmit sets me away until the end of the day the form names (UTC),
// with a delegate and a note.
func (p *Pages) awaySubmit(c echo.Context) error {
	m := me(c)
	form := map[string]string{"away_until": c.FormValue("away_until"), "away_delegate": c.FormValue("away_delegate"), "away_note": typed(c, "away_note")}
	day, err := time.Parse(time.DateOnly, strings.TrimSpace(form["away_until"]))
	if err != nil {
		return p.profileFormError(c, m.UserID, "away_until", form, ctalk.Errorf(ctalk.EInvalid, "Choose the last day you are away, as a date."))
	}
	in := orgs.Away{Until: day.Add(24*time.Hour - time.Second), Delegate: strings.TrimSpace(form["away_delegate"]), Note: form["away_note"]}
	if _, err := p.orgs.SetAway(c.Request().Context(), caller(c), in); err != nil {
		field := "away_until"
		if strings.Contains(ctalk.ErrorMessage(err), "delegate") {
			field = "away_delegate"
		} else if strings.Contains(ctalk.ErrorMessage(err), "note") {
			field = "away_note"
		}
		if ctalk.ErrorCode(err) == ctalk.ENotFound && field == "away_delegate" {
			err = ctalk.Errorf(ctalk.EInvalid, "%s", ctalk.ErrorMessage(err))
		}
		return p.profileFormError(c, m.UserID, field, form, err)
	}
	return done(c, "/profile", "away")
}

// awayClear brings me back.
func (p *Pages) awayClear(c echo.Context) error {
	if _, err := p.orgs.ClearAway(c.Request().Context(), caller(c)); err != nil {
		return err
	}
	return done(c, "/profile", "back")
}
