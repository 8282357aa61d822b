package testkit

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ctalk/ctalk/internal/mcpclient"
)

// Poll calls cond every interval until it reports done, or d passes or ctx
// ends; see mcpclient.Poll.
func Poll(ctx context.Context, d, interval time.Duration, cond func() (bool, error)) error {
	return mcpclient.Poll(ctx, d, interval, cond)
}

// WaitFor is Poll for a test: it fails the test with what, and cond's last
// error, when cond is not true within d.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	if err := Poll(context.Background(), d, 5*time.Millisecond, cond); err != nil {
		t.Fatalf("%s within %s: %v", what, d, err)
	}
}

// Metrics reads the named unlabelled series from the /metrics of the server
// at base; see mcpclient.Metrics.
func Metrics(ctx context.Context, client *http.Client, base, token string, names ...string) (map[string]float64, error) {
	return mcpclient.Metrics(ctx, client, base, token, names...)
}

// WaitingAgents returns the ctalk_waiting_agents gauge of the server at
// base, from its /metrics.
func WaitingAgents(base, token string) (int, error) {
	m, err := Metrics(context.Background(), nil, base, token, "ctalk_waiting_agents")
	return int(m["ctalk_waiting_agents"]), err
}
