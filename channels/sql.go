package channels

// The statements of the channels package, kept together. $1 is always the
// org: every query on tenant data has it in its WHERE clause.

// channelSelect reads channels as the caller ($2) sees them: the member
// count, and the caller's read cursor when a member (NULL otherwise). A
// private channel the caller is not in is left out, so it reads as "not
// found" exactly like one that does not exist.
const channelSelect = `
	SELECT c.name, c.private, c.topic, c.description, c.created_by, c.created_at, c.archived_at,
	       c.last_seq, COALESCE(c.last_message_at, c.created_at),
	       (SELECT COUNT(*) FROM channel_members x WHERE x.org_id = c.org_id AND x.channel = c.name),
	       m.read_seq
	FROM channels c
	LEFT JOIN channel_members m ON m.org_id = c.org_id AND m.channel = c.name AND m.user_id = $2
	WHERE c.org_id = $1 AND (NOT c.private OR m.user_id IS NOT NULL)`

// channelByNameSQL reads one channel ($3) as the caller sees it.
const channelByNameSQL = channelSelect + ` AND c.name = $3`

// channelListSQL reads every channel the caller may see, without the
// archived ones unless $3.
const channelListSQL = channelSelect + ` AND ($3 OR c.archived_at IS NULL) ORDER BY c.name`

// memberChannelSQL reads what memberChannel needs of a channel ($3) the
// caller ($2) may see, with their read cursor when a member (NULL
// otherwise): as channelSelect, without the member count.
const memberChannelSQL = `
	SELECT c.name, c.private, c.archived_at, m.read_seq
	FROM channels c
	LEFT JOIN channel_members m ON m.org_id = c.org_id AND m.channel = c.name AND m.user_id = $2
	WHERE c.org_id = $1 AND c.name = $3 AND (NOT c.private OR m.user_id IS NOT NULL)`

// membersAmongPostgresSQL and membersAmongSQLiteSQL list which of the users
// given as a list ($3: an array, or a JSON array on SQLite) are members of
// channel $2.
const (
	membersAmongPostgresSQL = `
	SELECT user_id FROM channel_members
	WHERE org_id = $1 AND channel = $2 AND user_id = ANY($3::text[])`
	membersAmongSQLiteSQL = `
	SELECT user_id FROM channel_members
	WHERE org_id = $1 AND channel = $2 AND user_id IN (SELECT value FROM json_each($3))`
)

const insertChannelSQL = `
	INSERT INTO channels (org_id, name, private, topic, description, created_by, created_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7)`

// addMembersSQL adds users ($4...) to a channel ($2) at $3, each starting to
// read after the channel's last message: joining does not make the history
// unread. Existing members are left as they are.
const addMembersSQL = `
	INSERT INTO channel_members (org_id, channel, user_id, joined_at, read_seq)
	SELECT $1, $2, u.id, $3, c.last_seq FROM users u
	JOIN channels c ON c.org_id = u.org_id AND c.name = $2
	WHERE u.org_id = $1 AND u.removed_at IS NULL AND u.id IN %s
	ON CONFLICT (org_id, channel, user_id) DO NOTHING`

const removeMemberSQL = `DELETE FROM channel_members WHERE org_id = $1 AND channel = $2 AND user_id = $3`

// membersSQL reads a channel's members with what their presence is made of
// (see orgs.PresenceOf).
const membersSQL = `
	SELECT m.user_id, u.name, m.joined_at, u.last_seen_at,
	       (SELECT MAX(w.wait_until) FROM presence_waits w WHERE w.org_id = m.org_id AND w.user_id = m.user_id)
	FROM channel_members m
	JOIN users u ON u.org_id = m.org_id AND u.id = m.user_id AND u.removed_at IS NULL
	WHERE m.org_id = $1 AND m.channel = $2 ORDER BY m.user_id`

const archiveSQL = `UPDATE channels SET archived_at = $3 WHERE org_id = $1 AND name = $2 AND archived_at IS NULL`

const updateChannelSQL = `UPDATE channels SET topic = $3, description = $4 WHERE org_id = $1 AND name = $2`

