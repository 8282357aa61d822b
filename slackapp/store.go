package slackapp

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// app is an org's Slack app, secrets included: never shown, logged or
// audited.
type app struct {
	OrgID, TeamID, BotUserID string
	token, secret            string
}

// Link is a person's confirmed link to their Slack user.
type Link struct {
	TeamID      string
	SlackUserID string
	LinkedAt    time.Time
}

// message is a DM sent for a notification of a question.
type message struct {
	OrgID, EventID, MessageID, UserID, ChannelID, TS string
}

const (
	appSQL       = `SELECT org_id, team_id, bot_user_id, bot_token, signing_secret FROM slack_apps WHERE org_id = $1`
	appByTeamSQL = `SELECT org_id, team_id, bot_user_id, bot_token, signing_secret FROM slack_apps WHERE team_id = $1`
	appsSQL      = `SELECT org_id, team_id, bot_user_id, bot_token, signing_secret FROM slack_apps ORDER BY org_id LIMIT 1000`
	saveAppSQL   = `INSERT INTO slack_apps (org_id, team_id, bot_user_id, bot_token, signing_secret, updated_by, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (org_id) DO UPDATE SET team_id = excluded.team_id, bot_user_id = excluded.bot_user_id,
		bot_token = excluded.bot_token, signing_secret = excluded.signing_secret, updated_by = excluded.updated_by, updated_at = excluded.updated_at`
	deleteAppSQL      = `DELETE FROM slack_apps WHERE org_id = $1`
	deleteOrgLinksSQL = `DELETE FROM slack_links WHERE org_id = $1`
	linkSQL           = `SELECT team_id, slack_user_id, linked_at FROM slack_links WHERE org_id = $1 AND user_id = $2`
	linkedUserSQL     = `SELECT user_id FROM slack_links WHERE org_id = $1 AND team_id = $2 AND slack_user_id = $3`
	unlinkSQL         = `DELETE FROM slack_links WHERE org_id = $1 AND user_id = $2`
	insertConfirmSQL  = `INSERT INTO slack_link_confirmations (token_hash, org_id, user_id, team_id, slack_user_id, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`
	recentConfirmsSQL = `SELECT COUNT(*) FROM slack_link_confirmations WHERE org_id = $1 AND user_id = $2 AND created_at > $3`
	takeConfirmSQL    = `DELETE FROM slack_link_confirmations WHERE token_hash = $1 AND org_id = $2 AND user_id = $3 AND expires_at > $4
		RETURNING team_id, slack_user_id`
	pendingConfirmSQL = `SELECT COUNT(*) FROM slack_link_confirmations WHERE token_hash = $1 AND org_id = $2 AND user_id = $3 AND expires_at > $4`
	pruneConfirmsSQL  = `DELETE FROM slack_link_confirmations WHERE expires_at <= $1`
	insertLinkSQL     = `INSERT INTO slack_links (org_id, user_id, team_id, slack_user_id, linked_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (org_id, user_id) DO UPDATE SET team_id = excluded.team_id, slack_user_id = excluded.slack_user_id, linked_at = excluded.linked_at`
	messageSentSQL     = `SELECT channel_id, ts FROM slack_messages WHERE org_id = $1 AND event_id = $2`
	insertMessageSQL   = `INSERT INTO slack_messages (org_id, event_id, message_id, user_id, channel_id, ts, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`
	openMessagesSQL    = `SELECT org_id, event_id, message_id, user_id, channel_id, ts FROM slack_messages WHERE org_id = $1 AND message_id = $2 AND settled_at IS NULL`
	settleMessageSQL   = `UPDATE slack_messages SET settled_at = $1 WHERE org_id = $2 AND event_id = $3 AND settled_at IS NULL`
	unsettleMessageSQL = `UPDATE slack_messages SET settled_at = NULL WHERE org_id = $1 AND event_id = $2`
	threadMessageSQL   = `SELECT message_id, user_id FROM slack_messages WHERE org_id = $1 AND channel_id = $2 AND ts = $3`
	acceptPayloadSQL   = `INSERT INTO slack_payloads (id, received_at) VALUES ($1, $2)`
	prunePayloadsSQL   = `DELETE FROM slack_payloads WHERE received_at < $1`
)

