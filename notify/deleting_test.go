package notify_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/mail/mailtest"
	"github.com/ctalk/ctalk/notify"
)

// TestNothingSentWhileOrgDeleting schedules the org's deletion between a
// question's expansion and its delivery, then queues a reminder and a
// question: no mail goes (the members get the deletion's own notice), and
// the pending mail is logged as dropped. Once the deletion is cancelled,
// mail goes again.
func TestNothingSentWhileOrgDeleting(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		ctx := dbtest.Operator()
		srv := mailtest.Start(t)
		s := newService(t, d, srv)
		var deleting atomic.Bool
		s.SkipDeleting(func(_ context.Context, orgID string) (bool, error) { return orgID == "acme" && deleting.Load(), nil })

		queue(t, d, s, question("q_1"))
		if err := s.Expand(ctx); err != nil {
			t.Fatal(err)
		}
		deleting.Store(true)
		reminder := question("q_2")
		reminder.Kind = notify.KindReminder
		queue(t, d, s, reminder, question("q_3"))
		drain(t, s)
		if got := srv.Messages(); len(got) != 0 {
			t.Fatalf("%d mails sent while the org is to be deleted, want none", len(got))
		}
		log, err := s.DeliveryLog(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != 1 || log[0].Status != "failed" || !strings.Contains(log[0].Error, "to be deleted") {
			t.Fatalf("delivery log = %+v, want the one mail pending before, dropped", log)
		}

		deleting.Store(false)
		queue(t, d, s, question("q_4"))
		drain(t, s)
		srv.WaitFor(t, 1)
	})
}
