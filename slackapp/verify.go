package slackapp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/slack-go/slack"

	"github.com/ctalk/ctalk"
)

// The routes Slack calls: the interactivity URL (buttons, modals) and the
// events URL (replies in the DM). Both are signed by Slack rather than
// protected by CSRF tokens.
const (
	InteractionsPath = "/slack/interactions"
	EventsPath       = "/slack/events"
)

// signatureWindow is how far a request's timestamp may be from now
// (slack.NewSecretsVerifier's window); replays within it are refused by
// their payload's id.
const signatureWindow = 5 * time.Minute

// maxBody bounds what Slack may post, as api's body limit does.
const maxBody = 1 << 20

// answerWithin bounds the work done before answering Slack, which waits 3
// seconds (and a trigger_id lives as long).
const answerWithin = 2500 * time.Millisecond

// readBody is the raw body of r, which the signature covers; EInvalid when
// it is too long, or the body limit's own error.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("read the request: %w", err)
	}
	if len(body) > maxBody {
		return nil, ctalk.Errorf(ctalk.EInvalid, "the request is too long")
	}
	return body, nil
}

// verified says whether the request with header and body is signed with
// secret as Slack signs: v0= and the hex HMAC-SHA256 of
// "v0:timestamp:body", with a timestamp within signatureWindow of now,
// compared in constant time.
func verified(header http.Header, body []byte, secret string) bool {
	v, err := slack.NewSecretsVerifier(header, secret)
	if err != nil {
		return false
	}
	if _, err := v.Write(body); err != nil {
		return false
	}
	return v.Ensure() == nil
}

// signedApp is the connected app that signed the request: the app of
// teamID, or, for the events URL's verification which names no
// workspace, whichever app's secret verifies it. ENotFound (said as
// unauthorized) otherwise.
func (s *Service) signedApp(ctx context.Context, header http.Header, body []byte, teamID string) (*app, error) {
	// The app's org is what this finds out.
	ctx = ctalk.AsOperator(ctx, "Slack app lookup by workspace")
	var candidates []*app
	if teamID != "" {
		a, err := s.appOfTeam(ctx, teamID)
		if err != nil && ctalk.ErrorCode(err) != ctalk.ENotFound {
			return nil, err
		}
		if a != nil {
			candidates = []*app{a}
		}
	} else {
		var err error
		if candidates, err = s.apps(ctx); err != nil {
			return nil, err
		}
	}
	for _, a := range candidates {
		if verified(header, body, a.secret) {
			return a, nil
		}
	}
	return nil, ctalk.Errorf(ctalk.EUnauthorized, "the request is not signed by a connected Slack app, or its timestamp is more than 5 minutes off")
}
