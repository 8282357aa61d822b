// Package demo seeds a demonstration organization: people who own things,
// questions waiting with a draft, a channel conversation of people and
// agents, a shared answer and a week of tool calls for the overview. The
// screenshots command photographs it and "ctalk demo" serves it.
package demo

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/channels"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/knowledge"
	"github.com/ctalk/ctalk/orgs"
)

// Clock is a database's clock, set back while the demo is seeded so that
// the pages show a realistic spread of times.
type Clock struct {
	now func() time.Time
	ago atomic.Int64
}

// NewClock returns a clock that reads now until set back.
func NewClock(now func() time.Time) *Clock { return &Clock{now: now} }

// Now is the time the database records.
func (c *Clock) Now() time.Time { return c.now().Add(-time.Duration(c.ago.Load())) }

// set makes Now read ago in the past.
func (c *Clock) set(ago time.Duration) { c.ago.Store(int64(ago)) }

// Password is every demo person's password.
const Password = "demo-password-1"

// Mail is the demo person's address, which their notifications go to.
const Mail = "alice@acme.example"

// MailShown is the subject of the notification mail of the question of
// Org.Question, from Bob.
const MailShown = "Bob Diaz asks you a question"

// People are the demo organization's people, its admin first.
var People = []string{"alice", "bob", "carol", "dev"}

// Org is the demo organization, seeded.
type Org struct {
	OrgID, UserID string
	// Question is a question waiting for UserID, with a draft.
	Question string
	// Ask asks UserID one more question, as an agent would while a page
	// is open.
	Ask func(ctx context.Context) error
	// Draft has UserID's agent propose its draft answer to the question
	// waiting for UserID without one, Carol's, and returns its id.
	Draft func(ctx context.Context) (string, error)
}

// Seed creates the demo organization on a, whose database reads clock:
// alice (admin) with two questions waiting for her, one with her agent's
// draft, and two of her own, one answered. Times are set back so that the
// pages show a realistic spread.
func Seed(ctx context.Context, clock *Clock, a *app.Assembly) (*Org, error) {
	defer clock.set(0)
	if err := seedPeople(ctx, a, clock.set); err != nil {
		return nil, err
	}
	if err := seedAnswered(ctx, a, clock.set); err != nil {
		return nil, err
	}
	q, undrafted, err := seedWaiting(ctx, a, clock.set)
	if err != nil {
		return nil, err
	}
	if err := seedChannel(ctx, a, clock.set); err != nil {
		return nil, err
	}
	seedCalls(a)
	more := func(ctx context.Context) error {
		_, err := a.Inbox.Ask(ctx, ctalk.Caller{OrgID: "acme", UserID: "dev"}, inbox.Ask{To: "alice", Text: "Do refunds go through the same queue as charges?"})
		return err
	}
	draft := func(ctx context.Context) (string, error) {
		_, _, err := a.Inbox.Propose(ctx, ctalk.Caller{OrgID: "acme", UserID: "alice"}, undrafted.ID,
			"Yes, there is a freeze until Monday 09:00, so not on Friday afternoon. Staging is open; billing 3.2 goes to production once the freeze lifts.")
		return undrafted.ID, err
	}
	return &Org{OrgID: "acme", UserID: "alice", Question: q.ID, Ask: more, Draft: draft}, nil
}

// seedPeople registers Acme Robotics three days ago with alice, its admin,
// and three members, each owning something.
func seedPeople(ctx context.Context, a *app.Assembly, at func(time.Duration)) error {
	at(72 * time.Hour)
	if _, err := a.Orgs.Register(ctx, orgs.NewOrg{ID: "acme", Name: "Acme Robotics", AdminPassword: Password + "-admin"}); err != nil {
		return err
	}
	for _, u := range []orgs.NewUser{
		{ID: "alice", Name: "Alice Ng", Email: Mail, Role: orgs.RoleAdmin, Ownership: []string{"payments-service", "billing"}, Notes: "Ask me about charges and refunds."},
		{ID: "bob", Name: "Bob Diaz", Role: orgs.RoleMember, Ownership: []string{"alpha-repo", "mobile app"}},
		{ID: "carol", Name: "Carol Ito", Role: orgs.RoleMember, Ownership: []string{"infra", "deploys"}},
		{ID: "dev", Name: "Dev Patel", Role: orgs.RoleMember, Ownership: []string{"data pipeline"}},
	} {
		u.Password = Password
		if _, err := a.Orgs.AddUser(ctx, "acme", u); err != nil {
			return err
		}
	}
	return nil
}

// demoAsk asks a question of to from from, ago in the past.
func demoAsk(ctx context.Context, a *app.Assembly, at func(time.Duration), ago time.Duration, from, to, text string) (*inbox.Question, error) {
	at(ago)
	return a.Inbox.Ask(ctx, ctalk.Caller{OrgID: "acme", UserID: from}, inbox.Ask{To: to, Text: text})
}

