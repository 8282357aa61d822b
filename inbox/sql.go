package inbox

// The statements of ask_person, check_inbox and check_replies. They are
// exported for the load harness, whose database baselines run the very SQL
// the tools run.

// AskChecksSQL reads what an ask must pass, in one statement: whether the
// recipient ($3) is in the org ($1), and how many questions the asker ($2)
// asked since $4 (the rate) and the pair exchanged, either way, since $5 (the
// loop breaker), each with the oldest of them. The pair is read as one index
// range per direction: an OR of the two would read the pair's whole history.
const AskChecksSQL = `
	SELECT (SELECT COUNT(*) FROM users WHERE org_id = $1 AND id = $3 AND removed_at IS NULL), r.n, r.oldest, l.n, l.oldest
	FROM (SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM questions
	      WHERE org_id = $1 AND asker_id = $2 AND created_at > $4) r,
	     (SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM (
	          SELECT created_at FROM questions WHERE org_id = $1 AND recipient_id = $2 AND asker_id = $3 AND created_at > $5
	          UNION ALL
	          SELECT created_at FROM questions WHERE org_id = $1 AND recipient_id = $3 AND asker_id = $2 AND created_at > $5) pair) l`

// AskPostgresSQL is a whole ask on Postgres as one statement, so one round
// trip and no BEGIN or COMMIT: the checks of AskChecksSQL, then, when they
// pass ($10 and $11 are the limits, zero for none), the insert and the pair's
// statistics. It returns the checks and whether the question was inserted
// (not when a concurrent retry with the same key won).
const AskPostgresSQL = `
	WITH checks (recipient, rate_n, rate_oldest, loop_n, loop_oldest) AS (` + AskChecksSQL + `),
	ins AS (
		INSERT INTO questions (org_id, id, asker_id, recipient_id, body, status, idempotency_key, created_at)
		SELECT $1, $6, $2, $3, $7, 'pending', $8, $9 FROM checks
		WHERE recipient > 0 AND ($10 <= 0 OR rate_n < $10) AND ($11 <= 0 OR loop_n < $11)
		ON CONFLICT (org_id, asker_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
		RETURNING id),
	pair AS (
		INSERT INTO interactions (org_id, asker_id, recipient_id, asked, last_at) SELECT $1, $2, $3, 1, $9 FROM ins
		ON CONFLICT (org_id, asker_id, recipient_id) DO UPDATE SET asked = interactions.asked + 1, last_at = excluded.last_at)
	SELECT recipient, rate_n, rate_oldest, loop_n, loop_oldest, (SELECT COUNT(*) FROM ins) FROM checks`

// AskInsertSQL stores a question on SQLite, where an ask is a transaction of
// AskChecksSQL, this and AskPairStatsSQL; nothing when a question with the
// same idempotency key exists.
const AskInsertSQL = `
	INSERT INTO questions (org_id, id, asker_id, recipient_id, body, status, idempotency_key, created_at)
	VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7)
	ON CONFLICT (org_id, asker_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING`

// AskPairStatsSQL counts an ask in the pair's statistics.
const AskPairStatsSQL = `
	INSERT INTO interactions (org_id, asker_id, recipient_id, asked, last_at) VALUES ($1, $2, $3, 1, $4)
	ON CONFLICT (org_id, asker_id, recipient_id) DO UPDATE SET asked = interactions.asked + 1, last_at = excluded.last_at`

const questionColumns = `id, asker_id, recipient_id, body, status, created_at, resolved_at, resolution, idempotency_key`

// InboxPageSQL reads a page of a user's pending questions after a cursor
// (created_at, id).
const InboxPageSQL = `SELECT ` + questionColumns + ` FROM questions
	WHERE org_id = $1 AND recipient_id = $2 AND status = 'pending'
	  AND (created_at > $3 OR (created_at = $3 AND id > $4))
	ORDER BY created_at, id LIMIT $5`

// InteractionSQL reads a pair's statistics, both directions: two
// primary-key lookups, kept up to date by Ask and resolve, so they cost the
// same for a pair with ten questions or ten thousand.
const InteractionSQL = `SELECT asker_id, asked, last_at FROM interactions
	WHERE org_id = $1 AND asker_id = $2 AND recipient_id = $3
	UNION ALL
	SELECT asker_id, asked, last_at FROM interactions
	WHERE org_id = $1 AND asker_id = $3 AND recipient_id = $2`

// RecentExchangesSQL reads a pair's last answered exchanges: one ordered,
// limited range per direction, merged; an OR of the two directions would
// read the pair's whole history.
const RecentExchangesSQL = `
	SELECT id, asker_id, body, resolution, resolved_at FROM (
		SELECT id, asker_id, body, resolution, resolved_at FROM questions
		WHERE org_id = $1 AND asker_id = $2 AND recipient_id = $3 AND status = 'answered'
		ORDER BY resolved_at DESC LIMIT $4) mine
	UNION ALL
	SELECT id, asker_id, body, resolution, resolved_at FROM (
		SELECT id, asker_id, body, resolution, resolved_at FROM questions
		WHERE org_id = $1 AND asker_id = $3 AND recipient_id = $2 AND status = 'answered'
		ORDER BY resolved_at DESC LIMIT $4) theirs
	ORDER BY resolved_at DESC LIMIT $4`

// RepliesPageSQL reads a page of the questions a user asked that were
// resolved after a position (resolved_at, id): after the time $3 alone when
// the id $4 is empty (check_replies' since), else after the pair (its
// cursor), so that questions resolved in one instant are neither skipped
// nor repeated at a page boundary. resolved_at >= $3 bounds the index range.
const RepliesPageSQL = `SELECT ` + questionColumns + ` FROM questions
	WHERE org_id = $1 AND asker_id = $2 AND status <> 'pending' AND resolved_at >= $3
	  AND (resolved_at > $3 OR ($4 <> '' AND id > $4))
	ORDER BY resolved_at, id LIMIT $5`
