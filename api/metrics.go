package api

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the Prometheus series ctalk exports at /metrics.
type metrics struct {
	registry      *prometheus.Registry
	calls         *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	loginFailures *prometheus.CounterVec
}

func (s *Server) newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
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
	waiting := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "ctalk_waiting_agents",
		Help: "Agents blocked in wait_for_inbox or wait_for_reply on this replica.",
	}, func() float64 { return float64(s.inbox.Broker().Waiting()) })
	m.registry.MustRegister(m.calls, m.duration, m.loginFailures, waiting,
		s.db.StatsCollector(),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
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

// metricsHandler serves /metrics to holders of METRICS_TOKEN only; without
// a configured token the endpoint does not exist.
func (s *Server) metricsHandler() echo.HandlerFunc {
	h := promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{})
	return func(c echo.Context) error {
		if s.cfg.MetricsToken == "" {
			return echo.NewHTTPError(http.StatusNotFound, "metrics are off: set METRICS_TOKEN to enable /metrics")
		}
		scheme, tok, _ := strings.Cut(c.Request().Header.Get(echo.HeaderAuthorization), " ")
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(s.cfg.MetricsToken)) != 1 {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="ctalk-metrics"`)
			return echo.NewHTTPError(http.StatusUnauthorized, "send the METRICS_TOKEN as \"Authorization: Bearer <token>\"")
		}
		h.ServeHTTP(c.Response(), c.Request())
		return nil
	}
}
