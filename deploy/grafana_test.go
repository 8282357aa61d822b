package deploy

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/api/apitest"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// dashboardPath is the Grafana dashboard of ctalk's metrics.
const dashboardPath = "grafana/ctalk.json"

// promQL matches what of an expression is not a metric name: quoted
// strings, label matchers, ranges, and the label lists of by and without.
var promQLNoise = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|\{[^}]*\}|\[[^\]]*\]|\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)|\boffset\s+\S+`)

// promQLWord is a name in an expression, or the letters of a number.
var promQLWord = regexp.MustCompile(`[A-Za-z0-9_:.]+`)

// promQLKeywords are the words of PromQL that are not metric names.
var promQLKeywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"}

// metricNames returns the metric names expr reads: every name that is not a
// function called, a keyword, or a label.
func metricNames(expr string) []string {
	var out []string
	expr = promQLNoise.ReplaceAllString(expr, " ")
	for _, m := range promQLWord.FindAllStringIndex(expr, -1) {
		word, rest := expr[m[0]:m[1]], strings.TrimSpace(expr[m[1]:])
		called := strings.HasPrefix(rest, "(")
		if word[0] >= '0' && word[0] <= '9' || called || slices.Contains(promQLKeywords, word) {
			continue
		}
		out = append(out, word)
	}
	return out
}

// dashboardQueries returns every query of the dashboard: the panels'
// targets, rows' panels included, and the template variables'.
func dashboardQueries(t *testing.T, raw []byte) []string {
	t.Helper()
	type target struct{ Expr string }
	type panel struct {
		Targets []target
	}
	var d struct {
		Panels     []panel
		Templating struct {
			List []struct {
				Type  string
				Query json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	var out []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if json.Unmarshal(v.Query, &q) != nil {
			t.Fatalf("template variable query %s is not an object with a query", v.Query)
		}
		// label_values(metric, label): the metric is the first argument.
		out = append(out, strings.TrimPrefix(strings.SplitN(q.Query, ",", 2)[0], "label_values("))
	}
	return out
}

// exposedNames returns the metric names of a /metrics page.
func exposedNames(page string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(page, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
	}
	return out
}

// TestGrafanaDashboardPlotsOnlyExportedMetrics starts a server, makes
// calls, reads its /metrics, and holds every metric the dashboard's
// queries read to it: a renamed metric would leave a panel empty.
func TestGrafanaDashboardPlotsOnlyExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	queries := dashboardQueries(t, raw)
	if len(queries) < 10 {
		t.Fatalf("the dashboard has %d queries; it reads none of the panels", len(queries))
	}
	s := apitest.Start(t, dbtest.Open(t, db.SQLite))
	apitest.Org(t, s.URL, testkit.EraSessions, "acme")
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+apitest.MetricsToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d, %v", resp.StatusCode, err)
	}
	exposed := exposedNames(string(page))
	for _, q := range queries {
		names := metricNames(q)
		if len(names) == 0 {
			t.Errorf("query %q reads no metric", q)
		}
		for _, n := range names {
			if !exposed[n] {
				t.Errorf("query %q reads %s, which /metrics does not export", q, n)
			}
		}
	}
}

// TestMetricNamesOfPromQL holds the parser of the test above to what it
// must find and skip.
func TestMetricNamesOfPromQL(t *testing.T) {
	for expr, want := range map[string]string{
		`histogram_quantile(0.99, sum by (le, tool) (rate(ctalk_tool_call_duration_seconds_bucket{tool!~"wait_for_.*"}[$__rate_interval])))`: "ctalk_tool_call_duration_seconds_bucket",
		`sum(rate(a_total{outcome!~"ok|cancelled"}[5m])) / sum(rate(b_total[5m]))`:                                                           "a_total b_total",
		`max(c) or on (instance) d offset 5m`: "c d",
	} {
		if got := strings.Join(metricNames(expr), " "); got != want {
			t.Errorf("metricNames(%q) = %q, want %q", expr, got, want)
		}
	}
}
