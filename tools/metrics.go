package tools

import "github.com/prometheus/client_golang/prometheus"

// metrics are the Prometheus series of tool calls.
type metrics struct {
	calls         *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	loginFailures *prometheus.CounterVec
}

// newMetrics makes the series of tool calls and registers them with r, when
// it is not nil.
func newMetrics(r prometheus.Registerer) *metrics {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ctalk_tool_calls_total",
			Help: "MCP tool calls by tool and outcome (ok or an error code).",
		}, []string{"tool", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ctalk_tool_call_duration_seconds",
			Help:    "Duration of MCP tool calls, waits included.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"tool"}),
		loginFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ctalk_login_failures_total",
			Help: "Refused logins and admin-password checks, by reason (unauthorized or rate_limited).",
		}, []string{"reason"}),
	}
	// Both reasons' series exist from the start, at zero, for dashboards.
	m.loginFailures.WithLabelValues("unauthorized")
	m.loginFailures.WithLabelValues("rate_limited")
	if r != nil {
		r.MustRegister(m.calls, m.duration, m.loginFailures)
	}
	return m
}

// observe records one tool call of a tool with the given traits.
func (m *metrics) observe(tool, outcome string, traits toolTraits, seconds float64) {
	m.calls.WithLabelValues(tool, outcome).Inc()
	m.duration.WithLabelValues(tool).Observe(seconds)
	if (outcome == "unauthorized" || outcome == "rate_limited") && traits.checksPassword {
		m.loginFailures.WithLabelValues(outcome).Inc()
	}
}
