package faults_test

import (
	"context"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/mail/mailtest"
)

// TestKill9DuringNotifications kills the server with SIGKILL while agents
// ask and its queue mails the recipient, restarts it, and checks on a real
// SMTP server that every stored question was mailed, and that the mails of
// one question all carry one Message-ID, which a mail system drops as
// repeats: nothing lost, nothing duplicated that the receiver cannot drop.
func TestKill9DuringNotifications(t *testing.T) {
	eachEngine(t, testKill9Notifications)
}

var questionLink = regexp.MustCompile(`https://ctalk\.test/inbox/(q_[0-9a-f]{24})`)

func testKill9Notifications(t *testing.T, e db.Engine) {
	const askers = 4
	smtp := mailtest.Start(t)
	d := newDatabase(t, e)
	env := []string{"PUBLIC_URL=https://ctalk.test", "SMTP_URL=" + smtp.Config().URL, "MAIL_FROM=ctalk <ctalk@ctalk.test>",
		// One mail per question, so that each mail names one.
		"NOTIFY_DIGEST_SECONDS=0"}
	s := startServer(t, "first", d, env...)
	o := setupOrg(t, s.base, askers)
	conn := d.open(t)
	if _, err := dbtest.Exec(conn, `UPDATE users SET email = 'boss@acme.test' WHERE org_id = 'acme' AND id = 'boss'`); err != nil {
		t.Fatal(err)
	}

	l := newLedger()
	ctx, cancel := context.WithTimeout(dbtest.Operator(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range askers {
		cs := mustConnect(t, s.base, o.tokens[i], eraOf(i), nil)
		wg.Go(func() {
			askLoop(ctx, cs, i, l, 10*time.Second, 5*time.Millisecond, func(r outcome) bool { return !r.ok() })
		})
	}
	// Kill once mail is flowing and asks are still coming.
	deadline := time.Now().Add(15 * time.Second)
	for len(smtp.Messages()) < 10 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	s.kill()
	wg.Wait()
	mailedBefore := len(smtp.Messages())
	stored := storedQuestions(t, conn, o.id)
	if mailedBefore == 0 || mailedBefore >= len(stored) {
		t.Fatalf("killed with %d of %d questions mailed: the kill fell outside the burst, and the test proves nothing", mailedBefore, len(stored))
	}

	startServer(t, "restarted", d, env...)
	// A commit the killed server had sent may still have landed after the
	// first read: the server process died, not its database session. Read
	// again once the restart has taken its time.
	want := map[string]bool{}
	for _, r := range storedQuestions(t, conn, o.id) {
		want[r.id] = true
	}
	// The killed server's claims run out after their lease (30 s).
	wait := time.Now().Add(60 * time.Second)
	var ids map[string]map[string]bool
	for {
		ids = map[string]map[string]bool{}
		for _, m := range smtp.Messages() {
			match := questionLink.FindStringSubmatch(m.Text)
			if match == nil {
				t.Fatalf("a mail without a question link:\n%s", m.Text)
			}
			if ids[match[1]] == nil {
				ids[match[1]] = map[string]bool{}
			}
			ids[match[1]][m.Header.Get("Message-Id")] = true
		}
		if len(ids) >= len(want) || time.Now().After(wait) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for id := range want {
		if ids[id] == nil {
			t.Errorf("LOST: question %s is stored and was never mailed", id)
		}
	}
	repeats := 0
	for id, mids := range ids {
		if !want[id] {
			t.Errorf("mailed question %s, which is not stored", id)
		}
		if len(mids) > 1 {
			t.Errorf("DUPLICATED: question %s was mailed under %d Message-IDs", id, len(mids))
		}
	}
	repeats = len(smtp.Messages()) - len(ids)
	t.Logf("%d questions stored, %d mailed before the kill, all %d mailed after the restart, %d repeats under the same Message-ID", len(stored), mailedBefore, len(ids), repeats)
}
