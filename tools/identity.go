package tools

import (
	"encoding/base64"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// How the server names and describes itself: in the MCP server info, in
// its server card and in the registry's server.json (deploy/server.json,
// which a test holds to these).
const (
	// Name is the server info's name.
	Name = "ctalk"
	// RegistryName is the server's name in the MCP registry and on its
	// server card: reverse DNS of the repository it is published from,
	// github.com/ctalk/ctalk.
	RegistryName = "io.github.ctalk/ctalk"
	// Title is the name clients show to people.
	Title = "ctalk"
	// Description says what the server does, in at most the 100 characters
	// the registry and the server card allow.
	Description = "Ask the people of your organization questions through their AI agents, and get their answers back."
)

// identity are the options that name the server: its title, description
// and, when icon (an SVG) is given, its icon as a data URI, which needs no
// host name and so is right behind every address the server answers to.
func identity(icon []byte) []server.ServerOption {
	opts := []server.ServerOption{server.WithTitle(Title), server.WithDescription(Description)}
	if len(icon) > 0 {
		opts = append(opts, server.WithIcons(mcp.Icon{
			Src:      "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(icon),
			MIMEType: "image/svg+xml",
			Sizes:    []string{"any"},
		}))
	}
	return opts
}
