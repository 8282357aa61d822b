package api

import (
	"html/template"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/inbox"
)

// The approval page shows a person the question and the exact draft their
// agent wants to send. GET only shows; the buttons POST, so that link
// previews and prefetchers cannot approve anything.
var approvalTmpl = template.Must(template.New("approval").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ctalk: approve an answer</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:3rem auto;padding:0 1rem;color:#222}
blockquote{white-space:pre-wrap;background:#f4f4f4;border-left:4px solid #999;margin:0 0 1rem;padding:.8rem}
button{font-size:1rem;padding:.5rem 1.2rem;margin-right:.5rem}.note{color:#555}
.hidden{background:#fff3cd;border:1px solid #c90;padding:.6rem .8rem}</style>
</head><body>
<h1>{{.Title}}</h1>
{{if .Message}}<p>{{.Message}}</p>{{end}}
{{with .A}}
{{if $.Hidden}}<p class="hidden"><strong>Hidden characters shown.</strong> The text below contains {{$.Hidden}} character(s) that cannot be seen, or that change how the text around them reads (such as a right-to-left override). Each is shown as a marker with its code, such as ⟦U+202E⟧. The text your agent sends keeps them as they are: approve only if you mean to send it so.</p>{{end}}
<p><strong>{{$.AskerName}}</strong> ({{.AskerID}}) asked:</p>
<blockquote>{{$.Question}}</blockquote>
<p>Your agent proposes to answer (draft version {{.Version}}):</p>
<blockquote>{{$.Draft}}</blockquote>
{{if .Usable}}
<form method="post">
<button name="decision" value="approve" type="submit">Approve and allow sending</button>
<button name="decision" value="reject" type="submit">Reject</button>
</form>
<p class="note">Approving lets your agent send exactly this text. To change it, reject and tell your agent what to write; it will propose a new draft with a new link. This link works once and expires {{.ExpiresAt.Format "2006-01-02 15:04 MST"}}.</p>
{{end}}
{{end}}
</body></html>
`))

type approvalView struct {
	Title   string
	Message string
	A       *inbox.Approval
	// The words of A as a person must read them to approve them (see
	// ctalk.Visible), and how many hidden characters they showed.
	AskerName, Question, Draft string
	Hidden                     int
}

// reveal fills the view's words from its approval, with every hidden
// character made visible.
func (v approvalView) reveal() approvalView {
	if v.A == nil {
		return v
	}
	var n int
	v.AskerName, v.Hidden = ctalk.Visible(v.A.AskerName)
	v.Question, n = ctalk.Visible(v.A.Question)
	v.Hidden += n
	v.Draft, n = ctalk.Visible(v.A.Draft)
	v.Hidden += n
	return v
}

func (s *Server) approvalPage(c echo.Context) error {
	a, err := s.inbox.ApprovalByToken(c.Request().Context(), c.Param("token"))
	if err != nil {
		return s.renderApproval(c, err, nil)
	}
	v := approvalView{Title: "Approve this answer?", A: a}
	if !a.Usable {
		v.Title, v.Message = "This link can no longer be used", "Nothing was changed: "+a.State+"."
	}
	return s.render(c, http.StatusOK, v)
}

func (s *Server) approvalDecision(c echo.Context) error {
	var approve bool
	switch c.FormValue("decision") {
	case "approve":
		approve = true
	case "reject":
	default:
		return s.render(c, http.StatusBadRequest, approvalView{Title: "Nothing was changed", Message: "Press Approve or Reject on the approval page."})
	}
	a, err := s.inbox.Decide(c.Request().Context(), c.Param("token"), approve)
	if err != nil {
		return s.renderApproval(c, err, a)
	}
	v := approvalView{Title: "Rejected", Message: "Your agent may not send this draft. Tell it what to change; it will propose a new draft.", A: a}
	if approve {
		v = approvalView{Title: "Approved", Message: "Your agent may now send exactly this text. You can close this page.", A: a}
	}
	return s.render(c, http.StatusOK, v)
}

func (s *Server) renderApproval(c echo.Context, err error, a *inbox.Approval) error {
	code := ctalk.ErrorCode(err)
	if code == ctalk.EInternal || code == ctalk.EUnavailable {
		return err
	}
	return s.render(c, ctalk.HTTPStatus(code), approvalView{Title: "Nothing was changed", Message: ctalk.ErrorMessage(err), A: a})
}

func (s *Server) render(c echo.Context, status int, v approvalView) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	c.Response().WriteHeader(status)
	return approvalTmpl.Execute(c.Response(), v.reveal())
}
