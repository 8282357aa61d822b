package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/mcpclient"
	"github.com/ctalk/ctalk/wait"
)

// Delivery is how long an answer takes to reach the agent waiting for it.
type Delivery struct {
	Setting string `json:"setting"`
	Samples int    `json:"samples"`
	Errors  int    `json:"errors"`
	// P50MS and P99MS run from the send_response call to the return of the
	// asker's wait_for_reply; AckP50MS and AckP99MS from the reply to
	// send_response (the answer committed) to that return.
	P50MS      float64 `json:"p50_ms"`
	P99MS      float64 `json:"p99_ms"`
	AckP50MS   float64 `json:"ack_p50_ms"`
	AckP99MS   float64 `json:"ack_p99_ms"`
	TargetP99  float64 `json:"target_p99_ms"`
	Skipped    bool    `json:"skipped,omitempty"`
	Note       string  `json:"note,omitempty"`
	FirstError string  `json:"first_error,omitempty"`
}

// phaseDelivery measures delivery one sample at a time, so that the figure
// is the wake-up path and not queueing: in one process, and across two
// replicas (the answer committed on one, the asker waiting on the other).
func (r *runner) phaseDelivery(ctx context.Context) error {
	o, err := r.newOrg(ctx, r.url, "delivery", 2, true)
	if err != nil {
		return err
	}
	asker, answerer := o.sessions[0], o.sessions[1]
	one := r.deliver(ctx, "one process", o, asker, answerer, asker, r.waitingOn(r.url, r.broker))
	one.TargetP99 = 10
	r.res.Delivery = append(r.res.Delivery, one)

	two := Delivery{Setting: "two replicas", TargetP99: 50, Skipped: true}
	replica, why, err := r.replica(ctx)
	switch {
	case err != nil:
		return err
	case replica == nil:
		two.Note = why
	default:
		waiter, err := r.cl.connect(ctx, replica.URL, o.tokens[0])
		if err != nil {
			return err
		}
		defer waiter.Close()
		two = r.deliver(ctx, "two replicas", o, asker, answerer, waiter, r.waitingOn(replica.URL, replica.Broker))
		two.TargetP99 = 50
		two.Note = "second in-process server on the same Postgres, its own pool, broker and LISTEN connection; the asker waits on it, the answer is sent to the first"
	}
	r.res.Delivery = append(r.res.Delivery, two)
	for _, d := range r.res.Delivery {
		r.logf("  delivery %-13s %4d samples  p50 %6.2f ms  p99 %6.2f ms  %s", d.Setting, d.Samples, d.P50MS, d.P99MS, d.Note)
	}
	return nil
}

// replica returns a second server on the primary's Postgres database,
// started the first time it is asked for, or nil and why there is none.
func (r *runner) replica(ctx context.Context) (*server, string, error) {
	switch {
	case r.primary == nil:
		return nil, "with -url the harness cannot start a second replica of the target", nil
	case r.engine != db.Postgres:
		return nil, "SQLite is one process; replicas share Postgres and wake each other through LISTEN/NOTIFY", nil
	case r.second == nil:
		s, err := r.startServer(ctx)
		if err != nil {
			return nil, "", err
		}
		r.second = s
	}
	return r.second, "", nil
}

// waitingOn returns a function that reports how many agents wait on a
// server: from its broker in this process, from /metrics with -metrics-token,
// or nil when there is no way to know.
func (r *runner) waitingOn(base string, broker *wait.Broker) func(context.Context) (int, error) {
	if broker != nil {
		return func(context.Context) (int, error) { return broker.Waiting(), nil }
	}
	if r.cfg.MetricsToken == "" {
		return nil
	}
	return func(ctx context.Context) (int, error) {
		m, err := r.cl.metrics(ctx, base, r.cfg.MetricsToken, "ctalk_waiting_agents")
		return int(m["ctalk_waiting_agents"]), err
	}
}

