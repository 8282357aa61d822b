package slackapp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/ctalk/ctalk"
)

// envelope is what the events URL receives: the URL's verification, or an
// event of the workspace.
type envelope struct {
	Type      string `json:"type"`
	Challenge string `json:"challenge"`
	TeamID    string `json:"team_id"`
	EventID   string `json:"event_id"`
	Event     struct {
		Type        string `json:"type"`
		ChannelType string `json:"channel_type"`
		Channel     string `json:"channel"`
		User        string `json:"user"`
		Text        string `json:"text"`
		ThreadTS    string `json:"thread_ts"`
		BotID       string `json:"bot_id"`
		Subtype     string `json:"subtype"`
	} `json:"event"`
}

// Events serves the events URL: Slack's verification of the URL
// (url_verification, answered with its challenge) and the message.im
// events of the DMs. A reply in the thread of a question's DM, by the
// linked person the question was sent to, becomes a proposed draft of its
// answer, never an approval. Signed and accepted once (by event_id) as
// Interactions' requests are; an event Slack sends again is answered 200
// and ignored. A request refused is returned as its error, with nothing
// written: EInvalid, EUnauthorized (not signed so).
func (s *Service) Events(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	var env envelope
	if err == nil && json.Unmarshal(body, &env) != nil {
		err = ctalk.Errorf(ctalk.EInvalid, "the request is not an event")
	}
	var a *app
	if err == nil {
		a, err = s.signedApp(r.Context(), r.Header, body, env.TeamID)
	}
	if err != nil {
		return err
	}
	if env.Type == "url_verification" {
		w.Header().Set("Content-Type", "text/plain")
		_, err := w.Write([]byte(env.Challenge))
		return err
	}
	if env.Type == "event_callback" && env.EventID != "" && s.accept(r.Context(), "e:"+a.TeamID+":"+env.EventID) == nil {
		ctx, cancel := context.WithTimeout(ctalk.WithOrg(r.Context(), a.OrgID), answerWithin)
		defer cancel()
		s.replied(ctx, a, &env)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// replied makes a person's reply in the thread of a question's DM a draft
// of its answer, and tells them so, or why not.
func (s *Service) replied(ctx context.Context, a *app, env *envelope) {
	e := env.Event
	if e.Type != "message" || e.ChannelType != "im" || e.ThreadTS == "" || e.BotID != "" || e.Subtype != "" || e.User == "" {
		return
	}
	msgID, recipient, err := s.threadOf(ctx, a.OrgID, e.Channel, e.ThreadTS)
	if err != nil || msgID == "" {
		return
	}
	userID, err := s.member(ctx, a, e.User)
	if err != nil {
		return
	}
	if userID == "" || userID != recipient {
		s.ephemeral(a, e.Channel, e.User, "Nothing was done: only the linked person this question was sent to can propose its answer here.")
		return
	}
	c := ctalk.Caller{OrgID: a.OrgID, UserID: userID}
	d, _, err := s.svc.Inbox.Propose(ctx, c, msgID, unescape(e.Text))
	if err != nil {
		s.ephemeral(a, e.Channel, e.User, "Nothing was done: "+ctalk.ErrorMessage(err))
		return
	}
	s.ephemeral(a, e.Channel, e.User, fmt.Sprintf("Saved as draft version %d of your answer; nothing is sent until you approve it.", d.Version))
}

// threadOf is the question, and its recipient, of the DM at ts.
func (s *Service) threadOf(ctx context.Context, orgID, channel, ts string) (msgID, userID string, err error) {
	err = s.db.QueryRow(ctx, threadMessageSQL, orgID, channel, ts).Scan(&msgID, &userID)
	if err != nil {
		return "", "", nil
	}
	return msgID, userID, nil
}

// unescape is a message's text as typed: Slack escapes &, < and >.
func unescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}
