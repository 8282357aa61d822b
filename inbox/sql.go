package inbox

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/ctalk/ctalk/db"
)

// The SQL of the questions, drafts and interactions tables, which inbox
// owns. Other packages call inbox's functions; the load harness measures
// these statements through the statements of baseline.go.

// askChecksSQL reads what an ask must pass, in one statement: whether the
// recipient ($3) is in the org ($1), with their away status (until, delegate,
// note), and how many questions the asker ($2)
// asked since $4 (the rate) and the pair exchanged, either way, since $5 (the
// loop breaker), each with the oldest of them. The pair is read as one index
// range per direction: an OR of the two would read the pair's whole history.
// users belongs to orgs; this one read of it (is the recipient a current
// member, and are they away?) stays inside the statement so that a Postgres
// ask remains one round trip under its advisory locks, and so that the away
// check and the ask read the same row.
const askChecksSQL = `
	SELECT CASE WHEN u.id IS NULL THEN 0 ELSE 1 END, u.away_until, COALESCE(u.away_delegate, ''), COALESCE(u.away_note, ''), r.n, r.oldest, l.n, l.oldest
	FROM (SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM questions
	      WHERE org_id = $1 AND asker_id = $2 AND created_at > $4) r
	CROSS JOIN (SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM (
	          SELECT created_at FROM questions WHERE org_id = $1 AND recipient_id = $2 AND asker_id = $3 AND created_at > $5
	          UNION ALL
	          SELECT created_at FROM questions WHERE org_id = $1 AND recipient_id = $3 AND asker_id = $2 AND created_at > $5) pair) l
	LEFT JOIN users u ON u.org_id = $1 AND u.id = $3 AND u.removed_at IS NULL`

// askPostgresSQL is a whole ask on Postgres as one statement, so one round
// trip and no BEGIN or COMMIT: the checks of askChecksSQL, then, when they
// pass ($10 and $11 are the limits, zero for none; with $14 true, a
// recipient away at $9 is not asked), the insert and the pair's statistics.
// With $15 true the question is notified from its row, marked with its
// transaction's id, which notify's worker reads the outbox by (see
// notify.Service.Step). It returns the checks and whether the question was
// inserted (not when a concurrent retry with the same key won).
const askPostgresSQL = `
	WITH checks (recipient, away_until, away_delegate, away_note, rate_n, rate_oldest, loop_n, loop_oldest) AS (` + askChecksSQL + `),
	ins AS (
		INSERT INTO questions (org_id, id, asker_id, recipient_id, body, status, idempotency_key, created_at, thread_id, follow_up_of, notify, notify_xid)
		SELECT $1, $6, $2, $3, $7, 'pending', $8, $9, $12, $13, $15, CASE WHEN $15 THEN pg_current_xact_id() END FROM checks
		WHERE recipient > 0 AND ($10 <= 0 OR rate_n < $10) AND ($11 <= 0 OR loop_n < $11)
		  AND (NOT $14 OR away_until IS NULL OR away_until <= $9)
		ON CONFLICT (org_id, asker_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
		RETURNING id),
	pair AS (
		INSERT INTO interactions (org_id, asker_id, recipient_id, asked, last_at) SELECT $1, $2, $3, 1, $9 FROM ins
		ON CONFLICT (org_id, asker_id, recipient_id) DO UPDATE SET asked = interactions.asked + 1, last_at = excluded.last_at)
	SELECT recipient, away_until, away_delegate, away_note, rate_n, rate_oldest, loop_n, loop_oldest, (SELECT COUNT(*) FROM ins) FROM checks`

// askInsertSQL stores a question on SQLite, where an ask is a transaction of
// askChecksSQL, this and askPairStatsSQL; nothing when a question with the
// same idempotency key exists. With $10 true the question is notified from
// its row: notify's worker reads it as an outbox (see notify.Service.Step).
const askInsertSQL = `
	INSERT INTO questions (org_id, id, asker_id, recipient_id, body, status, idempotency_key, created_at, thread_id, follow_up_of, notify)
	VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7, $8, $9, $10)
	ON CONFLICT (org_id, asker_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING`