// nextSeqSQL numbers a new message of a channel that is not archived, and
// returns with its number the author's ($4) name, which a read of the
// message joins from users: one round trip for both. The row it updates
// stays locked until the post commits, so the messages of one channel commit
// in the order of their numbers.
const nextSeqSQL = `
	UPDATE channels SET last_seq = last_seq + 1, last_message_at = $3
	WHERE org_id = $1 AND name = $2 AND archived_at IS NULL
	RETURNING last_seq, COALESCE((SELECT u.name FROM users u WHERE u.org_id = $1 AND u.id = $4), '')`

const insertMessageSQL = `
	INSERT INTO channel_messages (org_id, channel, seq, id, author_id, by_agent, kind, priority, body, reply_to, mentions, created_at, approved_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`

// readOwnPostSQL moves the author's read cursor past their own post when
// nothing was unread before it, so that one's own posts do not read as
// unread; with unread messages before it, the cursor stays for them.
const readOwnPostSQL = `
	UPDATE channel_members SET read_seq = $4
	WHERE org_id = $1 AND channel = $2 AND user_id = $3 AND read_seq = $4 - 1`

const replyTargetSQL = `SELECT seq FROM channel_messages WHERE org_id = $1 AND channel = $2 AND id = $3`

const messageColumns = `m.id, m.channel, m.seq, m.author_id, COALESCE(u.name, ''), m.by_agent, m.kind, m.priority, m.body, COALESCE(m.reply_to, ''), m.mentions, m.created_at, m.approved_at`

const messageFrom = ` FROM channel_messages m LEFT JOIN users u ON u.org_id = m.org_id AND u.id = m.author_id`

// messagesAfterSQL reads a page of a channel ($2) after a sequence number
// ($3): one range of the primary key.
const messagesAfterSQL = `SELECT ` + messageColumns + messageFrom + `
	WHERE m.org_id = $1 AND m.channel = $2 AND m.seq > $3
	ORDER BY m.seq LIMIT $4`

// latestMessagesSQL reads a channel's last $3 messages, newest first.
const latestMessagesSQL = `SELECT ` + messageColumns + messageFrom + `
	WHERE m.org_id = $1 AND m.channel = $2
	ORDER BY m.seq DESC LIMIT $3`

// unreadSQLiteSQL reads, for each channel of the caller ($2), or only
// channel $4 when it is not empty, the first $3 messages after the caller's
// read cursor, with that cursor. Messages of a channel are numbered without
// gaps, so "the first $3" is the range (read_seq, read_seq + $3]: SQLite
// reads it as one short range of the primary key per channel, however long
// the history. CROSS JOIN makes SQLite read the members first: left to
// itself, it walked every message of the org and looked each one's member
// up (13 ms at 20,000 messages, against 1.5 ms at 1,000).
const unreadSQLiteSQL = `SELECT ` + messageColumns + `, cm.read_seq
	FROM channel_members cm
	CROSS JOIN channel_messages m
	LEFT JOIN users u ON u.org_id = m.org_id AND u.id = m.author_id
	WHERE cm.org_id = $1 AND cm.user_id = $2 AND ($4 = '' OR cm.channel = $4)
	  AND m.org_id = cm.org_id AND m.channel = cm.channel
	  AND m.seq > cm.read_seq AND m.seq <= cm.read_seq + $3
	ORDER BY m.channel, m.seq`

// unreadPostgresSQL is unreadSQLiteSQL for Postgres, whose planner would
// rather scan every message of the org than read each channel's range: the
// LATERAL subquery makes it read one short range of the primary key per
// channel.
const unreadPostgresSQL = `SELECT ` + messageColumns + `, cm.read_seq
	FROM channel_members cm
	CROSS JOIN LATERAL (SELECT * FROM channel_messages x
	     WHERE x.org_id = cm.org_id AND x.channel = cm.channel AND x.seq > cm.read_seq
	     ORDER BY x.seq LIMIT $3) m
	LEFT JOIN users u ON u.org_id = m.org_id AND u.id = m.author_id
	WHERE cm.org_id = $1 AND cm.user_id = $2 AND ($4 = '' OR cm.channel = $4)
	ORDER BY m.channel, m.seq`

