package orgs

import (
	"context"
	"fmt"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// Approval modes of an organization: how an answer is approved before it is
// sent.
const (
	// ApprovalAgent lets the answering agent send exactly the latest draft
	// its person approved in the conversation.
	ApprovalAgent = "agent"
	// ApprovalHuman also needs the person to approve each draft in the web
	// app, signed in as the question's recipient.
	ApprovalHuman = "human"
)

// Channel post modes of an organization: whether an agent's channel post
// goes out at once or waits for its person.
const (
	// ChannelPostAgent publishes an agent's post at once, labelled as
	// posted by the agent for its person.
	ChannelPostAgent = "agent"
	// ChannelPostHuman holds an agent's post until its person approves,
	// edits or rejects it in the web app, signed in.
	ChannelPostHuman = "human"
)

// Whether an agent may log in over MCP with its person's password.
const (
	// AgentLoginAllowed lets the login tool take a password (the default).
	AgentLoginAllowed = "allowed"
	// AgentLoginDisabled makes the login tool refuse passwords and say how
	// to connect instead: browser sign-in (OAuth) or a personal token.
	AgentLoginDisabled = "disabled"
)

// Approval factors of an organization: what an approval in the web app
// (approve, edit, answer, decline, reject, and deciding held channel posts)
// needs besides the person's signed-in browser.
const (
	// FactorSession needs only the signed-in browser session.
	FactorSession = "session"
	// FactorPasskey needs a passkey verification of the last few minutes
	// in that session (auth.PasskeyFresh), asked for on the spot.
	FactorPasskey = "passkey"
)

// Settings are an organization's settings as an admin changes them: an
// empty field (nil for RequirePasskey) stays as it is.
type Settings struct {
	ApprovalMode       string
	ChannelPostMode    string
	AgentPasswordLogin string
	ApprovalFactor     string
	RequirePasskey     *bool
}

// weakening is a value of an org setting that takes oversight away from
// people: only a person, in the web app, may choose it; an agent may only
// choose the other, stronger values.
type weakening struct {
	setting string
	weaker  string
	value   func(Settings) string
}

// weakenings lists every weakening, one line per setting.
var weakenings = []weakening{
	{"approval_mode", ApprovalAgent, func(s Settings) string { return s.ApprovalMode }},
	{"channel_post_mode", ChannelPostAgent, func(s Settings) string { return s.ChannelPostMode }},
	{"agent_password_login", AgentLoginAllowed, func(s Settings) string { return s.AgentPasswordLogin }},
	{"approval_factor", FactorSession, func(s Settings) string { return s.ApprovalFactor }},
	{"require_passkey", "false", func(s Settings) string {
		if s.RequirePasskey != nil && !*s.RequirePasskey {
			return "false"
		}
		return ""
	}},
}

// Weakening returns the first setting that in sets to a value weakening
// oversight, with that value, or ok false when in only keeps or strengthens.
// Agents' credentials may not weaken: their callers refuse such a change,
// whatever the org's current value, so that no race with a person's change
// can let one through.
func (in Settings) Weakening() (setting, value string, ok bool) {
	for _, w := range weakenings {
		if w.value(in) == w.weaker {
			return w.setting, w.weaker, true
		}
	}
	return "", "", false
}

// SetApprovalMode sets how answers are approved in orgID: ApprovalAgent or
// ApprovalHuman. The caller must have been authorized as an admin of orgID.
//
// Returns EInvalid, ENotFound.
func (s *Service) SetApprovalMode(ctx context.Context, orgID, mode string) (*Org, error) {
	if mode == "" {
		return nil, ctalk.Errorf(ctalk.EInvalid, "approval_mode is not valid; use \"agent\" or \"human\"")
	}
	return s.SetSettings(ctx, orgID, Settings{ApprovalMode: mode})
}

// SetSettings changes the settings of orgID that in gives, in one
// statement. The caller must have been authorized as an admin of orgID.
//
// Returns EInvalid (also when in changes nothing), ENotFound.
func (s *Service) SetSettings(ctx context.Context, orgID string, in Settings) (*Org, error) {
	if in.ApprovalMode == "" && in.ChannelPostMode == "" && in.AgentPasswordLogin == "" && in.ApprovalFactor == "" && in.RequirePasskey == nil {
		return nil, ctalk.Errorf(ctalk.EInvalid, "give approval_mode, channel_post_mode, agent_password_login, approval_factor, require_passkey or several")
	}
	if in.ApprovalFactor != "" && in.ApprovalFactor != FactorSession && in.ApprovalFactor != FactorPasskey {
		return nil, ctalk.Errorf(ctalk.EInvalid, "approval_factor is not valid; use \"session\" or \"passkey\"")
	}
	if in.ApprovalMode != "" && in.ApprovalMode != ApprovalAgent && in.ApprovalMode != ApprovalHuman {
		return nil, ctalk.Errorf(ctalk.EInvalid, "approval_mode is not valid; use \"agent\" or \"human\"")
	}
	if in.ChannelPostMode != "" && in.ChannelPostMode != ChannelPostAgent && in.ChannelPostMode != ChannelPostHuman {
		return nil, ctalk.Errorf(ctalk.EInvalid, "channel_post_mode is not valid; use \"agent\" or \"human\"")
	}
	if in.AgentPasswordLogin != "" && in.AgentPasswordLogin != AgentLoginAllowed && in.AgentPasswordLogin != AgentLoginDisabled {
		return nil, ctalk.Errorf(ctalk.EInvalid, "agent_password_login is not valid; use \"allowed\" or \"disabled\"")
	}
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		// require_passkey is given as 1 (on), 0 (off) or -1 (unchanged).
		require := -1
		if in.RequirePasskey != nil {
			require = 0
			if *in.RequirePasskey {
				require = 1
			}
		}
		res, err := tx.Exec(ctx, `UPDATE orgs SET approval_mode = COALESCE(NULLIF($1, ''), approval_mode),
			channel_post_mode = COALESCE(NULLIF($2, ''), channel_post_mode),
			agent_password_login = COALESCE(NULLIF($3, ''), agent_password_login),
			approval_factor = COALESCE(NULLIF($5, ''), approval_factor),
			require_passkey = CASE WHEN $6 < 0 THEN require_passkey ELSE $6 = 1 END, settings_saved_at = $7 WHERE id = $4`,
			in.ApprovalMode, in.ChannelPostMode, in.AgentPasswordLogin, orgID, in.ApprovalFactor, require, time.Now().UTC())
		if err != nil {
			return fmt.Errorf("set org settings: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFoundOrg(orgID)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.changed(ctx, orgID, "")
	return s.Org(ctx, orgID)
}

// ChannelPostMode returns whether agents' channel posts in orgID wait for
// their person, read through r so that a caller's transaction reads it with
// its other reads.
func ChannelPostMode(ctx context.Context, r db.Reader, orgID string) (string, error) {
	var mode string
	if err := r.QueryRow(ctx, `SELECT channel_post_mode FROM orgs WHERE id = $1`, orgID).Scan(&mode); err != nil {
		return "", fmt.Errorf("read channel post mode: %w", err)
	}
	return mode, nil
}

// ApprovalMode returns how answers are approved in orgID, read through r so
// that a caller's transaction reads it with its other reads.
func ApprovalMode(ctx context.Context, r db.Reader, orgID string) (string, error) {
	var mode string
	if err := r.QueryRow(ctx, `SELECT approval_mode FROM orgs WHERE id = $1`, orgID).Scan(&mode); err != nil {
		return "", fmt.Errorf("read approval mode: %w", err)
	}
	return mode, nil
}

// ApprovalFactor returns what an approval in the web app needs in orgID
// (FactorSession or FactorPasskey), read through r.
func ApprovalFactor(ctx context.Context, r db.Reader, orgID string) (string, error) {
	var factor string
	if err := r.QueryRow(ctx, `SELECT approval_factor FROM orgs WHERE id = $1`, orgID).Scan(&factor); err != nil {
		return "", fmt.Errorf("read approval factor: %w", err)
	}
	return factor, nil
}
