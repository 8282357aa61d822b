package notify

import (
	"context"
	"fmt"
	"net/url"
	"strings"
)

// message is what every channel says of an event: a title naming who and
// what, the words as the org lets it carry them, and the link.
type message struct {
	Title string
	Text  string
	// Action says plainly what the person may do about it, and what
	// pressing will do, when that is a decision.
	Action string
	URL    string
}

// person looks a user up in the Directory.
func (s *Service) person(ctx context.Context, orgID, userID string) (name, email string, err error) {
	if s.dir == nil {
		return userID, "", nil
	}
	return s.dir(ctx, orgID, userID)
}

// compose builds the message of an event for its person.
func (s *Service) compose(ctx context.Context, e *storedEvent) (message, error) {
	var org OrgSettings
	if e.org != nil {
		org = *e.org
	} else {
		var err error
		if org, err = orgSettings(ctx, s.db, e.OrgID); err != nil {
			return message{}, err
		}
	}
	actor := e.Actor
	if actor != "" {
		if name, _, err := s.person(ctx, e.OrgID, actor); err == nil && name != "" {
			actor = name
		}
	}
	m := message{Text: cut(org.TextMode, e.Text), URL: s.link(e.Link)}
	switch e.Kind {
	case KindQuestion:
		m.Title = actor + " asks you a question"
	case KindDraft:
		m.Title = "Your agent's answer to " + actor + " waits for your approval"
		m.Action = "Open it to read the draft: approving sends exactly that text to " + actor + " at once; you may also edit it, reject it with a note, or answer yourself."
	case KindPost:
		m.Title = "Your agent's channel post waits for your approval"
		m.Action = "Open it to read the post: approving posts exactly that text at once; you may also edit or reject it."
	case KindAnswered:
		m.Title = actor + " answered your question"
	case KindDeclined:
		m.Title = actor + " declined your question"
	case KindMention:
		m.Title = actor + " mentioned you in a channel"
	case KindUrgent:
		m.Title = actor + " posted an urgent message in a channel of yours"
	case KindReminder:
		m.Title = actor + "'s question still waits for you"
	case KindStillWaiting:
		m.Title = "Your question to " + actor + " still waits for an answer; you may withdraw it or ask someone else"
	case KindForwarded:
		m.Title = actor + " forwarded your question to someone else"
	case KindInfoRequested:
		m.Title = actor + " needs more information before answering your question"
	case KindInfoProvided:
		m.Title = actor + " gave the information you asked for"
	case KindTest:
		m.Title = "A test event from ctalk: this webhook works"
	case KindSecurity:
		m.Title = "A change to how your ctalk account proves it is you"
		m.Text = e.Text // ctalk's own words, naming the change
		m.Action = "If it was not you, sign in, undo it on your profile, and tell an admin of your organization."
	case KindWebhookDisabled:
		m.Title = "A webhook of yours was disabled"
		m.Text = e.Text // the reason and the webhook's host, never the text of a question
	default:
		m.Title = fmt.Sprintf("Something waits for you (%s)", e.Kind)
	}
	return m, nil
}

// link is the absolute URL of an app path.
func (s *Service) link(path string) string {
	if path == "" {
		path = "/"
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return s.cfg.PublicURL + path
}

// host is the host of PublicURL, the right-hand side of Message-IDs.
func (s *Service) host() string {
	if u, err := url.Parse(s.cfg.PublicURL); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	return "ctalk.invalid"
}
