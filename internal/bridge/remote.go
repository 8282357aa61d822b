package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ctalk/ctalk/internal/mcpclient"
)

// remoteHTTP sends the bearer token (without one, the opt-in to anonymous
// set-up) with every request of one session with the hosted server and
// remembers its last refusal, so that errors can say
// why (the SDK reports only the status text).
type remoteHTTP struct {
	token string
	base  http.RoundTripper

	mu   sync.Mutex
	last *refusal
}

// refusal is an HTTP error status from the hosted server.
type refusal struct {
	status  int
	message string // the server's own explanation, when it gave one
	at      time.Time
}

func (r *refusal) isAuth() bool {
	return r.status == http.StatusUnauthorized || r.status == http.StatusForbidden
}

func (r *refusal) String() string {
	s := fmt.Sprintf("HTTP %d %s", r.status, http.StatusText(r.status))
	if r.message != "" {
		s += ": " + r.message
	}
	return s
}

// RoundTrip sends r with the token, or without one opted in to the hosted
// server's anonymous account set-up, and keeps an error status's
// explanation.
func (t *remoteHTTP) RoundTrip(r *http.Request) (*http.Response, error) {
	tr := mcpclient.Bearer(t.token)
	tr.Next = t.base
	resp, err := tr.RoundTrip(r)
	if err != nil || resp.StatusCode < 400 {
		return resp, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var m struct {
		Message string `json:"message"`
	}
	json.Unmarshal(body, &m)
	t.mu.Lock()
	t.last = &refusal{status: resp.StatusCode, message: strings.Join(strings.Fields(m.Message), " "), at: time.Now()}
	t.mu.Unlock()
	return resp, nil
}

// refusal returns the last refusal if it came at or after since.
func (t *remoteHTTP) refusal(since time.Time) *refusal {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil || t.last.at.Before(since) {
		return nil
	}
	return t.last
}
