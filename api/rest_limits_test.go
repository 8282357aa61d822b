package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// openREST opens GET path as the holder of token until ctx ends, and
// returns its response (headers only: the body is what stays open).
func openREST(t *testing.T, ctx context.Context, base, token, path string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			t.Error(err)
		}
		return nil
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestRESTStreamsCappedPerUser: one user opening many REST event streams,
// and many long-polls, at once, gets MaxRESTPerUser of each and 429 with
// Retry-After for the rest; another user is not affected, and a place frees
// when one closes.
func TestRESTStreamsCappedPerUser(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			e := start(t, engine)
			tok := e.Tokens(t, eraStateless, "acme")
			ok(t, e.Connect(t, eraStateless, tok["alice"]), "create_channel", map[string]any{"channel": "dev", "members": []string{"bob", "carol"}})
			for _, kind := range []struct{ name, path string }{
				{"event streams", "/api/v1/channels/dev/events"},
				{"long-polls", "/api/v1/wait?channel=dev&timeout_s=120"},
			} {
				t.Run(kind.name, func(t *testing.T) {
					// What the last kind left open has closed.
					const before = 0
					waitForWaiters(t, e, before)
					ctx, cancel := context.WithCancel(dbtest.Operator())
					defer cancel()
					const tries = 3 * api.MaxRESTPerUser
					var (
						mu      sync.Mutex
						refused []*http.Response
						wg      sync.WaitGroup
					)
					for range tries {
						wg.Go(func() {
							resp := openREST(t, ctx, e.URL, tok["bob"], kind.path)
							if resp != nil && resp.StatusCode == http.StatusTooManyRequests {
								mu.Lock()
								refused = append(refused, resp)
								mu.Unlock()
							}
						})
					}
					// A long-poll sends nothing until it ends: the refused
					// ones answer at once, the accepted ones wait.
					waitForWaiters(t, e, before+api.MaxRESTPerUser)
					testkit.WaitFor(t, 10*time.Second, "the calls over the cap to be refused", func() (bool, error) {
						mu.Lock()
						defer mu.Unlock()
						if len(refused) != tries-api.MaxRESTPerUser {
							return false, fmt.Errorf("%d refused", len(refused))
						}
						return true, nil
					})
					for _, r := range refused {
						if r.Header.Get("Retry-After") == "" || r.Header.Get("Content-Type") != "application/json" {
							t.Fatalf("refused: %d %v", r.StatusCode, r.Header)
						}
					}
					// carol is not bob.
					go openREST(t, ctx, e.URL, tok["carol"], kind.path)
					waitForWaiters(t, e, before+api.MaxRESTPerUser+1)
					// Closed, they free their places.
					cancel()
					wg.Wait()
					waitForWaiters(t, e, before)
					again, stop := context.WithCancel(dbtest.Operator())
					defer stop()
					go openREST(t, again, e.URL, tok["bob"], kind.path)
					waitForWaiters(t, e, before+1)
				})
			}
		})
	}
}

// TestAbandonedLongPollIsNoServerError: a client hanging up on
// /api/v1/wait is logged as a client gone (499), not as a failure: no
// ERROR line, no 500.
func TestAbandonedLongPollIsNoServerError(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			e := start(t, engine)
			tok := e.Tokens(t, eraStateless, "acme")
			ctx, cancel := context.WithCancel(dbtest.Operator())
			done := make(chan struct{})
			go func() {
				defer close(done)
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.URL+"/api/v1/wait?timeout_s=60", nil)
				req.Header.Set("Authorization", "Bearer "+tok["bob"])
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			}()
			waitForWaiters(t, e, 1)
			cancel()
			<-done
			waitForWaiters(t, e, 0)
			testkit.WaitFor(t, 10*time.Second, "the long-poll's access line", func() (bool, error) {
				return strings.Contains(e.Logs.String(), `"path":"/api/v1/wait"`), nil
			})
			logs := e.Logs.String()
			if strings.Contains(logs, `"level":"ERROR"`) || strings.Contains(logs, `"status":500`) {
				t.Fatalf("an abandoned long-poll was logged as a server error:\n%s", logs)
			}
			if !strings.Contains(logs, `"status":499`) {
				t.Fatalf("the abandoned long-poll's access line has no status 499:\n%s", logs)
			}
		})
	}
}

// TestRESTLongPollsAndStreamsCappedApart: with MaxRESTPerUser event streams
// held open, a long-poll is still served, and with as many long-polls
// waiting, an event stream still opens: each kind counts against its own
// cap.
func TestRESTLongPollsAndStreamsCappedApart(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			e := start(t, engine)
			tok := e.Tokens(t, eraStateless, "acme")
			ok(t, e.Connect(t, eraStateless, tok["alice"]), "create_channel", map[string]any{"channel": "dev", "members": []string{"bob"}})
			const (
				stream = "/api/v1/channels/dev/events"
				poll   = "/api/v1/wait?channel=dev&timeout_s=120"
			)
			ctx, cancel := context.WithCancel(dbtest.Operator())
			defer cancel()
			for range api.MaxRESTPerUser {
				if resp := openREST(t, ctx, e.URL, tok["bob"], stream); resp == nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("stream: %s", statusOf(resp))
				}
			}
			waitForWaiters(t, e, api.MaxRESTPerUser)
			// A long-poll that ends at once answers 200, or 429 when it was
			// counted with the streams.
			if resp := openREST(t, ctx, e.URL, tok["bob"], "/api/v1/wait?channel=dev&timeout_s=0"); resp == nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("a long-poll beside %d streams: %s", api.MaxRESTPerUser, statusOf(resp))
			}
			cancel()
			waitForWaiters(t, e, 0)

			ctx, cancel = context.WithCancel(dbtest.Operator())
			defer cancel()
			for range api.MaxRESTPerUser {
				go openREST(t, ctx, e.URL, tok["bob"], poll)
			}
			waitForWaiters(t, e, api.MaxRESTPerUser)
			if resp := openREST(t, ctx, e.URL, tok["bob"], stream); resp == nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("a stream beside %d long-polls: %s", api.MaxRESTPerUser, statusOf(resp))
			}
		})
	}
}

func statusOf(resp *http.Response) string {
	if resp == nil {
		return "no response"
	}
	return resp.Status
}