// lockReadersPostgresSQL locks the caller's membership rows, in one order,
// before a claim reads their cursors: concurrent claims of one user then
// take turns instead of failing each other's check in claimReadSQL. SQLite
// needs no lock: its write transactions run one at a time. FOR NO KEY
// UPDATE, not FOR UPDATE: a post files its alerts (channel_alerts refers to
// the members' rows) under key-share locks, which FOR UPDATE would have to
// wait for, and a claim would then queue behind every post to the channel.
const lockReadersPostgresSQL = `
	SELECT channel FROM channel_members WHERE org_id = $1 AND user_id = $2 AND ($3 = '' OR channel = $3)
	ORDER BY channel FOR NO KEY UPDATE`

// claimReadSQL moves a read cursor from $4 to $5 only if no other call moved
// it meanwhile: two waits of one user never both hand over a message.
const claimReadSQL = `
	UPDATE channel_members SET read_seq = $5
	WHERE org_id = $1 AND channel = $2 AND user_id = $3 AND read_seq = $4`

// advanceReadSQL moves a read cursor forward to $4, never back.
const advanceReadSQL = `
	UPDATE channel_members SET read_seq = $4
	WHERE org_id = $1 AND channel = $2 AND user_id = $3 AND read_seq < $4`

// markReadSQL moves a read cursor forward to $4, never back, and never past
// the channel's newest message.
const markReadSQL = `
	UPDATE channel_members SET read_seq = $4
	WHERE org_id = $1 AND channel = $2 AND user_id = $3 AND read_seq < $4
	  AND $4 <= (SELECT c.last_seq FROM channels c WHERE c.org_id = $1 AND c.name = $2)`

// advanceReadsPostgresSQL moves many read cursors forward, never back, in
// one statement: the arrays $1 (orgs), $2 (users), $3 (channels) and $4
// (sequence numbers) name one cursor per index; each row carries its org.
// It locks the rows in the order (org, user, channel) first, the order of a
// claim's lockReadersPostgresSQL, so that the two never deadlock.
const advanceReadsPostgresSQL = `
	WITH v AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS v(org_id, user_id, channel, seq)),
	l AS (SELECT m.org_id, m.user_id, m.channel, v.seq FROM channel_members m
	      JOIN v ON m.org_id = v.org_id AND m.user_id = v.user_id AND m.channel = v.channel
	      ORDER BY m.org_id, m.user_id, m.channel FOR NO KEY UPDATE OF m)
	UPDATE channel_members m SET read_seq = l.seq FROM l
	WHERE m.org_id = l.org_id AND m.user_id = l.user_id AND m.channel = l.channel AND m.read_seq < l.seq`

// unreadCountSQL counts the caller's unread messages across their channels.
const unreadCountSQL = `
	SELECT COALESCE(SUM(c.last_seq - cm.read_seq), 0) FROM channel_members cm
	JOIN channels c ON c.org_id = cm.org_id AND c.name = cm.channel
	WHERE cm.org_id = $1 AND cm.user_id = $2`

const myChannelsSQL = `SELECT channel FROM channel_members WHERE org_id = $1 AND user_id = $2`

// SearchWindow is how many of a query's newest matches a search ranks: a
// common word matches most of a channel's history, and ranking every match
// cost seconds at a million messages. A better match older than the window
// is found by narrowing the search (a channel, an author, a time range).
const SearchWindow = 1000

// searchFilters are the filters of searchSQLiteSQL: only channels the
// caller ($2) is a member of, optionally one channel ($4) and one author
// ($5), and a time range [$6, $7).
const searchFilters = `
	  AND m.org_id = $1 AND m.channel IN (SELECT channel FROM channel_members WHERE org_id = $1 AND user_id = $2)
	  AND ($4 = '' OR m.channel = $4) AND ($5 = '' OR m.author_id = $5)
	  AND m.created_at >= $6 AND m.created_at < $7`

