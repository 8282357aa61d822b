// Package migrations embeds ctalk's schema migrations, one folder per engine.
// Both folders carry the same numbered steps so that the engines stay in step.
package migrations

import "embed"

// FS holds postgres/*.sql and sqlite/*.sql.
//
//go:embed postgres/*.sql sqlite/*.sql
var FS embed.FS
