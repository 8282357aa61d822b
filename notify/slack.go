package notify

import (
	"context"

	"github.com/ctalk/ctalk/db"
)

// ChannelSlack is the Slack DM of a person who linked their Slack user
// (package slackapp): a question or a draft waiting for them, with the
// buttons to decide there. Linking is the choice: it goes whatever the
// person's channels say, but not while they paused everything.
const ChannelSlack = "slack"

// SlackNotice is what the Slack channel is asked to send: one event to
// the person it is for. EventID names the notification, so that a delivery
// sent again sends one DM (at least once, de-duplicated by the event).
type SlackNotice struct {
	EventID string
	Kind    Kind
	OrgID   string
	UserID  string
	// Subject is the question's message id; Actor its asker.
	Subject, Actor string
	// Link is the path of the question's page in the app.
	Link string
}

// SlackSender sends the Slack channel's DMs. Send returns nil when there
// is nothing to send any more (the person unlinked, the question was
// decided), an error when it may pass later.
type SlackSender interface {
	Send(ctx context.Context, n SlackNotice) error
}

// SetSlack makes sender the Slack channel's; before, no event goes to
// Slack.
func (s *Service) SetSlack(sender SlackSender) { s.slack.Store(&sender) }

// SlackLinkChanged makes a person's Slack link, made or ended, take effect
// on where their notifications go, on every replica.
func (s *Service) SlackLinkChanged(ctx context.Context, orgID, userID string) {
	s.reachChanged(ctx, orgID, userID)
}

// slackKind says which kinds go to Slack: the ones a person decides on.
func slackKind(k Kind) bool { return k == KindQuestion || k == KindDraft }

// sendSlack sends a Slack delivery through the sender SetSlack set.
func (s *Service) sendSlack(ctx context.Context, d *delivery) error {
	sender := s.slack.Load()
	if sender == nil {
		return permanent("Slack is not set up on this server")
	}
	e := d.Event
	return (*sender).Send(ctx, SlackNotice{EventID: e.ID, Kind: e.Kind, OrgID: e.OrgID, UserID: e.UserID, Subject: e.Subject, Actor: e.Actor, Link: e.Link})
}

// slackLinked says whether userID linked a Slack user.
func slackLinked(ctx context.Context, r db.Reader, orgID, userID string) (bool, error) {
	var n int
	err := r.QueryRow(ctx, `SELECT COUNT(*) FROM slack_links WHERE org_id = $1 AND user_id = $2`, orgID, userID).Scan(&n)
	return n > 0, err
}
