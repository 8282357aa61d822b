package mcpclient

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
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
