package notify_test

import (
	"net"
	"strings"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/outbound"
	"github.com/ctalk/ctalk/notify"
)

// TestWebhookFailuresReadAlike delivers a question to webhooks on reserved
// addresses (refused before any connection: a documentation range,
// benchmarking, IETF assignments, the reserved /4, NAT64 of loopback,
// 6to4 of a private address), to a loopback port where nothing listens
// (connection refused) and to one that accepts and hangs up (EOF): the
// person's delivery log says the same of each, so that it maps no host's
// ports; the reserved ones are disabled at once, with that sentence as
// the reason.
func TestWebhookFailuresReadAlike(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(t, d, nil)
		ctx := dbtest.Operator()
		b := ctalk.Caller{OrgID: "acme", UserID: "b"}
		if _, err := s.SaveSettings(ctx, b, notify.Settings{Channels: map[notify.Kind][]string{notify.KindQuestion: {notify.ChannelWebhook}}}); err != nil {
			t.Fatal(err)
		}
		reserved := []string{"http://192.0.2.1/hook", "http://198.18.0.1/hook", "http://192.0.0.1/hook",
			"http://240.0.0.1/hook", "http://[64:ff9b::7f00:1]/hook", "http://[2002:a00:1::1]/hook"}
		urls := append([]string{"http://" + closedPort(t) + "/hook", "http://" + hangingUp(t) + "/hook"}, reserved...)
		for _, u := range urls {
			if _, _, err := s.AddWebhook(ctx, "acme", "b", "b", u, notify.FormatJSON); err != nil {
				t.Fatalf("add %s: %v", u, err)
			}
		}
		queue(t, d, s, question("q_1"))
		drain(t, s)

		want := "could not reach the webhook: " + outbound.Unreachable
		log, err := s.DeliveryLog(ctx, b, 50)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != len(urls) {
			t.Fatalf("%d deliveries, want %d", len(log), len(urls))
		}
		for _, l := range log {
			if l.Error != want {
				t.Errorf("delivery to %s: %q, want %q", l.Target, l.Error, want)
			}
		}
		hooks, err := s.Webhooks(ctx, "acme", "b")
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hooks {
			isReserved := strings.Contains(strings.Join(reserved, " "), h.URL)
			if isReserved != (h.DisabledAt != nil) {
				t.Errorf("%s: disabled at %v", h.URL, h.DisabledAt)
			}
			if isReserved && h.DisabledReason != want {
				t.Errorf("%s: disabled for %q, want %q", h.URL, h.DisabledReason, want)
			}
		}
	})
}

// closedPort is a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// hangingUp is a loopback address that accepts each connection and closes
// it at once.
func hangingUp(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().String()
}
