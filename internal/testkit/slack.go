package testkit

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// SlackCall is one request the stand-in for Slack's Web API received.
type SlackCall struct {
	Method string
	Form   url.Values
	At     time.Time
}

// Slack is a stand-in for Slack's Web API on a loopback port (its URL
// plus "/api/" is the API URL): it answers the methods ctalk calls as
// Slack does, a bot token xoxb-TEAM-… naming its workspace TEAM, and
// records every call. The methods NewSlack names as limited answer 429
// with Retry-After 1 to their first call.
type Slack struct {
	*httptest.Server
	mu      sync.Mutex
	calls   []SlackCall
	ts      atomic.Int64
	limited map[string]bool
	// limitedAt is when the stand-in answered 429, by method.
	limitedAt map[string]time.Time
	// holds are the methods whose next call waits (see Hold).
	holds map[string]*slackHold
}

// slackHold is a call held by Hold: arrived is closed when it comes in,
// release lets it be answered.
type slackHold struct {
	arrived, release chan struct{}
}

func NewSlack(t testing.TB, limited ...string) *Slack {
	t.Helper()
	s := &Slack{limited: map[string]bool{}, limitedAt: map[string]time.Time{}, holds: map[string]*slackHold{}}
	for _, m := range limited {
		s.limited[m] = true
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *Slack) serve(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	body, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(body))
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		form = url.Values{}
		for k, v := range m {
			b, _ := json.Marshal(v)
			form.Set(k, strings.Trim(string(b), `"`))
		}
	}
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if token == "" {
		token = form.Get("token")
	}
	form.Set("token", token)
	s.mu.Lock()
	if h := s.holds[method]; h != nil {
		delete(s.holds, method)
		s.mu.Unlock()
		close(h.arrived)
		select {
		case <-h.release:
		case <-r.Context().Done():
			return
		}
		s.mu.Lock()
	}
	if s.limited[method] {
		delete(s.limited, method)
		s.limitedAt[method] = time.Now()
		s.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	s.calls = append(s.calls, SlackCall{Method: method, Form: form, At: time.Now()})
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(s.answer(method, token, form)))
}

// answer is what Slack answers method.
func (s *Slack) answer(method, token string, form url.Values) string {
	switch method {
	case "auth.test":
		if !strings.HasPrefix(token, "xoxb-") {
			return `{"ok":false,"error":"invalid_auth"}`
		}
		team := strings.TrimPrefix(token, "xoxb-")
		team, _, _ = strings.Cut(team, "-")
		return `{"ok":true,"team_id":"` + team + `","user_id":"UBOT"}`
	case "conversations.open":
		return `{"ok":true,"channel":{"id":"D` + strings.Trim(form.Get("users"), `[]"`) + `"}}`
	case "chat.postMessage":
		return fmt.Sprintf(`{"ok":true,"channel":%q,"ts":"1700000000.%06d"}`, form.Get("channel"), s.ts.Add(1))
	case "chat.update":
		return fmt.Sprintf(`{"ok":true,"channel":%q,"ts":%q}`, form.Get("channel"), form.Get("ts"))
	case "chat.postEphemeral":
		return `{"ok":true,"message_ts":"1700000000.999999"}`
	case "views.open":
		return `{"ok":true,"view":{"id":"V1"}}`
	}
	return `{"ok":false,"error":"unknown_method"}`
}

// Hold makes the next call of method wait, as a slow Slack would, until
// release is called (at the latest when the test ends): arrived is closed
// once the call has come in.
func (s *Slack) Hold(t testing.TB, method string) (arrived <-chan struct{}, release func()) {
	h := &slackHold{arrived: make(chan struct{}), release: make(chan struct{})}
	s.mu.Lock()
	s.holds[method] = h
	s.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(h.release) }) }
	t.Cleanup(release)
	return h.arrived, release
}

// Limited is when method was answered 429, zero when it was not.
func (s *Slack) Limited(method string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limitedAt[method]
}

// Of are the calls of method so far.
func (s *Slack) Of(method string) []SlackCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SlackCall
	for _, c := range s.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Await waits, up to 10 s, until n calls of method satisfy ok (nil: any),
// and returns them.
func (s *Slack) Await(t testing.TB, method string, n int, ok func(SlackCall) bool) []SlackCall {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got []SlackCall
		for _, c := range s.Of(method) {
			if ok == nil || ok(c) {
				got = append(got, c)
			}
		}
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls of %s wanted, got %d: %v", n, method, len(got), s.Of(method))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