// searchPostgresSQL ranks by ts_rank the newest $8 matches of the
// web-search query $3 (see SearchWindow) among the messages of the channels
// $2 (an array: the caller's channels, read just before), by author $4 when
// set, posted in [$5, $6), and returns the best $7. Postgres plans it for
// each query (see db.PlanEachRun), and with the channels given as a list
// rather than joined it plans one table: the newest matches of a common
// word come from channel_messages_recent walked backwards, those of a rare
// word from the GIN index. The caller ($9) must still be a member of each
// hit's channel, checked in this statement, after the list of channels was
// read: a channel left in between, and a post made to it since, are not
// searched.
const searchPostgresSQL = `
	WITH hits AS (
	  SELECT ` + messageColumnsOf + `, m.author_id AS author, m.search
	  FROM channel_messages m
	  WHERE m.org_id = $1 AND m.channel = ANY($2::text[]) AND m.search @@ websearch_to_tsquery('english', $3)
	    AND ($4 = '' OR m.author_id = $4) AND m.created_at >= $5 AND m.created_at < $6
	  ORDER BY m.created_at DESC LIMIT $8)
	SELECT ` + hitColumns + `
	FROM hits m LEFT JOIN users u ON u.org_id = $1 AND u.id = m.author
	WHERE EXISTS (SELECT 1 FROM channel_members cm WHERE cm.org_id = $1 AND cm.channel = m.channel AND cm.user_id = $9)
	ORDER BY ts_rank(m.search, websearch_to_tsquery('english', $3)) DESC, m.created_at DESC LIMIT $7`

// searchSQLiteSQL ranks by bm25, lower first, the newest $9 matches of the
// FTS5 query $3: FTS5 walks its index from the newest row (the highest
// rowid) and stops once it has them.
const searchSQLiteSQL = `
	WITH hits AS (
	  SELECT ` + messageColumnsOf + `, m.author_id AS author, bm25(channel_messages_fts) AS score
	  FROM channel_messages_fts f JOIN channel_messages m ON m.rowid = f.rowid
	  WHERE channel_messages_fts MATCH $3` + searchFilters + `
	  ORDER BY f.rowid DESC LIMIT $9)
	SELECT ` + hitColumns + `
	FROM hits m LEFT JOIN users u ON u.org_id = $1 AND u.id = m.author
	ORDER BY m.score, m.created_at DESC LIMIT $8`

// messageColumnsOf are the columns of messageColumns that come from
// channel_messages m, and hitColumns the same columns read back from hits.
const (
	messageColumnsOf = `m.id, m.channel, m.seq, m.by_agent, m.kind, m.priority, m.body, m.reply_to, m.mentions, m.created_at, m.approved_at`
	hitColumns       = `m.id, m.channel, m.seq, m.author, COALESCE(u.name, ''), m.by_agent, m.kind, m.priority, m.body, COALESCE(m.reply_to, ''), m.mentions, m.created_at, m.approved_at`
)

// insertAlertsSQL files the alerts of a new message ($3, posted by $4 at
// $5): for every other member of the channel ($2) when $6 (an urgent post
// or an @channel), else for the members it mentions (the IN list, appended
// by alertsFor). It returns who was alerted, to wake them.
const insertAlertsSQL = `
	INSERT INTO channel_alerts (org_id, user_id, channel, seq, created_at)
	SELECT cm.org_id, cm.user_id, cm.channel, $3, $5 FROM channel_members cm
	WHERE cm.org_id = $1 AND cm.channel = $2 AND cm.user_id <> $4 AND ($6 OR cm.user_id IN %s)
	RETURNING user_id`

// claimAlertsSQL hands over a member's ($2) oldest $3 alerts by deleting
// them: on Postgres, a concurrent claim that deleted a row first makes this
// one skip it, so each alert is handed over once.
const claimAlertsSQL = `
	DELETE FROM channel_alerts
	WHERE org_id = $1 AND user_id = $2 AND (channel, seq) IN (
	      SELECT channel, seq FROM channel_alerts WHERE org_id = $1 AND user_id = $2
	      ORDER BY created_at, channel, seq LIMIT $3)
	RETURNING channel, seq`

// alertMessagesSQL reads the messages of the claimed alerts: the (channel,
// seq) pairs that alertMessages writes in.
const alertMessagesSQL = `SELECT ` + messageColumns + messageFrom + `
	WHERE m.org_id = $1 AND (%s)`

// subscribeSQL records that an MCP session ($3) of a member ($2) follows a
// channel ($4); subscribing twice changes nothing.
const subscribeSQL = `
	INSERT INTO channel_subscriptions (org_id, user_id, session_id, channel, created_at) VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (org_id, user_id, session_id, channel) DO NOTHING`

