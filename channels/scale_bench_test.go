package channels

import (
	"fmt"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// scaleChannels is how many channels the scale benchmarks spread an org's
// messages over; bob is a member of all of them.
const scaleChannels = 20

// BenchmarkChannelScale measures get_messages (a page after a seq, and the
// latest 20), get_unread (5 unread in each of 20 channels) and
// search_messages (a word in every message, a word in one message of 7, a
// word in one of 10,000) with 1,000 and with 1,000,000 messages stored in
// the org, seeded with bulk SQL. The targets compare each operation's time at
// 1,000,000 with its time at 1,000 (20,000 with -short).
//
//	go test ./channels -run '^$' -bench ChannelScale -benchtime 200x
func BenchmarkChannelScale(b *testing.B) {
	for _, e := range dbtest.Engines {
		b.Run(string(e), func(b *testing.B) {
			d := dbtest.Open(b, e)
			s := fixture(b, d)
			ctx := dbtest.Operator()
			for i := range scaleChannels {
				if _, err := s.Create(ctx, alice, NewChannel{Name: fmt.Sprintf("c%02d", i), Members: []string{"bob"}}); err != nil {
					b.Fatal(err)
				}
			}
			seeded, sizes := 0, []int{1000, 1000000}
			if testing.Short() {
				sizes[1] = 20000
			}
			for _, total := range sizes {
				start := time.Now()
				seedMessages(b, d, seeded/scaleChannels, total/scaleChannels)
				b.Logf("%s: seeded %d messages in %s", e, total-seeded, time.Since(start).Round(time.Millisecond))
				seeded = total
				perChannel := int64(total / scaleChannels)
				b.Run(fmt.Sprintf("messages=%d", total), func(b *testing.B) {
					scaleCases(b, s, d, perChannel)
				})
			}
		})
	}
}

func scaleCases(b *testing.B, s *Service, d *db.DB, perChannel int64) {
	ctx := dbtest.Operator()
	b.Run("get_messages/after", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			p, err := s.Messages(ctx, bob, fmt.Sprintf("c%02d", i%scaleChannels), Read{After: perChannel / 2, Limit: 20})
			if err != nil || len(p.Messages) != 20 {
				b.Fatalf("%v, %v", p, err)
			}
		}
	})
	b.Run("get_messages/latest", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			p, err := s.Messages(ctx, bob, fmt.Sprintf("c%02d", i%scaleChannels), Read{Latest: 20})
			if err != nil || len(p.Messages) != 20 {
				b.Fatalf("%v, %v", p, err)
			}
		}
	})
	b.Run("get_unread", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			// Moves that earlier cases left pending go first, then the reset.
			if err := s.cursors.settle(ctx, bob); err != nil {
				b.Fatal(err)
			}
			if _, err := dbtest.Exec(d, `UPDATE channel_members SET read_seq = $1 WHERE org_id = 'acme' AND user_id = 'bob'`, perChannel-5); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			got, err := s.Unread(ctx, bob, "")
			if err != nil || len(got.Messages) != MaxHanded {
				b.Fatalf("%v, %v", got, err)
			}
		}
	})
	for _, q := range []struct{ name, query string }{{"every", "status"}, {"oneinseven", "retry"}, {"rare", "zanzibar"}} {
		b.Run("search/"+q.name, func(b *testing.B) {
			for b.Loop() {
				got, err := s.Search(ctx, bob, Search{Query: q.query, Limit: 20})
				if err != nil || len(got) == 0 {
					b.Fatalf("%d found, %v", len(got), err)
				}
			}
		})
	}
}

// seedMessages stores messages from+1 to to of each scale channel, posted
// by alice one second apart, and moves the channels' last_seq and bob's read
// cursors to the end. Every body has "status"; one in 7 has "retry"; one in
// 10,000 has "zanzibar".
func seedMessages(b *testing.B, d *db.DB, from, to int) {
	b.Helper()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	query := seedMessagesPostgres
	var baseArg any = base
	if d.Engine == db.SQLite {
		query, baseArg = seedMessagesSQLite, base.Format("2006-01-02 15:04:05")
	}
	if _, err := dbtest.Exec(d, query, baseArg, int64(from+1), int64(to)); err != nil {
		b.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE channels SET last_seq = $1 WHERE org_id = 'acme'`,
		`UPDATE channel_members SET read_seq = $1 WHERE org_id = 'acme'`,
	} {
		if _, err := dbtest.Exec(d, q, int64(to)); err != nil {
			b.Fatal(err)
		}
	}
	// Postgres: as autovacuum would after such growth, vacuum (which moves
	// the GIN index's pending entries into the index proper; until then the
	// planner rightly prefers reading the table) and analyze.
	if d.Engine == db.Postgres {
		if _, err := dbtest.Exec(d, `VACUUM ANALYZE`); err != nil {
			b.Fatal(err)
		}
	}
}

const seedMessagesPostgres = `
	INSERT INTO channel_messages (org_id, channel, seq, id, author_id, by_agent, kind, priority, body, reply_to, mentions, created_at)
	SELECT 'acme', 'c' || lpad(c::text, 2, '0'), s, 'm_' || lpad(to_hex(c::bigint * 1000000000 + s), 24, '0'), 'alice', false, '', 'normal',
	       'status update ' || (ARRAY['retry','cache','build','deploy','alpha','beta','gamma'])[1 + s % 7] || ' '
	       || (ARRAY['red','green','blue','cyan','pink','gold','gray','teal','navy','lime','plum','rose','sand'])[1 + s % 13]
	       || CASE WHEN s % 10000 = 7 THEN ' zanzibar' ELSE '' END || ' item ' || s,
	       NULL, '[]', $1::timestamptz + (s * 20 + c) * interval '1 second'
	FROM generate_series(0, 19) c, generate_series($2::bigint, $3::bigint) s`

const seedMessagesSQLite = `
	WITH RECURSIVE s(x) AS (SELECT $2 UNION ALL SELECT x + 1 FROM s WHERE x < $3),
	c(y) AS (SELECT 0 UNION ALL SELECT y + 1 FROM c WHERE y < 19)
	INSERT INTO channel_messages (org_id, channel, seq, id, author_id, by_agent, kind, priority, body, reply_to, mentions, created_at)
	SELECT 'acme', printf('c%02d', y), x, printf('m_%024x', y * 1000000000 + x), 'alice', 0, '', 'normal',
	       'status update ' || (CASE x % 7 WHEN 0 THEN 'retry' WHEN 1 THEN 'cache' WHEN 2 THEN 'build' WHEN 3 THEN 'deploy' WHEN 4 THEN 'alpha' WHEN 5 THEN 'beta' ELSE 'gamma' END)
	       || ' color' || (x % 13) || CASE WHEN x % 10000 = 7 THEN ' zanzibar' ELSE '' END || ' item ' || x,
	       NULL, '[]', datetime($1, '+' || (x * 20 + y) || ' seconds')
	FROM s, c`
