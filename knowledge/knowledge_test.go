package knowledge_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/knowledge"
	"github.com/ctalk/ctalk/orgs"
)

// fixture is org acme (and org other) with members and a knowledge service.
type fixture struct {
	t    testing.TB
	d    *db.DB
	k    *knowledge.Service
	orgs *orgs.Service
	n    int
}

func newFixture(t testing.TB, d *db.DB) *fixture {
	t.Helper()
	a, err := auth.NewService(d, auth.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	o := orgs.NewService(d, a)
	f := &fixture{t: t, d: d, k: knowledge.NewService(d, o), orgs: o}
	f.org("acme", "al", "ana", "ben", "cat", "dan", "eve", "root")
	f.org("other", "xi", "yu")
	f.exec(`UPDATE users SET role = 'admin' WHERE org_id = 'acme' AND id = 'root'`)
	return f
}

func (f *fixture) exec(query string, args ...any) {
	f.t.Helper()
	if _, err := dbtest.Exec(f.d, query, args...); err != nil {
		f.t.Fatalf("%s: %v", query, err)
	}
}

func (f *fixture) org(id string, users ...string) {
	f.t.Helper()
	now := f.d.Now()
	f.exec(`INSERT INTO orgs (id, name, admin_password_hash, created_at) VALUES ($1, $1, 'x', $2)`, id, now)
	for _, u := range users {
		f.exec(`INSERT INTO users (org_id, id, name, password_hash, role, created_at, updated_at) VALUES ($1, $2, $2, 'x', 'member', $3, $3)`, id, u, now)
	}
}

func (f *fixture) own(org, user string, tags ...string) {
	f.t.Helper()
	b, _ := json.Marshal(tags)
	f.exec(`UPDATE users SET ownership = $3 WHERE org_id = $1 AND id = $2`, org, user, string(b))
}

func (f *fixture) settings(org string, in orgs.Settings) {
	f.t.Helper()
	if _, err := f.orgs.SetSettings(dbtest.Operator(), org, in); err != nil {
		f.t.Fatal(err)
	}
}

// answered stores an answered question from asker to answerer, as inbox
// would, and returns it: shared with the org only when Published.
func (f *fixture) answered(org, asker, answerer, q, a string) knowledge.Answered {
	f.t.Helper()
	f.n++
	id := fmt.Sprintf("msg_%s%04d", org, f.n)
	now := f.d.Now()
	f.exec(`INSERT INTO questions (org_id, id, asker_id, recipient_id, body, status, created_at, resolved_at, resolution)
		VALUES ($1, $2, $3, $4, $5, 'answered', $6, $6, $7)`, org, id, asker, answerer, q, now, a)
	return knowledge.Answered{MessageID: id, AskerID: asker, AnswererID: answerer, Question: q, Answer: a, AnsweredAt: now}
}

// share stores an answered question and shares it as its answerer's
// person chose in the web app.
func (f *fixture) share(org, asker, answerer, q, a string) knowledge.Answered {
	f.t.Helper()
	ans := f.answered(org, asker, answerer, q, a)
	yes := true
	s, err := f.k.Publish(dbtest.Operator(), ctalk.Caller{OrgID: org, UserID: answerer}, ans, &yes, nil)
	if err != nil || !s.Shared {
		f.t.Fatalf("Publish = %+v, %v", s, err)
	}
	return ans
}

func ids(as []*knowledge.Answer) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.MessageID)
	}
	return out
}

func caller(org, user string) ctalk.Caller { return ctalk.Caller{OrgID: org, UserID: user} }

func adminCaller(org, user string) ctalk.Caller {
	return ctalk.Caller{OrgID: org, UserID: user, Admin: true}
}

