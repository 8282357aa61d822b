package slackapp

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/slack-go/slack"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
)

// ConfirmPath is the page of a confirmation link; the token follows.
const ConfirmPath = "/profile/slack/confirm/"

// maxLinkDMs bounds the confirmation DMs a person asks for per LinkTTL.
const maxLinkDMs = 3

// memberID is the shape of a Slack member id (U… or W…).
var memberID = regexp.MustCompile(`^[UW][A-Z0-9]{2,20}$`)

// LinkOf is c's link to a Slack user, nil when none.
func (s *Service) LinkOf(ctx context.Context, c ctalk.Caller) (*Link, error) {
	l := &Link{}
	err := s.db.QueryRow(ctx, linkSQL, c.OrgID, c.UserID).Scan(&l.TeamID, &l.SlackUserID, &l.LinkedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the Slack link: %w", err)
	}
	return l, nil
}

// StartLink sends, from c's org's Slack app, a DM to the Slack member
// slackUserID with a single-use link that links them to c once opened in
// a browser signed in to ctalk as c, within LinkTTL. Only the hash of its
// token is stored. Nothing links anyone by guess: whoever reads that DM
// and is c in ctalk confirms.
//
// Returns EInvalid for an id of the wrong shape, ENotFound when the org
// connected no Slack app, ERateLimited after maxLinkDMs DMs in LinkTTL,
// EUnavailable when Slack cannot be reached or refuses (an unknown member).
func (s *Service) StartLink(ctx context.Context, c ctalk.Caller, slackUserID string) error {
	slackUserID = strings.ToUpper(strings.TrimSpace(slackUserID))
	if !memberID.MatchString(slackUserID) {
		return ctalk.Errorf(ctalk.EInvalid, "a Slack member id looks like U0123ABCD: in Slack, open your profile, then \"⋮\" and \"Copy member ID\"")
	}
	if s.cfg.PublicURL == "" {
		return ctalk.Errorf(ctalk.EUnavailable, "this server has no PUBLIC_URL, so its links cannot be sent")
	}
	a, err := s.appOf(ctx, c.OrgID)
	if err != nil {
		return err
	}
	now := s.db.Now()
	var recent int
	if err := s.db.QueryRow(ctx, recentConfirmsSQL, c.OrgID, c.UserID, now.Add(-LinkTTL)).Scan(&recent); err != nil {
		return fmt.Errorf("count link DMs: %w", err)
	}
	if recent >= maxLinkDMs {
		return ctalk.Errorf(ctalk.ERateLimited, "%d link messages were sent in the last %d minutes; use one of them, or try again later", recent, int(LinkTTL.Minutes()))
	}
	raw, hash := auth.NewToken()
	err = s.db.Write(ctx, func(q db.Querier) error {
		if _, err := q.Exec(ctx, pruneConfirmsSQL, now); err != nil {
			return err
		}
		_, err := q.Exec(ctx, insertConfirmSQL, hash, c.OrgID, c.UserID, a.TeamID, slackUserID, now, now.Add(LinkTTL))
		return err
	})
	if err != nil {
		return fmt.Errorf("store the link confirmation: %w", err)
	}
	link := strings.TrimRight(s.cfg.PublicURL, "/") + ConfirmPath + raw
	text := "Someone signed in to ctalk asked to link this Slack account to theirs. If it was you, open this link in the browser where you are signed in to ctalk, within 15 minutes: " + link + "\nIf it was not you, ignore this message: nothing is linked until the link is opened by that ctalk account."
	return s.dm(ctx, a, slackUserID, slack.MsgOptionText(text, false), slack.MsgOptionDisableLinkUnfurl())
}

// dm opens the DM with slackUserID and posts the options there, returning
// EUnavailable when Slack cannot be reached or refuses.
func (s *Service) dm(ctx context.Context, a *app, slackUserID string, opts ...slack.MsgOption) error {
	_, _, err := s.post(ctx, a, slackUserID, opts...)
	return err
}