// askPairStatsSQL counts an ask in the pair's statistics.
const askPairStatsSQL = `
	INSERT INTO interactions (org_id, asker_id, recipient_id, asked, last_at) VALUES ($1, $2, $3, 1, $4)
	ON CONFLICT (org_id, asker_id, recipient_id) DO UPDATE SET asked = interactions.asked + 1, last_at = excluded.last_at`

const questionColumns = `id, asker_id, recipient_id, body, status, created_at, resolved_at, resolution, idempotency_key, thread_id, follow_up_of, info_requested_at, events`

// inboxPageWhere keeps a user's ($2) pending questions after a cursor
// (created_at $3, id $4), in the order of a page of at most $5.
const inboxPageWhere = ` FROM questions
	WHERE org_id = $1 AND recipient_id = $2 AND status = 'pending'
	  AND (created_at > $3 OR (created_at = $3 AND id > $4))
	ORDER BY created_at, id LIMIT $5`

// inboxPageSQL reads a page of a user's pending questions, as their person
// sees it in the web app.
const inboxPageSQL = `SELECT ` + questionColumns + inboxPageWhere

// checkInboxPageSQL reads a page of check_inbox: inboxPageSQL with, on each
// question, whether it was not yet handed to its recipient, so that a page
// all handed over is known without a second statement.
const checkInboxPageSQL = `SELECT ` + questionColumns + `, recipient_handed_at IS NULL` + inboxPageWhere

// repliesPageSQL reads a page of the questions a user asked that were
// resolved after a position (resolved_at, id): after the time $3 alone when
// the id $4 is empty (check_replies' since), else after the pair (its
// cursor), so that questions resolved in one instant are neither skipped
// nor repeated at a page boundary. resolved_at >= $3 bounds the index range.
const repliesPageSQL = `SELECT ` + questionColumns + ` FROM questions
	WHERE org_id = $1 AND asker_id = $2 AND status <> 'pending' AND resolved_at >= $3
	  AND (resolved_at > $3 OR ($4 <> '' AND id > $4))
	ORDER BY resolved_at, id LIMIT $5`

// draftColumns are the columns scanDraft reads.
const draftColumns = `question_id, version, body, created_at, approved_at, rejected_at, rejection_note, by_person`

// The history of a page of questions sent to a user is read in one
// statement, the UNION ALL of the four reads below, whose rows share one
// layout: the kind of row, then the columns readHistory scans. Their
// parameters are the org ($1), the user ($2), n others ($3 on) and, for the
// drafts, m questions (after the others). The casts give every column one
// type on Postgres, which types a UNION's columns a pair of branches at a
// time.
const (
	kindPair     = 0
	kindExchange = 1
	kindDraft    = 2
	kindSender   = 3
)

// unionAll joins statements of the history's row layout into one.
func unionAll(parts ...string) string {
	return strings.Join(parts, "\n\tUNION ALL\n")
}

// historySQL reads the whole history of a page of m questions from n
// senders: who they are, their pair statistics, recent exchanges and
// latest drafts.
// Building its text costs about a tenth of running it on SQLite, so the
// texts of the last few shapes of page are kept.
func historySQL(n, m int) string {
	key := [2]int{n, m}
	historyTexts.mu.Lock()
	defer historyTexts.mu.Unlock()
	if q, ok := historyTexts.byShape[key]; ok {
		return q
	}
	if len(historyTexts.byShape) >= maxHistoryTexts {
		clear(historyTexts.byShape)
	}
	q := unionAll(pairRowsSQL(n), exchangeRowsSQL(n), draftRowsSQL(3+n, m), senderRowsSQL(n))
	historyTexts.byShape[key] = q
	return q
}

// maxHistoryTexts bounds the texts historySQL keeps: a page of 50 from 50
// senders is some 30 KB of SQL.
const maxHistoryTexts = 64

