package web

import (
	"github.com/labstack/echo/v4"

	"github.com/ctalk/ctalk/auth"
)

// firstSteps lead a person through what makes ctalk useful, shown at the
// top of their inbox until each is done: connect their agent; and, for an
// admin, bring in coworkers and choose how answers are approved. Each step
// is done by what the org holds (a credential an agent uses, a second
// member or a pending invite, settings saved), never by a box ticked.
type firstSteps struct {
	// MCP is this server's MCP endpoint, for the command that connects
	// an agent.
	MCP   string
	Admin bool
	// Agent, Coworkers and Approval say which steps are done.
	Agent, Coworkers, Approval bool
}

// Done says whether nothing is left to lead the person through.
func (s *firstSteps) Done() bool {
	return s.Agent && (!s.Admin || (s.Coworkers && s.Approval))
}

// firstSteps reads which of the person's first steps are done.
func (p *Pages) firstSteps(c echo.Context) (*firstSteps, error) {
	ctx, m := c.Request().Context(), me(c)
	s := &firstSteps{MCP: p.cfg.PublicURL(c.Request()) + "/mcp", Admin: m.IsAdmin()}
	var err error
	if s.Agent, err = p.agentConnected(c, m); err != nil {
		return nil, err
	}
	if !s.Admin {
		return s, nil
	}
	org, err := p.orgs.Org(ctx, m.OrgID)
	if err != nil {
		return nil, err
	}
	s.Approval = org.SettingsSaved
	members, err := p.orgs.Users(ctx, m.OrgID)
	if err != nil {
		return nil, err
	}
	s.Coworkers = len(members) > 1
	if !s.Coworkers {
		invites, err := p.auth.Invites(ctx, m.OrgID)
		if err != nil {
			return nil, err
		}
		s.Coworkers = len(invites) > 0
	}
	return s, nil
}

// agentConnected says whether an agent of m's can act as them: an OAuth
// grant, a login token or a personal token of theirs is live.
func (p *Pages) agentConnected(c echo.Context, m *auth.Session) (bool, error) {
	ctx := c.Request().Context()
	grants, err := p.oauth.Grants(ctx, m.OrgID, m.UserID)
	if err != nil || len(grants) > 0 {
		return len(grants) > 0, err
	}
	creds, err := p.auth.Credentials(ctx, m)
	if err != nil {
		return false, err
	}
	for _, cr := range creds {
		if cr.Kind == auth.KindLogin || cr.Kind == auth.KindPersonal {
			return true, nil
		}
	}
	return false, nil
}
