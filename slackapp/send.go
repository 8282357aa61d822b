package slackapp

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/links"
	"github.com/ctalk/ctalk/notify"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/usecase"
)

// Send sends the notification n, of a question or a draft waiting for
// its recipient, as a DM from the org's Slack app to the person's linked
// Slack user, unless it was sent already (a delivery sent again sends
// nothing twice), or there is nothing to send any more: no app, no link,
// the question decided. It implements notify.SlackSender; a failure that
// may pass later (Slack unreachable, rate limited) is returned.
func (s *Service) Send(ctx context.Context, n notify.SlackNotice) error {
	if sent, err := s.sentMessage(ctx, n.OrgID, n.EventID); err != nil || sent != nil {
		return err
	}
	c := ctalk.Caller{OrgID: n.OrgID, UserID: n.UserID}
	a, l, err := s.appAndLink(ctx, c)
	if err != nil || a == nil || l == nil {
		return err
	}
	cd, err := s.card(ctx, c, n.Subject)
	if err != nil || cd == nil || !open(cd.Review.Question) {
		return err
	}
	channel, ts, err := s.post(ctx, a, l.SlackUserID, slack.MsgOptionBlocks(cd.blocks()...), slack.MsgOptionText(fallback(cd), false))
	if err != nil {
		return err
	}
	err = s.exec(ctx, insertMessageSQL, n.OrgID, n.EventID, n.Subject, n.UserID, channel, ts, s.db.Now())
	if err != nil {
		return fmt.Errorf("record the Slack message sent: %w", err)
	}
	// A decision made while the DM was on its way found no message to
	// update: settle it, after a grace (see settleLate).
	if cd, err = s.card(ctx, c, n.Subject); err == nil && cd != nil && !open(cd.Review.Question) {
		s.settleLate(usecase.Decided{OrgID: n.OrgID, UserID: n.UserID, MessageID: n.Subject, Kind: closedKind(cd.Review.Question), Door: doorUnknown, At: s.db.Now()})
	}
	return nil
}

// settleLate settles d, a decision Send found made without knowing where,
// once cfg.SettleGrace has passed. A decision made just after the DM was
// stored has its own update under way, which says where it was made (in
// ctalk, by the agent): that one claims the DM first, and settleLate then
// finds nothing left to update. Only a decision whose update ran before
// the DM was stored, and so found nothing, is settled here.
func (s *Service) settleLate(d usecase.Decided) {
	s.background(d.OrgID, s.cfg.SettleGrace+s.cfg.MaxRetryAfter+10*time.Second, func(ctx context.Context) {
		t := time.NewTimer(s.cfg.SettleGrace)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.settle(ctx, d)
	})
}