var historyTexts = struct {
	mu      sync.Mutex
	byShape map[[2]int]string
}{byShape: map[[2]int]string{}}

// pairRowsSQL reads the statistics of the pairs of the user and each of
// n others, both directions: primary-key lookups.
func pairRowsSQL(n int) string {
	others := db.Placeholders(3, n)
	cols := `SELECT ` + strconv.Itoa(kindPair) + `, '', asker_id, recipient_id, asked, '', '', last_at, CAST(NULL AS TIMESTAMPTZ), CAST(NULL AS TIMESTAMPTZ), FALSE FROM interactions`
	return cols + `
	WHERE org_id = $1 AND asker_id = $2 AND recipient_id IN (` + others + `)
	UNION ALL
	` + cols + `
	WHERE org_id = $1 AND recipient_id = $2 AND asker_id IN (` + others + `)`
}

// exchangeRowsSQL reads the last RecentExchanges answered exchanges of the
// user with each of n others, per direction: one ordered, limited index
// range per pair and direction, so that it costs the same for a pair with
// ten questions or ten thousand. An OR of the directions, or a window over
// the pairs, would read the pairs' whole history.
func exchangeRowsSQL(n int) string {
	var b strings.Builder
	for i := range n {
		other := "$" + strconv.Itoa(3+i)
		for j, dir := range [2][2]string{{"$2", other}, {other, "$2"}} {
			if i > 0 || j > 0 {
				b.WriteString("\n\tUNION ALL\n")
			}
			fmt.Fprintf(&b, `	SELECT %d, id, asker_id, recipient_id, 0, body, resolution, resolved_at, CAST(NULL AS TIMESTAMPTZ), CAST(NULL AS TIMESTAMPTZ), FALSE
		FROM (SELECT id, asker_id, recipient_id, body, resolution, resolved_at FROM questions
		WHERE org_id = $1 AND asker_id = %s AND recipient_id = %s AND status = 'answered'
		ORDER BY resolved_at DESC LIMIT %d) x%d_%d`, kindExchange, dir[0], dir[1], RecentExchanges, i, j)
		}
	}
	return b.String()
}

// draftRowsSQL reads the newest draft of each of m questions, whose
// placeholders start at first.
func draftRowsSQL(first, m int) string {
	return `SELECT ` + strconv.Itoa(kindDraft) + `, question_id, '', '', version, body, rejection_note, created_at, approved_at, rejected_at, by_person FROM drafts d
	WHERE org_id = $1 AND question_id IN (` + db.Placeholders(first, m) + `)
	  AND version = (SELECT MAX(version) FROM drafts l WHERE l.org_id = d.org_id AND l.question_id = d.question_id)`
}

// senderRowsSQL reads the n others as a page shows its senders: name,
// ownership, notes, profile notes and whether they were removed, removed
// ones included, and nothing else (not the presence that orgs.Profiles
// reads). users belongs to orgs; this one read of it stays inside the
// history's statement so that a page costs one round trip fewer, and
// ownership is decoded by orgs.DecodeOwnership. In the row layout: the id,
// the ownership as asker, the name as recipient, the notes as body, the
// profile notes as text, and removal as the last column.
func senderRowsSQL(n int) string {
	return `SELECT ` + strconv.Itoa(kindSender) + `, id, ownership, name, 0, notes, profile_notes, CAST(NULL AS TIMESTAMPTZ), CAST(NULL AS TIMESTAMPTZ), CAST(NULL AS TIMESTAMPTZ), removed_at IS NOT NULL FROM users
	WHERE org_id = $1 AND id IN (` + db.Placeholders(3, n) + `)`
}

// markHandedSQL marks n questions ($3 on) handed over at $1 through column,
// one of the three *_handed_at columns, where they were not yet.
func markHandedSQL(column string, n int) string {
	return `UPDATE questions SET ` + column + ` = $1 WHERE org_id = $2 AND ` + column + ` IS NULL AND id IN (` + db.Placeholders(3, n) + `)`
}

