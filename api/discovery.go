package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ctalk/ctalk/oauth"
	"github.com/ctalk/ctalk/tools"
	"github.com/ctalk/ctalk/web"
)

// Discovery: what a client or a registry reads before it connects (the
// Server Card extension, SEP-2127, and the AI Catalog that points at it),
// and the server's icon.
const (
	// ServerCardPath is where the server card is served: /mcp's URL
	// followed by /server-card, the location the extension reserves.
	ServerCardPath = "/mcp/server-card"
	// WellKnownServerCardPath serves the same card at the .well-known
	// location clients written to the extension's earlier drafts read.
	WellKnownServerCardPath = "/.well-known/mcp/server-card.json"
	// AICatalogPath is the domain's catalog, whose one entry points at the
	// server card.
	AICatalogPath = "/.well-known/ai-catalog.json"
	// IconPath serves the server's icon, an SVG.
	IconPath = "/icon.svg"

	serverCardSchema = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
	serverCardType   = "application/mcp-server-card+json"
	aiCatalogType    = "application/ai-catalog+json"
	// discoveryMeta is the key of the card's _meta under which ctalk says
	// what the card's schema has no field for: the server's capabilities
	// and how a client is authorized.
	discoveryMeta = "io.github.ctalk/discovery"
)

// mountDiscovery adds the server card, the AI Catalog and the icon to e.
func (s *Server) mountDiscovery(e *echo.Echo) {
	for _, path := range []string{ServerCardPath, WellKnownServerCardPath} {
		e.Match([]string{http.MethodGet, http.MethodOptions}, path, s.serverCard)
	}
	e.Match([]string{http.MethodGet, http.MethodOptions}, AICatalogPath, s.aiCatalog)
	icon := web.Icon()
	e.GET(IconPath, func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "public, max-age=86400")
		return c.Blob(http.StatusOK, "image/svg+xml", icon)
	})
}

// serverCard is what a client reads to connect (see ServerCardPath).
type serverCard struct {
	Schema      string         `json:"$schema"`
	Name        string         `json:"name"`
	Version     string         `json:"version"`
	Title       string         `json:"title"`
	Description string         `json:"description"`
	WebsiteURL  string         `json:"websiteUrl"`
	Icons       []mcp.Icon     `json:"icons"`
	Remotes     []cardRemote   `json:"remotes"`
	Meta        map[string]any `json:"_meta"`
}

type cardRemote struct {
	Type                      string       `json:"type"`
	URL                       string       `json:"url"`
	SupportedProtocolVersions []string     `json:"supportedProtocolVersions"`
	Headers                   []cardHeader `json:"headers"`
}

type cardHeader struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	IsRequired  bool   `json:"isRequired"`
	IsSecret    bool   `json:"isSecret"`
}

// cardAuthorization says how a client is authorized at /mcp: by a bearer
// token, which an OAuth client obtains from the authorization server the
// protected resource metadata names.
type cardAuthorization struct {
	ProtectedResourceMetadata string   `json:"protectedResourceMetadata"`
	AuthorizationServers      []string `json:"authorizationServers"`
}

// discoverRequest is the server/discover request the card is built from,
// in the era that has it.
var discoverRequest = json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{` +
	`"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientInfo":{"name":"ctalk-server-card","version":"1"},` +
	`"io.modelcontextprotocol/clientCapabilities":{}}}}`)

// card builds the server card of the server reached at publicURL from what
// the running MCP server says of itself in server/discover: its name,
// version, title, description, icons, protocol versions and capabilities.
func (s *Server) card(ctx context.Context, publicURL string) (*serverCard, error) {
	ctx = server.WithSupportedProtocolVersions(ctx, server.FilterSupportedVersions(s.http))
	msg := s.mcp.HandleMessage(ctx, discoverRequest)
	res, ok := msg.(mcp.JSONRPCResponse)
	if !ok {
		b, _ := json.Marshal(msg)
		return nil, fmt.Errorf("server card: server/discover answered %s", b)
	}
	b, err := json.Marshal(res.Result)
	if err != nil {
		return nil, fmt.Errorf("server card: %w", err)
	}
	var d struct {
		mcp.DiscoverResult
		Meta struct {
			ServerInfo mcp.Implementation `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("server card: %w", err)
	}
	info := d.Meta.ServerInfo
	if info.Name == "" {
		return nil, fmt.Errorf("server card: server/discover named no server: %s", b)
	}
	site := oauth.SiteOf(publicURL)
	return &serverCard{
		Schema:      serverCardSchema,
		Name:        tools.RegistryName,
		Version:     info.Version,
		Title:       info.Title,
		Description: info.Description,
		WebsiteURL:  publicURL,
		Icons:       []mcp.Icon{{Src: publicURL + IconPath, MIMEType: "image/svg+xml", Sizes: []string{"any"}}},
		Remotes: []cardRemote{{
			Type: "streamable-http", URL: site.Resource, SupportedProtocolVersions: d.SupportedVersions,
			Headers: []cardHeader{{
				Name:        "Authorization",
				Description: "Bearer and a ctalk token (a personal token from the web app, or a login token); OAuth clients obtain one by signing the person in.",
				IsSecret:    true,
			}},
		}},
		Meta: map[string]any{discoveryMeta: map[string]any{
			"capabilities": d.Capabilities,
			"authorization": cardAuthorization{
				ProtectedResourceMetadata: site.Issuer + oauth.ResourceMetadataPath,
				AuthorizationServers:      []string{site.Issuer},
			},
		}},
	}, nil
}

func (s *Server) serverCard(c echo.Context) error {
	if discoveryHeaders(c) {
		return nil
	}
	card, err := s.card(c.Request().Context(), s.publicURL(c.Request()))
	if err != nil {
		return err
	}
	return discoveryJSON(c, serverCardType, card)
}

func (s *Server) aiCatalog(c echo.Context) error {
	if discoveryHeaders(c) {
		return nil
	}
	public := s.publicURL(c.Request())
	u, err := url.Parse(public)
	if err != nil {
		return err
	}
	return discoveryJSON(c, aiCatalogType, map[string]any{
		"specVersion": "1.0",
		"entries": []map[string]string{{
			"identifier": "urn:air:" + u.Hostname() + ":mcp:" + tools.Name,
			"type":       serverCardType,
			"url":        public + ServerCardPath,
		}},
	})
}

// discoveryHeaders sets the headers every discovery document carries (any
// origin may read them; caches may keep them an hour) and answers a
// preflight, saying whether it did.
func discoveryHeaders(c echo.Context) bool {
	h := c.Response().Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", "GET")
	h.Set("Access-Control-Allow-Headers", "Content-Type")
	if c.Request().Method == http.MethodOptions {
		c.NoContent(http.StatusNoContent)
		return true
	}
	h.Set("Cache-Control", "public, max-age=3600")
	return false
}

func discoveryJSON(c echo.Context, contentType string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, contentType, b)
}
