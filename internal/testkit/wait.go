package testkit

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Poll calls cond every interval until it reports done, and returns the
// error cond returned with it; when cond is not done within d or ctx ends,
// it returns cond's last error, or one that says how long it waited. It
// waits for state the server reports, such as its waiting agents, instead
// of sleeping for a guessed time.
func Poll(ctx context.Context, d, interval time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(d)
	for {
		done, err := cond()
		if done {
			return err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if err == nil {
				err = fmt.Errorf("not within %s", d)
			}
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(interval):
		}
	}
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
// at base, with the metrics bearer token, through client (nil means
// http.DefaultClient). A series it does not find is an error.
func Metrics(ctx context.Context, client *http.Client, base, token string, names ...string) (map[string]float64, error) {
	if client == nil {
		client = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || !slices.Contains(names, name) {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			out[name] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("/metrics has no %s", n)
		}
	}
	return out, nil
}

// WaitingAgents returns the ctalk_waiting_agents gauge of the server at
// base, from its /metrics.
func WaitingAgents(base, token string) (int, error) {
	m, err := Metrics(context.Background(), nil, base, token, "ctalk_waiting_agents")
	return int(m["ctalk_waiting_agents"]), err
}