// The statements of the harness's seeding (baseline.go), which stores rows as the service's
// own statements would have left them.
const (
	seedQuestionSQL = `INSERT INTO questions (org_id, id, asker_id, recipient_id, body, status, created_at, resolved_at, resolution, recipient_handed_at, asker_handed_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $8, $8)`
	seedHistoryPostgresSQL = `INSERT INTO questions (org_id, id, asker_id, recipient_id, body, status, created_at, resolved_at, resolution, recipient_handed_at, asker_handed_at)
		SELECT $1, 'qh_' || g.n, 'u' || (g.n % $2), 'u' || ((g.n % $2 + 1 + (g.n / $2) % ($2 - 1)) % $2),
		       'seeded question ' || g.n, 'answered',
		       $3::timestamptz - g.n * interval '1 second',
		       $3::timestamptz - (g.n - 30) * interval '1 second',
		       'seeded answer ' || g.n,
		       $3::timestamptz - (g.n - 30) * interval '1 second',
		       $3::timestamptz - (g.n - 30) * interval '1 second'
		FROM generate_series($4::bigint, $5::bigint) AS g(n)`
	// SQLite stores times as text in the driver's layout; strftime writes
	// whole seconds in that same layout, so comparisons and scans agree.
	seedHistorySQLiteSQL = `INSERT INTO questions (org_id, id, asker_id, recipient_id, body, status, created_at, resolved_at, resolution, recipient_handed_at, asker_handed_at)
		WITH RECURSIVE seq(n) AS (SELECT $4 UNION ALL SELECT n + 1 FROM seq WHERE n < $5)
		SELECT $1, 'qh_' || n, 'u' || (n % $2), 'u' || ((n % $2 + 1 + (n / $2) % ($2 - 1)) % $2),
		       'seeded question ' || n, 'answered',
		       strftime('%Y-%m-%d %H:%M:%S+00:00', $3, '-' || n || ' seconds'),
		       strftime('%Y-%m-%d %H:%M:%S+00:00', $3, '-' || n || ' seconds', '+30 seconds'),
		       'seeded answer ' || n,
		       strftime('%Y-%m-%d %H:%M:%S+00:00', $3, '-' || n || ' seconds', '+30 seconds'),
		       strftime('%Y-%m-%d %H:%M:%S+00:00', $3, '-' || n || ' seconds', '+30 seconds')
		FROM seq`
	analyzeQuestionsSQL = `ANALYZE questions`
	clearPairStatsSQL   = `DELETE FROM interactions WHERE org_id = $1`
	rebuildPairStatsSQL = `INSERT INTO interactions (org_id, asker_id, recipient_id, asked, last_at)
		SELECT org_id, asker_id, recipient_id, COUNT(*), MAX(COALESCE(resolved_at, created_at))
		FROM questions WHERE org_id = $1 GROUP BY org_id, asker_id, recipient_id`
)

// claimInboxSQL hands a user ($3) up to $4 of their pending questions not
// yet handed over, oldest first, marking them at $1, and returns them. The
// outer conditions repeat the inner ones so that, under concurrency,
// Postgres re-checks them on the row it locks.
const claimInboxSQL = `UPDATE questions SET recipient_handed_at = $1
	WHERE org_id = $2 AND recipient_id = $3 AND status = 'pending' AND recipient_handed_at IS NULL
	  AND id IN (SELECT id FROM questions
	             WHERE org_id = $2 AND recipient_id = $3 AND status = 'pending' AND recipient_handed_at IS NULL
	             ORDER BY created_at, id LIMIT $4)
	RETURNING ` + questionColumns

// claimWithdrawalsSQL hands a recipient ($3) the notices of questions
// withdrawn after they were shown them, marking them at $1.
const claimWithdrawalsSQL = `UPDATE questions SET withdrawal_handed_at = $1
	WHERE org_id = $2 AND recipient_id = $3 AND status = 'withdrawn' AND withdrawal_handed_at IS NULL
	RETURNING ` + questionColumns

