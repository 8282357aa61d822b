package api

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ctalk/ctalk/db"
)

// metrics are the Prometheus series ctalk exports at /metrics; the tools
// register theirs of tool calls in the same registry.
type metrics struct {
	registry *prometheus.Registry
}

// newMetrics registers the server's series with registry.
func (s *Server) newMetrics(registry *prometheus.Registry) *metrics {
	m := &metrics{registry: registry}
	waiting := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "ctalk_waiting_agents",
		Help: "Agents blocked in wait_for_inbox or wait_for_reply on this replica.",
	}, func() float64 { return float64(s.inbox.Broker().Waiting()) })
	m.registry.MustRegister(waiting,
		s.db.StatsCollector(),
		db.OperatorTransactions(),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
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
