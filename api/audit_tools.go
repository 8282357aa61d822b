package api

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/auth"
)

// adminPasswordCaller is the user recorded for calls authorized by an org's
// admin password rather than a token.
const adminPasswordCaller = "admin-password"

// authorizeAdmin lets a call administer orgID when the caller is an admin of
// that org by token, or gives its admin password, and records the org for
// the call's audit event. It returns the normalized org id.
//
// Returns ENotFound, EUnauthorized, EForbidden or ERateLimited.
func (s *Server) authorizeAdmin(ctx context.Context, in hasToken, orgID, adminPassword string) (string, error) {
	sess, err := s.optionalSession(ctx, in)
	if err != nil {
		return "", err
	}
	id, err := s.orgs.AuthorizeAdmin(ctx, sess, orgID, adminPassword)
	if err != nil {
		if sess == nil && adminPassword != "" {
			s.recordAttempt(ctx, orgID, adminPasswordCaller, err)
		}
		return "", err
	}
	orgID = id
	s.adminCaller(ctx, sess, orgID)
	return orgID, nil
}

// adminCaller records the org an admin call acted on, so that the org's
// admins see it in their audit log.
func (s *Server) adminCaller(ctx context.Context, sess *auth.Session, orgID string) {
	c, ok := ctx.Value(callKey).(*call)
	if !ok {
		return
	}
	c.orgID = orgID
	if sess == nil {
		c.userID = adminPasswordCaller
	}
}

type auditArgs struct {
	tokenArg
	OrgID         string   `json:"org_id"`
	AdminPassword string   `json:"admin_password"`
	UserID        string   `json:"user_id"`
	Tool          string   `json:"tool"`
	Outcome       string   `json:"outcome"`
	Since         string   `json:"since"`
	Until         string   `json:"until"`
	Limit         *float64 `json:"limit"`
	Cursor        string   `json:"cursor"`
}

type auditResult struct {
	Events     []audit.Event `json:"events"`
	NextCursor string        `json:"next_cursor,omitempty" jsonschema:"pass as cursor for the next (older) page; absent on the last page"`
}

func (s *Server) registerAuditTools() {
	addTool(s, mcp.NewTool("get_audit_log",
		mcp.WithDescription("Org admins only: read your organization's audit log, newest first: every tool call with time, user, tool, outcome, duration and the ids it touched (never message text or secrets)."),
		mcp.WithString("org_id", mcp.Required(), mcp.Description("Your organization.")),
		mcp.WithString("admin_password", mcp.Description("The org's admin password; may be omitted when you are logged in as an org admin.")),
		mcp.WithString("user_id", mcp.Description("Only calls by this user.")),
		mcp.WithString("tool", mcp.Description("Only calls of this tool.")),
		mcp.WithString("outcome", mcp.Description("Only this outcome: ok, cancelled, invalid, unauthorized, forbidden, not_found, conflict, rate_limited, unavailable or internal.")),
		mcp.WithString("since", mcp.Description("Only calls at or after this RFC 3339 time.")),
		mcp.WithString("until", mcp.Description("Only calls before this RFC 3339 time.")),
		mcp.WithNumber("limit", mcp.Description("Events per page, 1 to 200 (default 50).")),
		mcp.WithString("cursor", mcp.Description("next_cursor of the previous page.")),
		authTokenParam,
		annotations(true, false, true),
	), func(ctx context.Context, in *auditArgs) (*auditResult, error) {
		if s.cfg.Audit == nil {
			return nil, ctalk.Errorf(ctalk.EUnavailable, "the audit log is not enabled on this server")
		}
		orgID, err := s.authorizeAdmin(ctx, in, in.OrgID, in.AdminPassword)
		if err != nil {
			return nil, err
		}
		f := audit.Filter{Tool: strings.TrimSpace(in.Tool), Outcome: strings.TrimSpace(in.Outcome)}
		if in.UserID != "" {
			if f.UserID, err = ctalk.ParseID("user_id", in.UserID); err != nil {
				return nil, err
			}
		}
		if f.Outcome != "" && !audit.ValidOutcome(f.Outcome) {
			return nil, ctalk.Errorf(ctalk.EInvalid, "outcome is not one of ok, cancelled, invalid, unauthorized, forbidden, not_found, conflict, rate_limited, unavailable, internal")
		}
		if f.Since, err = timeArg("since", in.Since); err != nil {
			return nil, err
		}
		if f.Until, err = timeArg("until", in.Until); err != nil {
			return nil, err
		}
		if f.Limit, err = intArg("limit", in.Limit, 50, 1, 200); err != nil {
			return nil, err
		}
		if c := strings.TrimSpace(in.Cursor); c != "" {
			if f.Before, err = strconv.ParseInt(c, 10, 64); err != nil || f.Before <= 0 {
				return nil, ctalk.Errorf(ctalk.EInvalid, "cursor is not one this server issued; pass next_cursor from the previous page")
			}
		}
		events, more, err := s.cfg.Audit.Events(ctx, orgID, f)
		if err != nil {
			return nil, err
		}
		res := &auditResult{Events: events}
		if more {
			res.NextCursor = strconv.FormatInt(events[len(events)-1].ID, 10)
		}
		return res, nil
	})
}

// timeArg parses an optional RFC 3339 argument.
func timeArg(name, v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, ctalk.Errorf(ctalk.EInvalid, "%s is not an RFC 3339 time; use a form like 2026-01-31T09:00:00Z", name)
	}
	return t, nil
}
