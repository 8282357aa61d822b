// Package scrape reads a ctalk server's /metrics, so that a test can wait
// for a state the server reports, such as its waiting agents, instead of
// sleeping.
package scrape

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// WaitingAgents returns the ctalk_waiting_agents gauge of the server at
// base (http://host:port), read with the metrics bearer token.
func WaitingAgents(base, token string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "ctalk_waiting_agents "); ok {
			n, err := strconv.ParseFloat(v, 64)
			return int(n), err
		}
	}
	return 0, fmt.Errorf("/metrics answered %s without ctalk_waiting_agents", resp.Status)
}
