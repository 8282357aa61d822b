package channels

import (
	"slices"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/notify"
)

func queuedEvents(t *testing.T, d *db.DB) []string {
	t.Helper()
	rows, err := d.Query(dbtest.Operator(), `SELECT kind, user_id, urgent FROM notify_events ORDER BY kind, user_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var kind, user string
		var urgent bool
		if err := rows.Scan(&kind, &user, &urgent); err != nil {
			t.Fatal(err)
		}
		if urgent {
			kind += "!"
		}
		out = append(out, kind+":"+user)
	}
	return out
}

// TestPostsQueueTheirNotifications: a mention queues one for the member
// mentioned, an urgent post one for every other member, marked urgent, and
// an agent's post held in human mode one for its author; a post that fails
// (not a member) queues nothing.
func TestPostsQueueTheirNotifications(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		n := notify.NewService(d, notify.DefaultConfig(), nil)
		s.Notify(n)
		// Each member can be reached: a webhook, chosen for these kinds.
		on := map[notify.Kind][]string{notify.KindMention: {notify.ChannelWebhook}, notify.KindUrgent: {notify.ChannelWebhook}, notify.KindPost: {notify.ChannelWebhook}}
		for _, c := range []ctalk.Caller{alice, bob, carol} {
			if _, _, err := n.AddWebhook(ctx, c.OrgID, c.UserID, c.UserID, "https://hooks.example.net/"+c.UserID, notify.FormatJSON); err != nil {
				t.Fatal(err)
			}
			if _, err := n.SaveSettings(ctx, ctalk.Caller{OrgID: c.OrgID, UserID: c.UserID}, notify.Settings{Channels: on}); err != nil {
				t.Fatal(err)
			}
		}
		must(s.Create(ctx, alice, NewChannel{Name: "eng", Members: []string{"bob", "carol"}}))
		must(s.Post(ctx, alice, Post{Channel: "eng", Text: "hi @carol"}))
		if got := queuedEvents(t, d); !slices.Equal(got, []string{"mention:carol"}) {
			t.Fatalf("after a mention: %v", got)
		}
		must(s.Post(ctx, bob, Post{Channel: "eng", Text: "prod down", Priority: PriorityUrgent}))
		if _, err := s.Post(ctx, mallory, Post{Channel: "eng", Text: "@carol"}); err == nil {
			t.Fatal("a stranger posted")
		}
		humanMode(t, d)
		must(s.AgentPost(ctx, bob, Post{Channel: "eng", Text: "held @alice"}))
		want := []string{"mention:carol", "post:bob", "urgent!:alice", "urgent!:carol"}
		if got := queuedEvents(t, d); !slices.Equal(got, want) {
			t.Fatalf("queued %v, want %v", got, want)
		}
	})
}