// deliver takes the samples of one setting: asker asks, answerer drafts,
// waiter (the asker's session on some replica) starts waiting, and once it
// is subscribed the answerer sends.
func (r *runner) deliver(ctx context.Context, setting string, o *org, asker, answerer, waiter *mcp.ClientSession, waiting func(context.Context) (int, error)) Delivery {
	var lat, ack []time.Duration
	res := Delivery{Setting: setting}
	fail := func(err error) {
		res.Errors++
		if res.FirstError == "" {
			res.FirstError = err.Error()
		}
	}
	deadline := time.Now().Add(r.cfg.Duration)
	for i := 0; i < r.cfg.DeliverySamples && time.Now().Before(deadline) && ctx.Err() == nil; i++ {
		m, err := callTool(ctx, asker, "ask_person", map[string]any{"to_user_id": o.users[1], "question": questionText})
		if err != nil {
			fail(err)
			continue
		}
		id := str(m, "message_id")
		if _, err := callTool(ctx, answerer, "propose_response", map[string]any{"message_id": id, "draft_text": answerText}); err != nil {
			fail(err)
			continue
		}
		before := 0
		if waiting != nil {
			if before, err = waiting(ctx); err != nil {
				fail(err)
				continue
			}
		}
		type got struct {
			at  time.Time
			err error
		}
		done := make(chan got, 1)
		go func() {
			m, err := callTool(ctx, waiter, "wait_for_reply", map[string]any{"message_id": id, "timeout_s": 30})
			if err == nil && len(anySlice(m["replies"])) != 1 {
				err = fmt.Errorf("wait_for_reply returned %v, not the one answer", m["replies"])
			}
			done <- got{time.Now(), err}
		}()
		if err := waitUntilWaiting(ctx, waiting, before); err != nil {
			fail(err)
		}
		sent := time.Now()
		_, err = callTool(ctx, answerer, "send_response", map[string]any{"message_id": id, "final_text": answerText})
		acked := time.Now()
		if err != nil {
			fail(err)
		}
		select {
		case g := <-done:
			if g.err != nil {
				fail(g.err)
				continue
			}
			lat = append(lat, g.at.Sub(sent))
			ack = append(ack, max(g.at.Sub(acked), 0))
		case <-time.After(35 * time.Second):
			fail(errors.New("the answer never reached the waiting agent"))
		}
	}
	res.Samples = len(lat)
	res.P50MS, res.P99MS = quantileMS(lat, 0.50), quantileMS(lat, 0.99)
	res.AckP50MS, res.AckP99MS = quantileMS(ack, 0.50), quantileMS(ack, 0.99)
	return res
}

// waitUntilWaiting returns once a new agent waits, or after a short pause
// when the harness cannot see the server's waiters.
func waitUntilWaiting(ctx context.Context, waiting func(context.Context) (int, error), before int) error {
	if waiting == nil {
		time.Sleep(50 * time.Millisecond)
		return nil
	}
	err := mcpclient.Poll(ctx, 10*time.Second, 50*time.Microsecond, func() (bool, error) {
		n, err := waiting(ctx)
		return err != nil || n > before, err
	})
	if err != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("the waiting agent did not subscribe: %w", err)
	}
	return err
}

func anySlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// deliveryTargets judges delivery latency in each setting measured.
func (r *runner) deliveryTargets() {
	res := r.res
	for _, d := range res.Delivery {
		name := fmt.Sprintf("delivery p99 <= %.0f ms (%s)", d.TargetP99, d.Setting)
		res.Targets = append(res.Targets, latencyTarget(name, d.TargetP99, d.P99MS, d.Samples, d.Skipped, d.Note, "no sample arrived: "+d.FirstError))
	}
	if !r.cfg.Phases["delivery"] {
		res.Targets = append(res.Targets, Target{Name: "delivery p99 (one process, two replicas)", Status: statusSkipped, Note: "phase not run"})
	}

}