// post opens the DM with slackUserID and posts the options there,
// returning the channel and the message's ts.
func (s *Service) post(ctx context.Context, a *app, slackUserID string, opts ...slack.MsgOption) (channel, ts string, err error) {
	api := s.client(a.token)
	err = s.call(ctx, "opening the DM", func() error {
		ch, _, _, err := api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{slackUserID}})
		if err == nil {
			channel = ch.ID
		}
		return err
	})
	if err == nil {
		err = s.call(ctx, "posting the DM", func() (err error) {
			_, ts, err = api.PostMessageContext(ctx, channel, opts...)
			return err
		})
	}
	if err != nil && ctalk.ErrorCode(err) == ctalk.EInternal {
		s.log.Warn("slack: DM not sent", "org", a.OrgID, "error", err)
		return "", "", ctalk.Errorf(ctalk.EUnavailable, "Slack did not take the message; check the member id and that the app is installed in the workspace")
	}
	return channel, ts, err
}

// PendingLink checks, changing nothing, that raw is the token of a
// confirmation DM sent for c, unused and unexpired. Returns ENotFound.
func (s *Service) PendingLink(ctx context.Context, c ctalk.Caller, raw string) error {
	var n int
	if auth.WellFormed(raw) {
		err := s.db.QueryRow(ctx, pendingConfirmSQL, auth.HashToken(raw), c.OrgID, c.UserID, s.db.Now()).Scan(&n)
		if err != nil {
			return fmt.Errorf("read the link confirmation: %w", err)
		}
	}
	if n == 0 {
		return ctalk.Errorf(ctalk.ENotFound, "this link is not valid: it was used, it expired, or it was sent for someone else")
	}
	return nil
}

// ConfirmLink links c to the Slack member of the confirmation DM whose
// token is raw, and uses the token up.
//
// Returns ENotFound for a token that is not c's, used or expired,
// EConflict when that Slack member is linked to another person.
func (s *Service) ConfirmLink(ctx context.Context, c ctalk.Caller, raw string) error {
	if !auth.WellFormed(raw) {
		return ctalk.Errorf(ctalk.ENotFound, "this link is not valid: it was used, it expired, or it was sent for someone else")
	}
	var teamID, slackUserID string
	err := s.db.Tx(ctx, func(q db.Querier) error {
		now := s.db.Now()
		err := q.QueryRow(ctx, takeConfirmSQL, auth.HashToken(raw), c.OrgID, c.UserID, now).Scan(&teamID, &slackUserID)
		if errors.Is(err, sql.ErrNoRows) {
			return ctalk.Errorf(ctalk.ENotFound, "this link is not valid: it was used, it expired, or it was sent for someone else")
		}
		if err != nil {
			return err
		}
		_, err = q.Exec(ctx, insertLinkSQL, c.OrgID, c.UserID, teamID, slackUserID, now)
		if db.IsDuplicate(err) {
			return ctalk.Errorf(ctalk.EConflict, "that Slack member is linked to another person of this organization, who must unlink first")
		}
		return err
	})
	if err != nil {
		return err
	}
	s.linkChanged(ctx, c)
	return nil
}

// Unlink ends c's link to a Slack user, if any: no DM goes there any
// more, and no Slack button acts as c.
func (s *Service) Unlink(ctx context.Context, c ctalk.Caller) error {
	if err := s.exec(ctx, unlinkSQL, c.OrgID, c.UserID); err != nil {
		return fmt.Errorf("unlink Slack: %w", err)
	}
	s.linkChanged(ctx, c)
	return nil
}

// linkChanged tells the notifications where c's now go.
func (s *Service) linkChanged(ctx context.Context, c ctalk.Caller) {
	if s.svc.Notify != nil {
		s.svc.Notify.SlackLinkChanged(ctx, c.OrgID, c.UserID)
	}
}