// claimRepliesSQL hands an asker ($3) their resolved questions not yet
// handed over, and their open ones with news (a forward, a request for
// information), or only $4 when it is not empty, marking them at $1.
const claimRepliesSQL = `UPDATE questions SET asker_handed_at = $1
	WHERE org_id = $2 AND asker_id = $3 AND (status <> 'pending' OR asker_news_at IS NOT NULL) AND asker_handed_at IS NULL
	  AND ($4 = '' OR id = $4)
	RETURNING ` + questionColumns

// linkedDraftSQL reads the question and version of the draft an approval
// link's token hash ($1) was issued for, by an earlier release.
const linkedDraftSQL = `SELECT question_id, version FROM drafts WHERE approval_token_hash = $1`

// questionByKeySQL reads the question an asker ($2) asked with an
// idempotency key ($3).
const questionByKeySQL = `SELECT ` + questionColumns + ` FROM questions WHERE org_id = $1 AND asker_id = $2 AND idempotency_key = $3`

// questionSQL reads a question ($2) that a user ($3) asked or was asked;
// questionForUpdate appends FOR UPDATE on Postgres.
const questionSQL = `SELECT ` + questionColumns + ` FROM questions WHERE org_id = $1 AND id = $2 AND (asker_id = $3 OR recipient_id = $3)`

// nextDraftVersionSQL reads the version a new draft of a question ($2) takes.
const nextDraftVersionSQL = `SELECT COALESCE(MAX(version), 0) + 1 FROM drafts WHERE org_id = $1 AND question_id = $2`

// insertDraftSQL stores a draft, approved at $6 when the person wrote it
// ($7).
const insertDraftSQL = `INSERT INTO drafts (org_id, question_id, version, body, created_at, approved_at, by_person) VALUES ($1, $2, $3, $4, $5, $6, $7)`

// latestDraftSQL reads the newest draft of a question ($2).
const latestDraftSQL = `SELECT ` + draftColumns + ` FROM drafts WHERE org_id = $1 AND question_id = $2 ORDER BY version DESC LIMIT 1`

// recentDraftsSQL reads the newest $2 drafts of each of n questions ($3
// on), newest first, each with how many drafts its question has: one
// statement for a page of the web app's inbox.
func recentDraftsSQL(n int) string {
	return `SELECT ` + draftColumns + `, n FROM (
		SELECT ` + draftColumns + `,
		       ROW_NUMBER() OVER (PARTITION BY question_id ORDER BY version DESC) AS rn,
		       COUNT(*) OVER (PARTITION BY question_id) AS n
		FROM drafts WHERE org_id = $1 AND question_id IN (` + db.Placeholders(3, n) + `)) x
	WHERE rn <= $2 ORDER BY question_id, version DESC`
}

// approveDraftSQL records at $1 the person's approval of a draft version
// ($4) of a question ($3), taking back a rejection.
const approveDraftSQL = `UPDATE drafts SET approved_at = $1, rejected_at = NULL, rejection_note = NULL
	WHERE org_id = $2 AND question_id = $3 AND version = $4`

// rejectDraftSQL records at $1 the person's rejection of a draft version
// ($4) of a question ($3) with their note ($5), taking back an approval.
const rejectDraftSQL = `UPDATE drafts SET rejected_at = $1, rejection_note = $5, approved_at = NULL
	WHERE org_id = $2 AND question_id = $3 AND version = $4`

// resolveSQL records the outcome of a question ($5) that is still pending,
// for the asker to be handed even when they were handed news of it before.
const resolveSQL = `UPDATE questions SET status = $1, resolution = $2, resolved_at = $3, asker_handed_at = NULL WHERE org_id = $4 AND id = $5 AND status = 'pending'`

// touchPairSQL moves the time of a pair's last exchange to $1.
const touchPairSQL = `UPDATE interactions SET last_at = $1 WHERE org_id = $2 AND asker_id = $3 AND recipient_id = $4`