func TestPublishFollowsTheOrgAndThePerson(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name             string
		sharing, mode    string
		chosen           *bool // in the web app, before sending
		person, proposal *bool
		want             bool
	}{
		{"off shares nothing, whatever the person says", orgs.SharingOff, orgs.ApprovalAgent, &yes, &yes, &yes, false},
		{"ask: unshared unless said", orgs.SharingAsk, orgs.ApprovalAgent, nil, nil, nil, false},
		{"ask: the agent relays its person's yes", orgs.SharingAsk, orgs.ApprovalAgent, nil, nil, &yes, true},
		{"ask, human mode: the agent's proposal is not a decision", orgs.SharingAsk, orgs.ApprovalHuman, nil, nil, &yes, false},
		{"ask, human mode: the person's choice decides", orgs.SharingAsk, orgs.ApprovalHuman, &yes, nil, &no, true},
		{"on: shared by default", orgs.SharingOn, orgs.ApprovalHuman, nil, nil, nil, true},
		{"on: the person's no outranks the default and the agent", orgs.SharingOn, orgs.ApprovalAgent, &no, nil, &yes, false},
		{"on: the agent relays its person's no", orgs.SharingOn, orgs.ApprovalAgent, nil, nil, &no, false},
		{"answering in the web app: the person's own choice", orgs.SharingAsk, orgs.ApprovalHuman, nil, &yes, nil, true},
	}
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		ctx := dbtest.Operator()
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				f.settings("acme", orgs.Settings{KnowledgeSharing: tt.sharing, ApprovalMode: tt.mode})
				word := fmt.Sprintf("casebook%c", 'a'+i)
				a := f.answered("acme", "al", "ben", "where is the "+word, "here")
				if tt.chosen != nil {
					if err := f.k.Choose(ctx, caller("acme", "ben"), a.MessageID, *tt.chosen); err != nil {
						t.Fatal(err)
					}
				}
				got, err := f.k.Publish(ctx, caller("acme", "ben"), a, tt.person, tt.proposal)
				if err != nil {
					t.Fatal(err)
				}
				found, err := f.k.Search(ctx, caller("acme", "cat"), word, 5)
				if err != nil {
					t.Fatal(err)
				}
				if got.Shared != tt.want || (len(found) == 1) != tt.want {
					t.Errorf("Publish = %+v, and search finds %v; want shared %v", got, ids(found), tt.want)
				}
			})
		}
		if _, err := f.k.Publish(ctx, caller("acme", "al"), f.answered("acme", "al", "ben", "q", "a"), &yes, nil); ctalk.ErrorCode(err) != ctalk.EForbidden {
			t.Errorf("the asker published the answer: %v, want EForbidden", err)
		}
	})
}

func TestOnlySharedAnswersOfTheOrgAreFound(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		ctx := dbtest.Operator()
		f.own("acme", "dan", "kafka")
		f.own("other", "yu", "kafka")
		shared := f.share("acme", "al", "ben", "How do we rename a kafka topic?", "Create the new kafka topic, mirror it, then switch the consumers.")
		private := f.answered("acme", "al", "dan", "How do we rename a kafka topic quickly?", "Kafka cannot rename topics; mirror them.")
		f.share("other", "xi", "yu", "How do we rename a kafka topic?", "In other, with the kafka admin tool.")
		for _, who := range []string{"al", "dan", "cat"} {
			got, err := f.k.Search(ctx, caller("acme", who), "rename kafka topic", 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].MessageID != shared.MessageID {
				t.Errorf("%s found %v, want only %s (not the unshared %s, not other's)", who, ids(got), shared.MessageID, private.MessageID)
			}
			sug, err := held(f.k.Suggest(ctx, caller("acme", who), "How can we rename a kafka topic?"))
			if err != nil || len(sug) != 1 || sug[0].MessageID != shared.MessageID {
				t.Errorf("%s was suggested %v, %v; want only %s", who, ids(sug), err, shared.MessageID)
			}
		}
		experts, err := f.k.Experts(ctx, caller("acme", "al"), "kafka", 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range experts {
			switch {
			case e.UserID == "yu":
				t.Errorf("another org's member ranks: %+v", e)
			case e.UserID == "dan" && e.SharedAnswers != 0:
				t.Errorf("dan's unshared answer counts: %+v", e)
			case e.UserID == "ben" && e.SharedAnswers != 1:
				t.Errorf("ben's shared answer does not count: %+v", e)
			}
		}
		if len(experts) != 2 || experts[0].UserID != "dan" || experts[1].UserID != "ben" {
			t.Errorf("experts on kafka = %+v, want dan (owns kafka) then ben (a shared answer)", experts)
		}
		if err := f.k.Unshare(ctx, caller("other", "yu"), shared.MessageID); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Errorf("another org's member unshared acme's answer: %v, want ENotFound", err)
		}
	})
}

