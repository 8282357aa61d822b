package slackapp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slack-go/slack"

	"github.com/ctalk/ctalk"
)

// client is a Slack Web API client with token, through the guarded HTTP
// client, at the configured API URL.
func (s *Service) client(token string) *slack.Client {
	return slack.New(token, slack.OptionAPIURL(s.cfg.APIURL), slack.OptionHTTPClient(s.cfg.HTTP))
}

// call runs fn, and again after the wait Slack asks for when it says the
// app is rate limited (Retry-After), up to MaxRetryAfter in all; beyond,
// or when ctx ends first, it returns EUnavailable, for the caller's own
// retry (the outbox's backoff). Other failures are wrapped as said.
func (s *Service) call(ctx context.Context, what string, fn func() error) error {
	var waited time.Duration
	for {
		err := fn()
		var limited *slack.RateLimitedError
		if !errors.As(err, &limited) {
			if err != nil {
				return fmt.Errorf("slack %s: %w", what, err)
			}
			return nil
		}
		wait := max(limited.RetryAfter, time.Second)
		if waited+wait > s.cfg.MaxRetryAfter {
			return ctalk.Errorf(ctalk.EUnavailable, "Slack asks ctalk to wait %s before %s; it will try again", limited.RetryAfter, what)
		}
		waited += wait
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctalk.Errorf(ctalk.EUnavailable, "gave up waiting for Slack's rate limit before %s", what)
		case <-t.C:
		}
	}
}
