package tools

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/internal/reqctx"
	"github.com/ctalk/ctalk/orgs"
)

// The optional toolsets: on unless a client names the ones it wants (see
// ParseToolsets), so that an agent that never uses channels or shared
// answers is not offered their tools.
const (
	ToolsetChannels  = "channels"
	ToolsetKnowledge = "knowledge"
)

// Toolsets are the optional toolsets, in order.
var Toolsets = []string{ToolsetChannels, ToolsetKnowledge}

// ToolsetsHeader names the optional toolsets a client wants offered, as a
// comma-separated list ("none" for neither); the /mcp?toolsets= parameter
// says the same. Without either, all are offered.
const ToolsetsHeader = "X-MCP-Toolsets"

// setUpTools are offered only to a session without identity: a caller
// already identified has an organization, an account and a token.
var setUpTools = []string{"register_organization", "register_user", "login"}

// ParseToolsets reads the value of ToolsetsHeader (or the toolsets
// parameter): the optional toolsets it names, or all when it is empty.
//
// Returns EInvalid for a name that is not an optional toolset.
func ParseToolsets(v string) (map[string]bool, error) {
	on := map[string]bool{}
	if strings.TrimSpace(v) == "" {
		for _, t := range Toolsets {
			on[t] = true
		}
		return on, nil
	}
	for _, name := range strings.Split(v, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		switch {
		case name == "none" || name == "":
		case slices.Contains(Toolsets, name):
			on[name] = true
		default:
			return nil, ctalk.Errorf(ctalk.EInvalid, "toolsets: %q is not a toolset; name any of %s, or none", ctalk.Shorten(name, 40), strings.Join(Toolsets, ", "))
		}
	}
	return on, nil
}

// inToolset registers the tools of register as members of the optional
// toolset name.
func (s *Server) inToolset(name string, register func()) {
	before := maps.Clone(s.tools)
	register()
	for tool, traits := range s.tools {
		if _, ok := before[tool]; !ok {
			traits.toolset = name
			s.tools[tool] = traits
		}
	}
}

// hooks are the server's hooks on mcp-go's lists: the tools sized to the
// caller, and the caller's own channels as resources.
func (s *Server) hooks() *server.Hooks {
	h := &server.Hooks{}
	h.AddAfterListTools(func(ctx context.Context, _ any, req *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		if res != nil {
			res.Tools = s.sized(ctx, req.Header.Get(ToolsetsHeader), res.Tools)
		}
	})
	return s.listChangedHooks(s.channelHooks(h))
}

// sized returns the tools offered to the caller of ctx, in order: a caller
// identified by their credential is offered none of the account set-up
// tools, only an admin the admin tools, and no tool with the arguments
// that stand in for a credential; a client that renders MCP Apps is also
// offered the decision card (see registerCard), and no other client is; the optional toolsets are
// those toolsets names (all when empty; api refuses a bad value before
// it gets here). Tools not offered can still be called, with the refusals
// of their own rules: the list is sized for the model's context, not a
// lock.
func (s *Server) sized(ctx context.Context, toolsets string, tools []mcp.Tool) []mcp.Tool {
	on, err := ParseToolsets(toolsets)
	if err != nil {
		on, _ = ParseToolsets("")
	}
	sess := reqctx.Session(ctx)
	apps := rendersApps(ctx)
	out := make([]mcp.Tool, 0, len(tools))
	for _, t := range tools {
		traits := s.tools[t.Name]
		if traits.card && apps {
			t = withCard(t)
		}
		switch {
		case traits.toolset != "" && !on[traits.toolset]:
		case traits.app && !apps:
		case sess != nil && slices.Contains(setUpTools, t.Name):
		case sess != nil && traits.admin && sess.Role != orgs.RoleAdmin:
		case sess != nil:
			// The credential of the header identifies the caller: the
			// arguments that stand in for it are noise to the model.
			out = append(out, withoutParams(t, credentialParams...))
		default:
			out = append(out, t)
		}
	}
	return out
}

// credentialParams are the arguments that stand in for a credential the
// Authorization header does not carry: a token, and an admin tool's admin
// password, which an admin identified by their token may leave out.
var credentialParams = []string{"auth_token", "admin_password"}

// withoutParams returns t without the arguments names in its input schema,
// leaving the registered tool as it is.
func withoutParams(t mcp.Tool, names ...string) mcp.Tool {
	props := maps.Clone(t.InputSchema.Properties)
	for _, n := range names {
		delete(props, n)
	}
	t.InputSchema.Properties = props
	t.InputSchema.Required = slices.DeleteFunc(slices.Clone(t.InputSchema.Required), func(r string) bool { return slices.Contains(names, r) })
	return t
}