func scanApp(r *db.Row) (*app, error) {
	a := &app{}
	err := r.Scan(&a.OrgID, &a.TeamID, &a.BotUserID, &a.token, &a.secret)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ctalk.Errorf(ctalk.ENotFound, "this organization has not connected a Slack app")
	}
	if err != nil {
		return nil, fmt.Errorf("read the Slack app: %w", err)
	}
	return a, nil
}

// appOf is orgID's Slack app. Returns ENotFound when it has none.
func (s *Service) appOf(ctx context.Context, orgID string) (*app, error) {
	return scanApp(s.db.QueryRow(ctx, appSQL, orgID))
}

// appOfTeam is the Slack app of the workspace teamID. Returns ENotFound.
func (s *Service) appOfTeam(ctx context.Context, teamID string) (*app, error) {
	return scanApp(s.db.QueryRow(ctx, appByTeamSQL, teamID))
}

// apps are the connected apps, for the one request that names no
// workspace (the events URL's verification).
func (s *Service) apps(ctx context.Context) ([]*app, error) {
	rows, err := s.db.Query(ctx, appsSQL)
	if err != nil {
		return nil, fmt.Errorf("read the Slack apps: %w", err)
	}
	defer rows.Close()
	var out []*app
	for rows.Next() {
		a := &app{}
		if err := rows.Scan(&a.OrgID, &a.TeamID, &a.BotUserID, &a.token, &a.secret); err != nil {
			return nil, fmt.Errorf("read the Slack apps: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// linkedUser is the ctalk user of orgID linked to the Slack user, or "".
func (s *Service) linkedUser(ctx context.Context, orgID, teamID, slackUserID string) (string, error) {
	var userID string
	err := s.db.QueryRow(ctx, linkedUserSQL, orgID, teamID, slackUserID).Scan(&userID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the Slack link: %w", err)
	}
	return userID, nil
}

// exec runs one write.
func (s *Service) exec(ctx context.Context, query string, args ...any) error {
	return s.db.Write(ctx, func(q db.Querier) error {
		_, err := q.Exec(ctx, query, args...)
		return err
	})
}

// accept records the signed payload id as accepted: EConflict when it was
// already, a replay. Rows older than the signatures' window are pruned.
func (s *Service) accept(ctx context.Context, id string) error {
	now := s.db.Now()
	err := s.db.Write(ctx, func(q db.Querier) error {
		if _, err := q.Exec(ctx, prunePayloadsSQL, now.Add(-2*signatureWindow)); err != nil {
			return err
		}
		_, err := q.Exec(ctx, acceptPayloadSQL, id, now)
		return err
	})
	if db.IsDuplicate(err) {
		return ctalk.Errorf(ctalk.EConflict, "this request from Slack was already accepted")
	}
	return err
}

// sentMessage is the DM sent for eventID, nil when none was.
func (s *Service) sentMessage(ctx context.Context, orgID, eventID string) (*message, error) {
	m := &message{OrgID: orgID, EventID: eventID}
	err := s.db.QueryRow(ctx, messageSentSQL, orgID, eventID).Scan(&m.ChannelID, &m.TS)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return m, err
}

// openMessages are the DMs of question msgID not yet updated as decided.
func (s *Service) openMessages(ctx context.Context, orgID, msgID string) ([]*message, error) {
	rows, err := s.db.Query(ctx, openMessagesSQL, orgID, msgID)
	if err != nil {
		return nil, fmt.Errorf("read the Slack messages: %w", err)
	}
	defer rows.Close()
	var out []*message
	for rows.Next() {
		m := &message{}
		if err := rows.Scan(&m.OrgID, &m.EventID, &m.MessageID, &m.UserID, &m.ChannelID, &m.TS); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}