// appAndLink are c's org's app and c's link; nil, without error, when
// either is missing.
func (s *Service) appAndLink(ctx context.Context, c ctalk.Caller) (*app, *Link, error) {
	a, err := s.appOf(ctx, c.OrgID)
	if ctalk.ErrorCode(err) == ctalk.ENotFound {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	l, err := s.LinkOf(ctx, c)
	return a, l, err
}

// card is the DM of question msgID sent to c, nil when it is not (any
// more) among c's.
func (s *Service) card(ctx context.Context, c ctalk.Caller, msgID string) (*card, error) {
	r, err := s.svc.Inbox.Review(ctx, c, msgID)
	if ctalk.ErrorCode(err) == ctalk.ENotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	org, err := s.svc.Orgs.Org(ctx, c.OrgID)
	if err != nil {
		return nil, err
	}
	return &card{Review: r, Open: links.Question(strings.TrimRight(s.cfg.PublicURL, "/"), msgID), Passkey: org.ApprovalFactor == orgs.FactorPasskey}, nil
}

// doorUnknown is the door of a decision Send found made without knowing
// where: the DM then says what and when only.
const doorUnknown = "?"

// open says whether q still waits for a decision.
func open(q *inbox.Question) bool {
	return q.Status == inbox.StatusPending || q.Status == inbox.StatusNeedsInfo
}

// closedKind is the decision a closed question's status tells of.
func closedKind(q *inbox.Question) usecase.Kind {
	switch q.Status {
	case inbox.StatusDeclined:
		return usecase.Decline
	case inbox.StatusWithdrawn:
		return kindWithdrawn
	}
	return usecase.Send
}

// fallback is the DM's text where blocks do not show (notifications).
func fallback(c *card) string {
	if d := c.Review.Latest(); d != nil && !d.Rejected {
		return c.Review.Sender.Name + "'s question waits for your approval of a draft"
	}
	return c.Review.Sender.Name + " asks you a question"
}

// decided updates, in the background, the DMs of the question d decided,
// wherever it was decided: what was decided, where and when, and no more
// buttons. It is called by usecase.Answers after every decision.
func (s *Service) decided(_ context.Context, d usecase.Decided) {
	s.background(d.OrgID, s.cfg.MaxRetryAfter+10*time.Second, func(ctx context.Context) { s.settle(ctx, d) })
}

// Kinds of the DM's end that are no decision of the recipient's.
const (
	kindWithdrawn usecase.Kind = "withdrawn"
	kindForwarded usecase.Kind = "forwarded"
)

// left updates, in the background, the recipient's DMs of a question
// withdrawn or forwarded.
func (s *Service) left(ctx context.Context, l inbox.Left) {
	kind := kindWithdrawn
	if l.How == inbox.Forwarded {
		kind = kindForwarded
	}
	s.decided(ctx, usecase.Decided{OrgID: l.OrgID, UserID: l.RecipientID, MessageID: l.MessageID, Kind: kind, Door: doorUnknown, At: s.db.Now()})
}

// settle updates the DMs of d's question to its recipient (d.UserID) not
// yet updated, logging what fails: the decision stands whatever Slack
// says.
func (s *Service) settle(ctx context.Context, d usecase.Decided) {
	msgs, err := s.openMessages(ctx, d.OrgID, d.MessageID)
	if err != nil || len(msgs) == 0 {
		if err != nil {
			s.log.Warn("slack: cannot read the messages to update", "error", err)
		}
		return
	}
	a, err := s.appOf(ctx, d.OrgID)
	if err != nil {
		return
	}
	for _, m := range msgs {
		if m.UserID != d.UserID {
			continue
		}
		if err := s.update(ctx, a, m, d); err != nil {
			s.log.Warn("slack: message not updated", "org", d.OrgID, "message_id", d.MessageID, "error", err)
		}
	}
}

// update rewrites the DM m as decided by d, once: it marks m first, so
// that of two updates at once (a decision, and a DM sent as it was made)
// one writes, and unmarks it when Slack did not take the update.
func (s *Service) update(ctx context.Context, a *app, m *message, d usecase.Decided) error {
	claimed, err := s.claim(ctx, m)
	if err != nil || !claimed {
		return err
	}
	if err := s.rewrite(ctx, a, m, d); err != nil {
		if uerr := s.exec(ctx, unsettleMessageSQL, m.OrgID, m.EventID); uerr != nil {
			s.log.Warn("slack: cannot unmark a message not updated", "error", uerr)
		}
		return err
	}
	return nil
}

// claim marks m as updated; false when another update marked it first.
func (s *Service) claim(ctx context.Context, m *message) (bool, error) {
	var n int64
	err := s.db.Write(ctx, func(q db.Querier) error {
		res, err := q.Exec(ctx, settleMessageSQL, s.db.Now(), m.OrgID, m.EventID)
		if err == nil {
			n, err = res.RowsAffected()
		}
		return err
	})
	return n == 1, err
}

// rewrite has Slack rewrite the DM m as decided by d.
func (s *Service) rewrite(ctx context.Context, a *app, m *message, d usecase.Decided) error {
	cd, err := s.card(ctx, ctalk.Caller{OrgID: m.OrgID, UserID: m.UserID}, m.MessageID)
	if err != nil {
		return err
	}
	opts := []slack.MsgOption{slack.MsgOptionText(strings.TrimPrefix(decidedText(d), "✓ "), false)}
	if cd != nil {
		opts = append(opts, slack.MsgOptionBlocks(settled(*cd, d)...))
	} else {
		opts = append(opts, slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, decidedText(d), false, false), nil, nil)))
	}
	return s.call(ctx, "updating the DM", func() error {
		_, _, _, err := s.client(a.token).UpdateMessageContext(ctx, m.ChannelID, m.TS, opts...)
		return err
	})
}
