package tools

import (
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// cacheHints are the ttlMs and cacheScope of the list and read results of
// the 2026-07-28 protocol (mcp-go stamps them, and the server info, on
// every such result; results of the earlier era carry neither). What
// depends on the caller is private to them; what does not may be shared.
// Unnamed here, a result asks to be fetched anew each time (ttlMs 0,
// private): the caller's channels (resources/list) and their messages
// (resources/read) change whenever someone posts or joins.
func cacheHints() []server.ServerOption {
	const minute = 60 * 1000
	return []server.ServerOption{
		// Sized to the caller: it changes with their role, which revokes
		// their credentials, or with a new release.
		server.WithMethodCacheHints(mcp.MethodToolsList, 5*minute, mcp.CacheScopePrivate),
		// The same for everyone: the channel template, and the server's
		// versions, capabilities and instructions.
		server.WithMethodCacheHints(mcp.MethodResourcesTemplatesList, 60*minute, mcp.CacheScopePublic),
		server.WithMethodCacheHints(mcp.MethodServerDiscover, 60*minute, mcp.CacheScopePublic),
	}
}
