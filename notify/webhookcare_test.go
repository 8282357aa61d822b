package notify_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestWebhookTestEvent sends a test event to Bo's webhook, signed with its
// secret; a webhook that fails says why; another person's or the org's is
// not found.
func TestWebhookTestEvent(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(t, d, nil)
		ctx := dbtest.Operator()
		r := hookedReceiver(t, s)
		hooks, _ := s.Webhooks(ctx, "acme", "b")
		id := hooks[0].ID
		if err := s.TestWebhook(ctx, "acme", "b", id); err != nil {
			t.Fatal(err)
		}
		if v := r.only(t); v["type"] != "test" || v["title"] != "A test event from ctalk: this webhook works" {
			t.Errorf("test event %v", v)
		}
		for _, owner := range []string{"a", ""} {
			if err := s.TestWebhook(ctx, "acme", owner, id); ctalk.ErrorCode(err) != ctalk.ENotFound {
				t.Errorf("a test of Bo's webhook as %q: %v, want not found", owner, err)
			}
		}
		r.mu.Lock()
		r.status = http.StatusInternalServerError
		r.mu.Unlock()
		if err := s.TestWebhook(ctx, "acme", "b", id); ctalk.ErrorCode(err) != ctalk.EUnavailable || !strings.Contains(ctalk.ErrorMessage(err), "HTTP 500") {
			t.Errorf("a test of a failing webhook: %v", err)
		}
	})
}

// TestRedeliverSendsALoggedDeliveryAgain has Bo's webhook fail a delivery
// for good, then take it: redelivered, it arrives under its webhook-id,
// and the log shows it sent; a pending delivery and another person's are
// not redelivered.
func TestRedeliverSendsALoggedDeliveryAgain(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(t, d, nil)
		ctx := dbtest.Operator()
		r := hookedReceiver(t, s)
		r.status = http.StatusBadRequest // a permanent failure
		queue(t, d, s, question("q_1"))
		drain(t, s)
		log, _ := s.DeliveryLog(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, 10)
		if len(log) != 1 || log[0].Status != "failed" {
			t.Fatalf("log %+v, want one failed delivery", log)
		}
		id := log[0].ID
		if err := s.Redeliver(ctx, "acme", "a", id); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Errorf("Ann redelivered Bo's delivery: %v", err)
		}
		if err := s.Redeliver(ctx, "acme", "", id); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Errorf("Bo's delivery redelivered as the org's: %v", err)
		}
		r.mu.Lock()
		r.status = http.StatusOK
		r.mu.Unlock()
		if err := s.Redeliver(ctx, "acme", "b", id); err != nil {
			t.Fatal(err)
		}
		if err := s.Redeliver(ctx, "acme", "b", id); ctalk.ErrorCode(err) != ctalk.EConflict {
			t.Errorf("a pending delivery redelivered: %v", err)
		}
		drain(t, s)
		r.mu.Lock()
		hits := r.hits[id]
		r.mu.Unlock()
		if hits != 2 {
			t.Errorf("the receiver saw delivery %s %d times, want the failure and the redelivery", id, hits)
		}
		log, _ = s.DeliveryLog(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, 10)
		if len(log) != 1 || log[0].Status != "sent" || log[0].Attempts != 1 {
			t.Errorf("log after the redelivery %+v, want it sent at its first attempt anew", log)
		}
	})
}

// TestRotateWebhookSecret gives Bo's webhook a new secret: requests are
// signed with it from then on, never with the old one; another person
// cannot rotate it.
func TestRotateWebhookSecret(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(t, d, nil)
		ctx := dbtest.Operator()
		r := hookedReceiver(t, s)
		hooks, _ := s.Webhooks(ctx, "acme", "b")
		if _, _, err := s.RotateWebhookSecret(ctx, "acme", "a", hooks[0].ID); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Errorf("Ann rotated Bo's secret: %v", err)
		}
		w, secret, err := s.RotateWebhookSecret(ctx, "acme", "b", hooks[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if w.ID != hooks[0].ID || secret == r.secret || len(secret) < 40 {
			t.Fatalf("rotated %+v to %q", w, secret)
		}
		queue(t, d, s, question("q_1"))
		drain(t, s)
		r.mu.Lock()
		if r.badSigs != 1 || len(r.hits) != 0 {
			t.Errorf("with the old secret the receiver took %d and refused %d, want 0 and 1", len(r.hits), r.badSigs)
		}
		r.secret, r.badSigs = secret, 0
		r.mu.Unlock()
		if err := s.TestWebhook(ctx, "acme", "b", w.ID); err != nil {
			t.Errorf("with the new secret: %v", err)
		}
	})
}