// settleUnseenWithdrawalSQL marks the withdrawal of a question ($3) as
// handed over when its recipient was never shown the question.
const settleUnseenWithdrawalSQL = `UPDATE questions SET withdrawal_handed_at = $1 WHERE org_id = $2 AND id = $3 AND recipient_handed_at IS NULL`

// countsSQL counts, for a person ($2), the questions waiting for them, the
// drafts proposed on those, and their own questions answered or declined;
// the pending and asker indexes serve it.
const countsSQL = `SELECT
	(` + waitingSQL + `),
	(SELECT COUNT(*) FROM drafts d JOIN questions q ON q.org_id = d.org_id AND q.id = d.question_id
		WHERE q.org_id = $1 AND q.recipient_id = $2 AND q.status = 'pending'),
	(SELECT COUNT(*) FROM questions WHERE org_id = $1 AND asker_id = $2 AND status IN ('answered', 'declined'))`

// waitingSQL counts the questions waiting for a recipient ($2), for the web
// app's title; the partial index of pending questions serves it.
const waitingSQL = `SELECT COUNT(*) FROM questions WHERE org_id = $1 AND recipient_id = $2 AND status = 'pending'`

// qualifiedQuestionColumns are questionColumns of the table aliased q, for
// statements that join a table with columns of the same names.
var qualifiedQuestionColumns = "q." + strings.ReplaceAll(questionColumns, ", ", ", q.")

// searchFilters keep the questions a user ($2) asked or was asked, with
// another user ($4) when set, created in [$5, $6).
const searchFilters = `
	  AND q.org_id = $1 AND (q.asker_id = $2 OR q.recipient_id = $2)
	  AND ($4 = '' OR q.asker_id = $4 OR q.recipient_id = $4)
	  AND q.created_at >= $5 AND q.created_at < $6`

// searchPostgresSQL ranks the questions and answers matching the web-search
// query $3 by ts_rank over the GIN-indexed tsvector.
var searchPostgresSQL = `SELECT ` + qualifiedQuestionColumns + `
	FROM questions q CROSS JOIN websearch_to_tsquery('english', $3) AS w
	WHERE q.search @@ w` + searchFilters + `
	ORDER BY ts_rank(q.search, w) DESC, q.created_at DESC LIMIT $7`

// searchSQLiteSQL ranks the matches of the FTS5 query $3 by bm25, lower
// first.
var searchSQLiteSQL = `SELECT ` + qualifiedQuestionColumns + `
	FROM questions_fts f JOIN questions q ON q.rowid = f.rowid
	WHERE questions_fts MATCH $3` + searchFilters + `
	ORDER BY bm25(questions_fts), q.created_at DESC LIMIT $7`

// pendingInboxSQL says whether a recipient ($2) has anything claimInboxSQL
// or claimWithdrawalsSQL would hand over, without handing it.
const pendingInboxSQL = `SELECT EXISTS (SELECT 1 FROM questions
	             WHERE org_id = $1 AND recipient_id = $2 AND status = 'pending' AND recipient_handed_at IS NULL)
	OR EXISTS (SELECT 1 FROM questions
	             WHERE org_id = $1 AND recipient_id = $2 AND status = 'withdrawn' AND withdrawal_handed_at IS NULL)`

// pendingRepliesSQL says whether an asker ($2) has anything claimRepliesSQL
// would hand over, for $3 only when it is not empty, without handing it.
const pendingRepliesSQL = `SELECT EXISTS (SELECT 1 FROM questions
	WHERE org_id = $1 AND asker_id = $2 AND (status <> 'pending' OR asker_news_at IS NOT NULL) AND asker_handed_at IS NULL
	  AND ($3 = '' OR id = $3))`

// departedOpenSQL lists the questions still open for a member who left
// ($2), waiting for them or for their askers' information, for
// HandOverForDeparted, whose updates repeat the check.
const departedOpenSQL = `SELECT id, asker_id FROM questions WHERE org_id = $1 AND recipient_id = $2 AND status = 'pending' ORDER BY id`