func TestOnlyTheAnswererAndAdminsChangeASharedAnswer(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		ctx := dbtest.Operator()
		a := f.share("acme", "al", "ben", "Where is the runbook for payouts?", "In the wiki under payouts.")
		if err := f.k.Edit(ctx, caller("acme", "al"), a.MessageID, "changed by the asker"); ctalk.ErrorCode(err) != ctalk.EForbidden {
			t.Errorf("the asker edited it: %v, want EForbidden", err)
		}
		if err := f.k.Edit(ctx, caller("acme", "ben"), a.MessageID, "  "); ctalk.ErrorCode(err) != ctalk.EInvalid {
			t.Errorf("an empty edit: %v, want EInvalid", err)
		}
		if err := f.k.Edit(ctx, caller("acme", "ben"), a.MessageID, "The payouts runbook moved to the handbook."); err != nil {
			t.Fatal(err)
		}
		got, err := f.k.Search(ctx, caller("acme", "cat"), "handbook", 5)
		if err != nil || len(got) != 1 || got[0].Answer != "The payouts runbook moved to the handbook." {
			t.Fatalf("after the edit, search finds %+v, %v", got, err)
		}
		if old, _ := f.k.Search(ctx, caller("acme", "cat"), "wiki", 5); len(old) != 0 {
			t.Errorf("the old text is still indexed: %v", ids(old))
		}
		if err := f.k.Unshare(ctx, caller("acme", "cat"), a.MessageID); ctalk.ErrorCode(err) != ctalk.EForbidden {
			t.Errorf("another member unshared it: %v, want EForbidden", err)
		}
		admin := ctalk.Caller{OrgID: "acme", UserID: "root", Admin: true}
		if err := f.k.Unshare(ctx, admin, a.MessageID); err != nil {
			t.Fatal(err)
		}
		if got, _ := f.k.Search(ctx, caller("acme", "cat"), "payouts", 5); len(got) != 0 {
			t.Errorf("unshared, it is still found: %v", ids(got))
		}
		if err := f.k.Unshare(ctx, caller("acme", "ben"), a.MessageID); ctalk.ErrorCode(err) != ctalk.ENotFound {
			t.Errorf("unsharing twice: %v, want ENotFound", err)
		}
	})
}

func TestPublishingConcurrentlyKeepsOneCopy(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		a := f.answered("acme", "al", "ben", "How are secrets stored?", "In the vault.")
		yes := true
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if _, err := f.k.Publish(dbtest.Operator(), caller("acme", "ben"), a, &yes, nil); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		var n int
		if err := d.QueryRow(dbtest.Operator(), `SELECT COUNT(*) FROM shared_answers WHERE org_id = 'acme'`).Scan(&n); err != nil || n != 1 {
			t.Errorf("%d copies, %v; want 1", n, err)
		}
	})
}

func TestOldAnswersAreMarkedStale(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		ctx := dbtest.Operator()
		old := f.share("acme", "al", "ben", "Which queue handles email?", "The mailer queue.")
		f.exec(`UPDATE shared_answers SET updated_at = $1 WHERE question_id = $2`, d.Now().Add(-40*24*time.Hour), old.MessageID)
		f.share("acme", "al", "cat", "Which queue handles email bounces?", "The bounce queue.")
		days := 30
		f.settings("acme", orgs.Settings{KnowledgeStaleDays: &days})
		got, err := f.k.Search(ctx, caller("acme", "dan"), "queue email", 5)
		if err != nil || len(got) != 2 {
			t.Fatalf("found %+v, %v", got, err)
		}
		for _, a := range got {
			if a.Stale != (a.MessageID == old.MessageID) {
				t.Errorf("%s stale = %v", a.MessageID, a.Stale)
			}
		}
		days = 0
		f.settings("acme", orgs.Settings{KnowledgeStaleDays: &days})
		if got, _ := f.k.Search(ctx, caller("acme", "dan"), "queue email", 5); len(got) != 2 || got[0].Stale || got[1].Stale {
			t.Errorf("with knowledge_stale_days 0, marked stale: %+v", got)
		}
	})
}