const unsubscribeSQL = `DELETE FROM channel_subscriptions WHERE org_id = $1 AND user_id = $2 AND session_id = $3 AND channel = $4`

const forgetSessionSQL = `DELETE FROM channel_subscriptions WHERE org_id = $1 AND user_id = $2 AND session_id = $3`

const countSubscriptionsSQL = `SELECT COUNT(*) FROM channel_subscriptions WHERE org_id = $1 AND user_id = $2 AND session_id = $3`

const subscriptionsSQL = `SELECT channel FROM channel_subscriptions WHERE org_id = $1 AND user_id = $2 AND session_id = $3 ORDER BY channel`

// hasAlertsSQL tells whether a member ($2) has an alert to hand over: a read
// that spares the claim's write (SQLite's one writer) on every wake-up.
// The second count tells the same of decisions on the member's held posts.
const hasAlertsSQL = `SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM channel_alerts WHERE org_id = $1 AND user_id = $2 LIMIT 1) x),
	(SELECT COUNT(*) FROM (SELECT 1 FROM channel_posts WHERE org_id = $1 AND author_id = $2 AND reported_at IS NULL AND decided_at IS NOT NULL LIMIT 1) y)`

// pruneAlertsSQL drops alerts filed before $1 that nobody claimed.
const pruneAlertsSQL = `DELETE FROM channel_alerts WHERE created_at < $1`

// heldColumns are what scanHeld reads of a held post.
const heldColumns = `id, channel, status, body, kind, priority, COALESCE(reply_to, ''), created_at,
	decided_at, note, edited_body, COALESCE(message_id, ''), COALESCE(seq, 0)`

// insertHeldSQL holds a post of an author ($4) and returns the author's
// name, for the held post's result, in the same round trip.
const insertHeldSQL = `
	INSERT INTO channel_posts (org_id, id, channel, author_id, kind, priority, body, reply_to, created_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
	RETURNING COALESCE((SELECT u.name FROM users u WHERE u.org_id = $1 AND u.id = $4), '')`

// heldPostsSQL lists an author's ($2) posts waiting for them, oldest first.
const heldPostsSQL = `SELECT ` + heldColumns + ` FROM channel_posts
	WHERE org_id = $1 AND author_id = $2 AND status = 'pending_approval'
	ORDER BY created_at, id LIMIT $3`

const heldPostSQL = `SELECT ` + heldColumns + ` FROM channel_posts WHERE org_id = $1 AND author_id = $2 AND id = $3`

// claimHeldSQL decides a post ($3) of its author ($2) only while it is
// pending: of two decisions at once, the second changes no row.
const claimHeldSQL = `
	UPDATE channel_posts SET status = $4, decided_at = $5, note = $6, edited_body = $7
	WHERE org_id = $1 AND author_id = $2 AND id = $3 AND status = 'pending_approval'
	RETURNING ` + heldColumns

// heldPublishedSQL records the message a post ($2) became.
const heldPublishedSQL = `UPDATE channel_posts SET message_id = $3, seq = $4 WHERE org_id = $1 AND id = $2`

// claimDecisionsSQL marks an author's ($2) oldest $4 decided posts not yet
// reported as reported at $3, and returns them; the outer condition on
// reported_at makes a concurrent claim skip what another marked first.
const claimDecisionsSQL = `
	UPDATE channel_posts SET reported_at = $3
	WHERE org_id = $1 AND author_id = $2 AND reported_at IS NULL AND id IN (
	      SELECT id FROM channel_posts WHERE org_id = $1 AND author_id = $2 AND reported_at IS NULL AND decided_at IS NOT NULL
	      ORDER BY decided_at LIMIT $4)
	RETURNING ` + heldColumns

// channelDaysSQL reads the overview's kept days from $2 until $3 (days
// spelled 2006-01-02): per channel, and the empty channel's row that marks
// a day counted.
const channelDaysSQL = `SELECT day, channel, messages, by_agent FROM channel_days WHERE org_id = $1 AND day >= $2 AND day < $3`

// keepChannelDaySQL keeps an ended day's messages of a channel ($3, or the
// empty name for the mark that the day is counted).
const keepChannelDaySQL = `INSERT INTO channel_days (org_id, day, channel, messages, by_agent) VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (org_id, day, channel) DO NOTHING`
