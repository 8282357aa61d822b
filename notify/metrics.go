package notify

import "github.com/prometheus/client_golang/prometheus"

// Metrics counts what the queue did; /metrics exports them.
type Metrics struct {
	sent, retried, failed *prometheus.CounterVec
	queueAge              prometheus.Gauge
}

func newMetrics() *Metrics {
	m := &Metrics{
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ctalk_notifications_sent_total", Help: "Notifications delivered, by channel.",
		}, []string{"channel"}),
		retried: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ctalk_notifications_retried_total", Help: "Notification deliveries that failed for now and were scheduled again, by channel.",
		}, []string{"channel"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ctalk_notifications_failed_total", Help: "Notification deliveries given up, by channel.",
		}, []string{"channel"}),
		queueAge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ctalk_notifications_queue_age_seconds", Help: "How long the oldest due notification delivery has waited, as of the last check (every few seconds).",
		}),
	}
	// Each channel's series exist from the start, at zero, so that a
	// dashboard's rates have a series before the first delivery.
	for _, ch := range []string{"email", "webhook"} {
		m.sent.WithLabelValues(ch)
		m.retried.WithLabelValues(ch)
		m.failed.WithLabelValues(ch)
	}
	return m
}

// Collectors returns the service's metrics, for a registry.
func (s *Service) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.metrics.sent, s.metrics.retried, s.metrics.failed, s.metrics.queueAge}
}
