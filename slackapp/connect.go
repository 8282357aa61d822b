package slackapp

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/slack-go/slack"

	"github.com/ctalk/ctalk"
)

// Status is what ctalk shows of an org's Slack app: never its secrets.
type Status struct {
	Connected bool
	TeamID    string
	BotUserID string
}

// Status is the Slack app of c's org, for its admins. Returns EForbidden
// to a member.
func (s *Service) Status(ctx context.Context, c ctalk.Caller) (Status, error) {
	if !c.Admin {
		return Status{}, ctalk.Errorf(ctalk.EForbidden, "only an admin of the organization sees its Slack app")
	}
	a, err := s.appOf(ctx, c.OrgID)
	if ctalk.ErrorCode(err) == ctalk.ENotFound {
		return Status{}, nil
	}
	if err != nil {
		return Status{}, err
	}
	return Status{Connected: true, TeamID: a.TeamID, BotUserID: a.BotUserID}, nil
}

// Connect stores the Slack app of c's org, whose bot token and signing
// secret an admin copied from Slack, after asking Slack (auth.test) which
// workspace the token belongs to. The secrets are kept as they are, since
// ctalk must use them, and never shown again. Connecting another app
// replaces the first; its workspace's people's links stay only if it is
// the same workspace.
//
// Returns EForbidden to a member, EInvalid for secrets of the wrong shape
// or a token Slack refuses, EConflict when another org connected the same
// workspace, EUnavailable when Slack cannot be reached.
func (s *Service) Connect(ctx context.Context, c ctalk.Caller, token, secret string) error {
	if !c.Admin {
		return ctalk.Errorf(ctalk.EForbidden, "only an admin of the organization connects a Slack app")
	}
	token, secret = strings.TrimSpace(token), strings.TrimSpace(secret)
	if !strings.HasPrefix(token, "xoxb-") || len(token) > 255 {
		return ctalk.Errorf(ctalk.EInvalid, "the bot token is the app's \"Bot User OAuth Token\", which starts with xoxb-")
	}
	if len(secret) < 16 || len(secret) > 255 || strings.ContainsAny(secret, " \t\r\n") {
		return ctalk.Errorf(ctalk.EInvalid, "the signing secret is the app's \"Signing Secret\" from its Basic Information page")
	}
	var who *slack.AuthTestResponse
	err := s.call(ctx, "checking the token", func() (err error) {
		who, err = s.client(token).AuthTestContext(ctx)
		return err
	})
	if err != nil {
		if ctalk.ErrorCode(err) == ctalk.EUnavailable {
			return err
		}
		return ctalk.Errorf(ctalk.EInvalid, "Slack refused the bot token (auth.test failed); copy it again from the app's OAuth & Permissions page")
	}
	old, err := s.appOf(ctx, c.OrgID)
	if err != nil && ctalk.ErrorCode(err) != ctalk.ENotFound {
		return err
	}
	err = s.exec(ctx, saveAppSQL, c.OrgID, who.TeamID, who.UserID, token, secret, c.UserID, s.db.Now())
	if err != nil {
		if ctalk.ErrorCode(err) == ctalk.EConflict {
			return ctalk.Errorf(ctalk.EConflict, "another organization connected this Slack workspace; a workspace is connected to one organization")
		}
		return err
	}
	if old != nil && old.TeamID != who.TeamID {
		return s.exec(ctx, deleteOrgLinksSQL, c.OrgID)
	}
	return nil
}

// Disconnect forgets c's org's Slack app and every link of its people.
// Returns EForbidden to a member.
func (s *Service) Disconnect(ctx context.Context, c ctalk.Caller) error {
	if !c.Admin {
		return ctalk.Errorf(ctalk.EForbidden, "only an admin of the organization disconnects its Slack app")
	}
	if err := s.exec(ctx, deleteOrgLinksSQL, c.OrgID); err != nil {
		return err
	}
	return s.exec(ctx, deleteAppSQL, c.OrgID)
}

// Manifest is the app manifest an admin pastes into Slack's "Create an
// app from a manifest", for a server at base (PUBLIC_URL): a bot that may
// write DMs (chat:write, im:write), read its DMs' replies (im:history, for
// the message.im events) and people's names (users:read), with its
// interactivity and events URLs here.
func Manifest(base string) string {
	base = strings.TrimRight(base, "/")
	m := map[string]any{
		"display_information": map[string]any{"name": "ctalk", "description": "Questions from your colleagues' agents, to approve or answer here"},
		"features": map[string]any{
			"bot_user": map[string]any{"display_name": "ctalk", "always_online": false},
			"app_home": map[string]any{"messages_tab_enabled": true, "messages_tab_read_only_enabled": false},
		},
		"oauth_config": map[string]any{"scopes": map[string]any{"bot": []string{"chat:write", "im:write", "im:history", "users:read"}}},
		"settings": map[string]any{
			"interactivity":       map[string]any{"is_enabled": true, "request_url": base + InteractionsPath},
			"event_subscriptions": map[string]any{"request_url": base + EventsPath, "bot_events": []string{"message.im"}},
			"org_deploy_enabled":  false,
			"socket_mode_enabled": false,
		},
	}
	out, _ := json.MarshalIndent(m, "", "  ")
	return string(out)
}

// Connected says whether orgID connected a Slack app, for its people's
// pages.
func (s *Service) Connected(ctx context.Context, orgID string) (bool, error) {
	_, err := s.appOf(ctx, orgID)
	if ctalk.ErrorCode(err) == ctalk.ENotFound {
		return false, nil
	}
	return err == nil, err
}