func TestBadQueriesSayWhatToDo(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		for _, q := range []string{"", "   ", "how is the", `"" * -`, string(make([]byte, knowledge.MaxQueryLen+1))} {
			if _, err := f.k.Search(dbtest.Operator(), caller("acme", "al"), q, 5); ctalk.ErrorCode(err) != ctalk.EInvalid {
				t.Errorf("Search(%q) = %v, want EInvalid", q, err)
			}
		}
		for _, q := range []string{`a'b OR c) AND "x`, `NEAR(a b)`, `col:word`, `!&|<->`} {
			if _, err := f.k.Search(dbtest.Operator(), caller("acme", "al"), q, 5); err != nil && ctalk.ErrorCode(err) != ctalk.EInvalid {
				t.Errorf("Search(%q) = %v, want results or EInvalid", q, err)
			}
		}
		if _, err := f.k.Search(dbtest.Operator(), caller("acme", "al"), "x", 99); ctalk.ErrorCode(err) != ctalk.EInvalid {
			t.Errorf("limit 99: %v, want EInvalid", err)
		}
	})
}

// TestLookUpSeesChangesOfOtherReplicas: a replica that looked up a
// question keeps its index of the org's shared answers, and still finds an
// answer that another replica shared or edited since (and not its old
// words), offers none once unshared there, nor while the org's
// knowledge_sharing is off; an org sharing nothing offers nothing.
func TestLookUpSeesChangesOfOtherReplicas(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		ctx, me := dbtest.Operator(), caller("acme", "cat")
		other := knowledge.NewService(d, f.orgs)
		suggest := func(k *knowledge.Service, q string) []string {
			t.Helper()
			got, err := held(k.Suggest(ctx, me, q))
			if err != nil {
				t.Fatal(err)
			}
			return ids(got)
		}
		if got := suggest(f.k, "How do we rotate the gateway certificates?"); len(got) != 0 {
			t.Fatalf("an org sharing nothing offered %v", got)
		}
		f.share("acme", "ben", "al", "Where is the kafka runbook?", "In the ops wiki, under kafka.")
		if got := suggest(f.k, "How do we rotate the gateway certificates?"); len(got) != 0 {
			t.Fatalf("an unrelated answer was offered: %v", got)
		}
		// Shared through the other replica's service: this one's words
		// of acme's answers are out of date.
		a := f.answered("acme", "ben", "al", "How do we rotate the gateway certificates?", "Renew them with certbot, then reload.")
		yes := true
		if _, err := other.Publish(ctx, caller("acme", "al"), a, &yes, nil); err != nil {
			t.Fatal(err)
		}
		if got := suggest(f.k, "How are gateway certificates rotated?"); len(got) != 1 || got[0] != a.MessageID {
			t.Fatalf("after another replica shared it, offered %v; want %s", got, a.MessageID)
		}
		f.settings("acme", orgs.Settings{KnowledgeSharing: orgs.SharingOff})
		if got := suggest(f.k, "How are gateway certificates rotated?"); len(got) != 0 {
			t.Fatalf("with knowledge_sharing off, offered %v", got)
		}
		f.settings("acme", orgs.Settings{KnowledgeSharing: orgs.SharingAsk})
		if err := other.Edit(ctx, caller("acme", "al"), a.MessageID, "Use the cert-manager operator for the ingress."); err != nil {
			t.Fatal(err)
		}
		if got := suggest(f.k, "How do we rotate the gateway certificates with the cert-manager operator?"); len(got) != 1 || got[0] != a.MessageID {
			t.Fatalf("after another replica edited it, offered %v; want %s", got, a.MessageID)
		}
		if got := suggest(f.k, "How do we rotate gateway certificates with certbot and reload?"); len(got) != 0 {
			t.Fatalf("after another replica edited it, its old words are offered: %v", got)
		}
		if err := other.Unshare(ctx, caller("acme", "al"), a.MessageID); err != nil {
			t.Fatal(err)
		}
		if got := suggest(f.k, "How are gateway certificates rotated?"); len(got) != 0 {
			t.Fatalf("after another replica unshared it, offered %v", got)
		}
	})
}