// seedAnswered has alice ask bob a question a day ago, which he answers
// and shares with the organization.
func seedAnswered(ctx context.Context, a *app.Assembly, at func(time.Duration)) error {
	answered, err := demoAsk(ctx, a, at, 26*time.Hour, "alice", "bob", "Which branch of alpha-repo has the new backoff for the card reader?")
	if err != nil {
		return err
	}
	at(25 * time.Hour)
	const answer = "It is on release/2.4; main gets it on Thursday."
	bob := ctalk.Caller{OrgID: "acme", UserID: "bob"}
	if _, _, err := a.Inbox.Propose(ctx, bob, answered.ID, answer); err != nil {
		return err
	}
	sent, err := a.Inbox.Send(ctx, bob, answered.ID, answer)
	if err != nil {
		return err
	}
	share := true
	_, err = a.Knowledge.Publish(ctx, bob, knowledge.Answered{MessageID: sent.ID, AskerID: sent.From,
		AnswererID: sent.To, Question: sent.Text, Answer: sent.Answer, AnsweredAt: *sent.ResolvedAt}, &share, nil)
	return err
}

// seedWaiting asks the questions still open: one of alice's own, and two
// waiting for her, the first of which (drafted) has her agent's draft.
func seedWaiting(ctx context.Context, a *app.Assembly, at func(time.Duration)) (drafted, undrafted *inbox.Question, err error) {
	if _, err := demoAsk(ctx, a, at, 3*time.Hour, "alice", "carol", "Is the staging database migrated to the new schema yet?"); err != nil {
		return nil, nil, err
	}
	drafted, err = demoAsk(ctx, a, at, 2*time.Hour, "bob", "alice", "What is the retry logic in payments-service? A customer sees two charges after a timeout.")
	if err != nil {
		return nil, nil, err
	}
	at(90 * time.Minute)
	if _, _, err := a.Inbox.Propose(ctx, ctalk.Caller{OrgID: "acme", UserID: "alice"}, drafted.ID,
		"Charges retry 3 times with exponential backoff (1 s, 4 s, 16 s), each with the same idempotency key, so a retry never charges twice. "+
			"Two charges mean two keys: the client made a new key after its own timeout. Reuse the key on retry (see payments-service/docs/retries.md)."); err != nil {
		return nil, nil, err
	}
	undrafted, err = demoAsk(ctx, a, at, 12*time.Minute, "carol", "alice", "Can I deploy billing on Friday afternoon, or is there a freeze?")
	return drafted, undrafted, err
}

// seedChannel creates #payments with a short conversation of people and
// their agents.
func seedChannel(ctx context.Context, a *app.Assembly, at func(time.Duration)) error {
	as := func(id string) ctalk.Caller { return ctalk.Caller{OrgID: "acme", UserID: id} }
	at(5 * time.Hour)
	if _, err := a.Channels.Create(ctx, as("alice"), channels.NewChannel{Name: "payments", Topic: "Charges, refunds and the card reader",
		Members: []string{"bob", "carol", "dev"}}); err != nil {
		return err
	}
	for _, m := range []struct {
		ago      time.Duration
		from     string
		text     string
		kind     string
		priority string
		agent    bool
	}{
		{4 * time.Hour, "carol", "Deploy of billing 3.2 to staging is done; production after the freeze lifts.", "status", "", true},
		{3 * time.Hour, "bob", "@alice the card reader retries twice on a timeout; is that safe with the new keys?", "", "", false},
		{150 * time.Minute, "alice", "Yes: each retry reuses its idempotency key, so a charge goes through once.", "", "", false},
		{40 * time.Minute, "dev", "Refund queue is backed up by 2,000 jobs; looking into it.", "status", "high", true},
	} {
		at(m.ago)
		if _, err := a.Channels.Post(ctx, as(m.from), channels.Post{Channel: "payments", Text: m.text, Type: m.kind, Priority: m.priority, ByAgent: m.agent}); err != nil {
			return err
		}
	}
	return nil
}

// seedCalls records a week of the agents' tool calls in the audit log, for
// the overview: a few hundred a day, some refused, the waits slow by design.
func seedCalls(a *app.Assembly) {
	if a.Audit == nil {
		return
	}
	tools := []struct {
		name string
		ms   float64
	}{{"check_inbox", 8}, {"wait_for_inbox", 2500}, {"ask_person", 14}, {"propose_response", 11}, {"get_messages", 6}, {"whoami", 2}}
	now := time.Now().UTC()
	users := People
	for i := range 1400 {
		t := tools[i*7%len(tools)]
		outcome := "ok"
		if i%37 == 0 {
			outcome = "invalid"
		} else if i%211 == 0 {
			outcome = "not_found"
		}
		a.Audit.Record(audit.Event{At: now.Add(-time.Duration(i) * 7 * time.Minute), OrgID: "acme", UserID: users[i%len(users)],
			Tool: t.name, Outcome: outcome, DurationMS: t.ms * (0.5 + float64(i%10)/5)})
	}
}
