// Package scim is ctalk's SCIM 2.0 service provider (RFC 7643, RFC 7644):
// an organization's identity provider (Okta, Microsoft Entra ID, any
// other SCIM client) creates, updates, deactivates and deletes its members
// at /scim/v2 with a bearer token an admin made in the web app. The org
// always comes from the token. Deactivating or deleting a member is a
// departure (usecase.Departures): every credential of theirs ends on every
// replica, with what it holds open, and the questions waiting for them go
// back to their askers declined.
//
// The package owns the tables scim_tokens and scim_users; the members
// themselves are orgs'.
package scim

import (
	"log/slog"

	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/channels"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/usecase"
)

// Services are what the SCIM service calls.
type Services struct {
	Orgs *orgs.Service
	// Channels holds the channels that groups are.
	Channels   *channels.Service
	Departures *usecase.Departures
	// Audit records every SCIM call; nil records none.
	Audit *audit.Log
}

// Service serves SCIM for every org and keeps their SCIM tokens.
type Service struct {
	db         *db.DB
	orgs       *orgs.Service
	channels   *channels.Service
	departures *usecase.Departures
	audit      *audit.Log
	log        *slog.Logger
}

// New returns the SCIM service over d.
func New(d *db.DB, s Services, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{db: d, orgs: s.Orgs, channels: s.Channels, departures: s.Departures, audit: s.Audit, log: log}
}