// TestLookUpReadsOnlyTheAnswersItOffers: when the org's answers together
// hold a question's words but none alone holds enough, the look-up decides
// without a full-text search or reading an answer; when one does, it reads
// the answers it may offer by their ids, with the version of the answers
// in the same statement, and no full-text search either;
// while no answer changes, the index is not read again; and an org of
// more answers than a replica indexes is searched.
func TestLookUpReadsOnlyTheAnswersItOffers(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		ctx, me := dbtest.Operator(), caller("acme", "cat")
		for i, name := range []string{"alpha", "beta", "gamma", "delta"} {
			f.share("acme", "al", "ben", "Where does "+name+" run?", fmt.Sprintf("%s runs in region %d.", name, i))
		}
		var mu sync.Mutex
		var seen []string
		d.OnStatement(func(q string) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, q)
		})
		t.Cleanup(func() { d.OnStatement(nil) })
		look := func(q string) ([]string, []string) {
			t.Helper()
			mu.Lock()
			seen = nil
			mu.Unlock()
			got, err := held(f.k.Suggest(ctx, me, q))
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			return ids(got), slices.Clone(seen)
		}
		searches := func(statements []string) (n int) {
			for _, s := range statements {
				if strings.Contains(s, "MATCH") || strings.Contains(s, "@@") {
					n++
				}
			}
			return n
		}
		// Every word is in some answer, two of five in each.
		look("Does alpha, beta, gamma or delta run?")
		if got, statements := look("Does alpha, beta, gamma or delta run?"); len(got) != 0 || len(statements) != 1 || searches(statements) != 0 {
			t.Errorf("a question no one answer holds enough of: offered %v after %d statements (%d searches), want none after 1 (the count)", got, len(statements), searches(statements))
		}
		got, statements := look("Where does gamma run?")
		if len(got) != 1 || len(statements) != 1 || searches(statements) != 0 {
			t.Errorf("a question one answer holds: offered %v after %d statements (%d searches), want one after 1 (its read, with the version of the answers)", got, len(statements), searches(statements))
		}
		// Changed elsewhere: the read's version is not the index's, which
		// is read again before the answers are.
		f.exec(`UPDATE shared_answer_counts SET version = version + 1 WHERE org_id = 'acme'`)
		got, statements = look("Where does gamma run?")
		if len(got) != 1 || len(statements) != 5 || searches(statements) != 0 {
			t.Errorf("after a change: offered %v after %d statements (%d searches), want one after 5 (the read, the count, the glossary and the answers indexed again, the read)", got, len(statements), searches(statements))
		}
		// An org of more answers than a replica indexes is searched.
		f.exec(`UPDATE shared_answer_counts SET answers = 2001, version = version + 1 WHERE org_id = 'acme'`)
		got, statements = look("Where does gamma run?")
		if len(got) != 1 || searches(statements) != 1 {
			t.Errorf("in an org too big to index: offered %v after %d searches, want one after 1", got, searches(statements))
		}
	})
}

// TestLookUpsReadAChangedIndexOnce: after an answer is shared, the
// look-ups of the org that run at once read its answers once between them,
// not once each. On both engines.
func TestLookUpsReadAChangedIndexOnce(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		ctx, me := dbtest.Operator(), caller("acme", "cat")
		f.share("acme", "al", "ben", "Where does alpha run?", "alpha runs in region 1.")
		if _, err := held(f.k.Suggest(ctx, me, "Where does alpha run?")); err != nil {
			t.Fatal(err)
		}
		f.share("acme", "al", "ben", "Where does beta run?", "beta runs in region 2.")
		var reads atomic.Int32
		d.OnStatement(func(q string) {
			if strings.Contains(q, "FROM shared_answers WHERE org_id = $1 ORDER BY question_id") {
				reads.Add(1)
				// Held, so that the other look-ups come while it runs.
				time.Sleep(100 * time.Millisecond)
			}
		})
		t.Cleanup(func() { d.OnStatement(nil) })
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 8 {
			wg.Go(func() {
				<-start
				if got, err := held(f.k.Suggest(ctx, me, "Where does beta run?")); err != nil || len(got) != 1 {
					t.Errorf("look-up = %v, %v; want the beta answer", ids(got), err)
				}
			})
		}
		close(start)
		wg.Wait()
		if n := reads.Load(); n != 1 {
			t.Fatalf("8 look-ups at once after a share read the org's answers %d times; want 1", n)
		}
	})
}

// held is the answers a look-up holds its question back with.
func held(found knowledge.Found, err error) ([]*knowledge.Answer, error) {
	return found.Held, err
}
