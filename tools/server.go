// Package tools is ctalk's MCP surface: the tools and resources served at
// /mcp, their registration, the strict decoding of their arguments, and the
// traits each tool declares. It holds no SQL and no HTTP: the domain
// services do the work, and api serves the MCP server over HTTP.
package tools

import (
	"log/slog"
	"sync"
	"time"

	"github.com/ctalk/ctalk/access"

	"github.com/mark3labs/mcp-go/server"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/channels"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/knowledge"
	"github.com/ctalk/ctalk/notify"
	"github.com/ctalk/ctalk/oauth"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/usecase"
)

// Config holds what the tools need to know about their deployment.
type Config struct {
	// Version is shown in the MCP server info.
	Version string
	Logger  *slog.Logger
	// AllowOrgSignup lets anyone call register_organization; when false it
	// needs SignupSecret.
	AllowOrgSignup bool
	SignupSecret   string
	// ProgressEvery is how often a waiting tool sends a progress
	// notification when the client asked for them; zero means 10 s.
	ProgressEvery time.Duration
	// Audit records every tool call; nil records nothing.
	Audit *audit.Log
	// Stop is closed when the server starts draining, ending every wait.
	Stop <-chan struct{}
	// Metrics is where the tool-call series are registered; nil registers
	// them nowhere.
	Metrics prometheus.Registerer
	// Icon is the server's icon, an SVG, shown in the MCP server info;
	// nil shows none.
	Icon []byte
}

// Services are the domain services the tools call.
type Services struct {
	Auth     *auth.Service
	Orgs     *orgs.Service
	Inbox    *inbox.Service
	Channels *channels.Service
	OAuth    *oauth.Service
	Presence *orgs.Presence
	// Access invites people by email.
	Access *access.Service
	// Notify holds how people are notified outside ctalk.
	Notify *notify.Service
	// Knowledge holds the answers people shared with their org.
	Knowledge *knowledge.Service
	// Answers decides and sends answers, for send_response as for the
	// web app.
	Answers *usecase.Answers
	// Departures removes members, declining what waits for them.
	Departures *usecase.Departures
}

// Server is ctalk's MCP server: every tool and resource, registered on an
// mcp-go server that api serves at /mcp.
type Server struct {
	cfg      Config
	log      *slog.Logger
	auth     *auth.Service
	orgs     *orgs.Service
	inbox    *inbox.Service
	channels *channels.Service
	oauth    *oauth.Service
	presence *orgs.Presence
	access   *access.Service
	notify   *notify.Service
	know     *knowledge.Service
	answers  *usecase.Answers
	departs  *usecase.Departures
	mcp      *server.MCPServer
	metrics  *metrics
	// stop is closed when the server starts draining, ending every wait.
	stop <-chan struct{}
	// tools holds each registered tool's traits by name; it is written
	// only while New registers the tools.
	tools map[string]toolTraits
	// askingOn counts, by MCP session id, the elicitations its calls wait
	// to hear answered (see Asking).
	askingMu sync.Mutex
	askingOn map[string]int
	// callers are whom each session without an owner was last called by.
	callers listCallers
}

// New registers every tool and resource on a new MCP server.
func New(cfg Config, svc Services) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = 10 * time.Second
	}
	s := &Server{cfg: cfg, log: cfg.Logger, auth: svc.Auth, orgs: svc.Orgs, inbox: svc.Inbox, channels: svc.Channels,
		oauth: svc.OAuth, presence: svc.Presence, access: svc.Access, notify: svc.Notify, know: svc.Knowledge, answers: svc.Answers, departs: svc.Departures, stop: cfg.Stop}
	s.mcp = server.NewMCPServer(Name, cfg.Version, append(append(identity(cfg.Icon), cacheHints()...),
		server.WithToolCapabilities(true),
		server.WithResourceCapabilities(true, false),
		server.WithHooks(s.hooks()),
		server.WithInstructions(instructions),
		server.WithRecovery(),
	)...)
	s.metrics = newMetrics(cfg.Metrics)
	s.registerTools()
	s.registerChannelResources()
	return s
}

// MCP is the mcp-go server the tools are registered on, for api to serve.
func (s *Server) MCP() *server.MCPServer { return s.mcp }

// Identified says whether the tool named runs only for an identified caller.
func (s *Server) Identified(tool string) bool { return s.tools[tool].identified }

// CheckSignup enforces ALLOW_ORG_SIGNUP and SIGNUP_SECRET, for the web
// app's sign-up as for register_organization.
//
// Returns EForbidden.
func (s *Server) CheckSignup(secret string) error { return s.checkSignup(secret) }

func (s *Server) draining() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}
