package slackapp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/slack-go/slack"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/usecase"
)

// press is one verified interaction, by the person linked to its Slack
// user.
type press struct {
	app    *app
	cb     *slack.InteractionCallback
	caller ctalk.Caller
}

// Interactions serves the interactivity URL: a button pressed or a modal
// submitted in the org's Slack. The request must be signed by the app of
// the workspace it names, within 5 minutes, and is accepted once (by its
// trigger_id); the presser must be linked, and is then acted for as the
// person they are in ctalk, whose decisions go through usecase.Answers as
// the web app's do. Refusals of the presser are ephemeral messages only
// they see. A request refused before is returned as its error, with
// nothing written: EInvalid, EUnauthorized (not signed so), EConflict (a
// replay).
func (s *Service) Interactions(w http.ResponseWriter, r *http.Request) error {
	p, err := s.verifiedPress(r)
	if err != nil {
		return err
	}
	if p == nil {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctalk.WithOrg(r.Context(), p.caller.OrgID), answerWithin)
	defer cancel()
	switch p.cb.Type {
	case slack.InteractionTypeBlockActions:
		s.pressed(ctx, p)
		w.WriteHeader(http.StatusOK)
	case slack.InteractionTypeViewSubmission:
		s.submitted(ctx, w, p)
	default:
		w.WriteHeader(http.StatusOK)
	}
	return nil
}

// verifiedPress decodes, verifies and accepts the interaction of r; nil,
// without error, when its presser is not linked (told so).
func (s *Service) verifiedPress(r *http.Request) (*press, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(body))
	cb := &slack.InteractionCallback{}
	if err != nil || json.Unmarshal([]byte(form.Get("payload")), cb) != nil {
		return nil, ctalk.Errorf(ctalk.EInvalid, "the request carries no interaction payload")
	}
	ctx := r.Context()
	a, err := s.signedApp(ctx, r.Header, body, cb.Team.ID)
	if err != nil {
		return nil, err
	}
	if cb.TriggerID == "" {
		return nil, ctalk.Errorf(ctalk.EInvalid, "the interaction has no trigger_id")
	}
	// The rest acts in the verified app's org (see ctalk.WithOrg).
	ctx = ctalk.WithOrg(ctx, a.OrgID)
	if err := s.accept(ctx, "i:"+a.TeamID+":"+cb.TriggerID); err != nil {
		return nil, err
	}
	userID, err := s.member(ctx, a, cb.User.ID)
	if err != nil {
		return nil, err
	}
	if userID == "" {
		s.ephemeral(a, channelOf(cb), cb.User.ID, "Your Slack account is not linked to a ctalk account of this organization, so ctalk does nothing for it. Link it from your ctalk profile.")
		return nil, nil
	}
	return &press{app: a, cb: cb, caller: ctalk.Caller{OrgID: a.OrgID, UserID: userID}}, nil
}

// member is the member of a's org linked to the Slack user, or "" when
// none is: not linked, or removed from the org since.
func (s *Service) member(ctx context.Context, a *app, slackUserID string) (string, error) {
	userID, err := s.linkedUser(ctx, a.OrgID, a.TeamID, slackUserID)
	if err != nil || userID == "" {
		return "", err
	}
	if _, _, err := s.svc.Orgs.Member(ctx, a.OrgID, userID); err != nil {
		if ctalk.ErrorCode(err) == ctalk.ENotFound {
			return "", nil
		}
		return "", err
	}
	return userID, nil
}

// channelOf is the channel the interaction came from.
func channelOf(cb *slack.InteractionCallback) string {
	if cb.Container.ChannelID != "" {
		return cb.Container.ChannelID
	}
	return cb.Channel.ID
}

// pressed acts on a button: approve at once; open the modal of the other
// decisions, once the presser is known to be the question's recipient.
func (s *Service) pressed(ctx context.Context, p *press) {
	if len(p.cb.ActionCallback.BlockActions) == 0 {
		return
	}
	act := p.cb.ActionCallback.BlockActions[0]
	if act.ActionID == actOpen {
		return
	}
	msgID, version, err := parseValue(act.Value)
	if err == nil {
		err = s.mayDecide(ctx, p, msgID)
	}
	if err == nil && act.ActionID == actApprove {
		err = s.decide(ctx, p, usecase.Decision{Kind: usecase.Approve, MessageID: msgID, Version: version})
	} else if err == nil {
		err = s.openModal(ctx, p, act.ActionID, msgID, version)
	}
	if err != nil {
		s.ephemeral(p.app, channelOf(p.cb), p.cb.User.ID, "Nothing was done: "+ctalk.ErrorMessage(err))
	}
}

// mayDecide refuses a decision in Slack where the org asks for a passkey
// for every approval, and on a question not sent to the presser (not
// found, whoever they are).
func (s *Service) mayDecide(ctx context.Context, p *press, msgID string) error {
	org, err := s.svc.Orgs.Org(ctx, p.caller.OrgID)
	if err != nil {
		return err
	}
	if org.ApprovalFactor == orgs.FactorPasskey {
		return ctalk.Errorf(ctalk.EForbidden, "your organization asks for a passkey for every decision, which Slack cannot ask for: open the question in ctalk")
	}
	_, err = s.svc.Inbox.Review(ctx, p.caller, msgID)
	return err
}

// decide carries out d for the presser through the use case every door
// calls, and records it in the org's audit log as made in Slack by the
// linked Slack user.
func (s *Service) decide(ctx context.Context, p *press, d usecase.Decision) error {
	start := time.Now()
	d.Door = Door
	_, err := s.svc.Answers.Decide(ctx, p.caller, d)
	s.audit(p.caller, "slack:"+string(d.Kind), start, err, d.MessageID)
	return err
}

// audit records an action taken in Slack: never its text.
func (s *Service) audit(c ctalk.Caller, tool string, start time.Time, err error, msgID string) {
	if s.svc.Audit == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = string(ctalk.ErrorCode(err))
	}
	s.svc.Audit.Record(audit.Event{At: start.UTC(), OrgID: c.OrgID, UserID: c.UserID, Tool: tool, Outcome: outcome,
		DurationMS: float64(time.Since(start).Microseconds()) / 1000, IDs: []string{msgID}, Factor: audit.FactorSlackUser})
}

// ephemeral tells the Slack user something only they see, in the
// background: the answer to Slack does not wait for it.
func (s *Service) ephemeral(a *app, channel, slackUserID, text string) {
	if channel == "" {
		return
	}
	s.background(a.OrgID, 10*time.Second, func(ctx context.Context) {
		err := s.call(ctx, "telling the presser", func() error {
			_, err := s.client(a.token).PostEphemeralContext(ctx, channel, slackUserID, slack.MsgOptionText(text, false))
			return err
		})
		if err != nil {
			s.log.Warn("slack: ephemeral message not sent", "org", a.OrgID, "error", err)
		}
	})
}
