package notify

// The SQL of package notify, which owns every notify_* table.

// insertEventsSQL is followed by a row of 11 arguments per event (see
// insertRows).
const insertEventsSQL = `
	INSERT INTO notify_events (` + eventColumns + `) VALUES `

const eventColumns = `id, org_id, user_id, kind, subject, actor_id, body, link, urgent, created_at, due_at`

// claimEventsSQL leases up to $4 due, unexpanded events to the claim $3
// until $1 ($2 is now); a lease that ran out (its worker died) is taken
// anew. On Postgres the pick adds FOR UPDATE SKIP LOCKED (see claimLock),
// so that concurrent claims, on any replica, take different rows; the
// update takes the rows picked by primary key (see pickedPostgres), and
// repeats the lease check; the pick's lock has checked its conditions on
// the row's latest version already, and holds it to the end of the
// transaction. (Repeating the queue's condition, expanded_at IS NULL or
// status = 'pending', would let the planner read the queue's partial index
// instead of the key.) The pick is MATERIALIZED, run
// once: as the subquery of an IN, as it was, Postgres planned it as the
// inner side of a nested loop, run again for every due row, each run
// locking and taking one more, so that a claim took up to every due row
// rather than $4.
const claimEventsSQL = `
	WITH picked (pick) AS MATERIALIZED (SELECT id FROM notify_events
		WHERE expanded_at IS NULL AND due_at <= $2 AND (lease_until IS NULL OR lease_until < $2)
		ORDER BY due_at LIMIT $4`

const claimEventsUpdate = `)
	UPDATE notify_events SET lease_until = $1, claim = $3
	WHERE id `

const claimEventsTail = `
	  AND (lease_until IS NULL OR lease_until < $2)
	RETURNING ` + eventColumns

// expandEventsSQL marks the claimed events of the list that follows
// expanded; those another worker took over meanwhile are left out. On
// SQLite, whose events are read rather than claimed (see claimEvents), $2
// is empty, and an event is the mark's while it is not expanded.
const expandEventsSQL = `UPDATE notify_events SET expanded_at = $1, lease_until = NULL WHERE (claim = $2 OR $2 = '') AND expanded_at IS NULL AND id IN `

// dueEventsSQL is claimEventsSQL's pick without the lease, SQLite's claim
// (see claimEvents).
const dueEventsSQL = `SELECT ` + eventColumns + ` FROM notify_events
	WHERE expanded_at IS NULL AND due_at <= $1 AND (lease_until IS NULL OR lease_until < $1)
	ORDER BY due_at LIMIT $2`

// backOffEventsSQL leases the events of the list that follows, whose
// expansion failed on SQLite, until $1, so that they are tried again then
// rather than at once.
const backOffEventsSQL = `UPDATE notify_events SET lease_until = $1 WHERE expanded_at IS NULL AND id IN `

// A question's reminder is kept on its event as remind_at from the
// event's expansion until it is due (see remindDue). setRemindSQL sets it
// for one event, on SQLite; setRemindsSQL for the events of the list $1,
// each at its time in $2, on Postgres in one round trip.
const (
	setRemindSQL  = `UPDATE notify_events SET remind_at = $1 WHERE id = $2`
	setRemindsSQL = `UPDATE notify_events SET remind_at = r.at FROM unnest($1::text[], $2::timestamptz[]) AS r (id, at) WHERE notify_events.id = r.id`
)

// remindPickSQL, remindUpdateSQL and remindTailSQL take up to $2
// reminders due ($1 is now) off their events, each once (the pick's lock
// on Postgres, and the update's repeated condition, as claimEventsSQL's),
// and return those events: the worker queues their reminders in the same
// transaction.
const (
	remindPickSQL = `
	WITH picked (pick) AS MATERIALIZED (SELECT id FROM notify_events
		WHERE remind_at <= $1 ORDER BY remind_at LIMIT $2`
	remindUpdateSQL = `)
	UPDATE notify_events SET remind_at = NULL
	WHERE id `
	remindTailSQL = `
	  AND remind_at IS NOT NULL
	RETURNING ` + eventColumns
)

// closedSubjectSQL tells whether a question ($2) was answered, declined or
// withdrawn, or forwarded away by the person ($3) it reminds of it: by the
// question's own row, read when its reminder falls due, or by a closing
// event. The row decides under concurrency: the event of an answer that
// reaches nobody is queued only while a reminder is pending, and the
// outbox stores a question's reminder in a transaction after its read of
// the question, so that an answer committed in between queued no event.
// (The questions' table is inbox's; notify reads it here, in the one
// statement, as the outbox does.)
const closedSubjectSQL = `SELECT
	(SELECT COUNT(*) FROM notify_events WHERE org_id = $1 AND subject = $2
		AND (kind IN ('answered', 'declined', 'withdrawn') OR kind = 'forwarded' AND actor_id = $3))
	+ (SELECT COUNT(*) FROM questions WHERE org_id = $1 AND id = $2 AND (status <> 'pending' OR recipient_id <> $3))`

// threadRootSQL finds the first event of a subject ($2) to a person ($3):
// the mail the others of that person reply to.
const threadRootSQL = `SELECT id FROM notify_events WHERE org_id = $1 AND subject = $2 AND user_id = $3 ORDER BY created_at, id LIMIT 1`

// insertDeliverySQL is followed by a row of 8 arguments per delivery (see
// insertRows).
const insertDeliverySQL = `
	INSERT INTO notify_deliveries (id, event_id, org_id, user_id, channel, target, next_at, created_at) VALUES `

// claimDeliveriesSQL is claimEventsSQL for deliveries; every claim counts
// as an attempt, so that a delivery whose worker dies mid-send each time
// still ends.
const claimDeliveriesSQL = `
	WITH picked (pick) AS MATERIALIZED (SELECT id FROM notify_deliveries
		WHERE status = 'pending' AND next_at <= $2 AND (lease_until IS NULL OR lease_until < $2)
		ORDER BY next_at LIMIT $4`

const claimDeliveriesUpdate = `)
	UPDATE notify_deliveries SET lease_until = $1, claim = $3, attempts = attempts + 1
	WHERE id `

const claimDeliveriesTail = `
	  AND (lease_until IS NULL OR lease_until < $2)
	RETURNING id, event_id, channel, target, attempts, created_at`

// anyDueSQL tells whether any event, any delivery and any reminder is due
// ($1 is now), a read that spares a worker the write of a claim that would
// find nothing. Each looks in the order of its queue's index: without the
// order, Postgres took a reminder due now to be common (a third of the
// events, its guess for a range it cannot tell) and read every event
// instead of the index of the few with a reminder, at each round of the
// worker.
const anyDueSQL = `SELECT
	(SELECT COUNT(*) FROM (SELECT 1 FROM notify_events WHERE expanded_at IS NULL AND due_at <= $1 AND (lease_until IS NULL OR lease_until < $1) ORDER BY due_at LIMIT 1) e),
	(SELECT COUNT(*) FROM (SELECT 1 FROM notify_deliveries WHERE status = 'pending' AND next_at <= $1 AND (lease_until IS NULL OR lease_until < $1) ORDER BY next_at LIMIT 1) d),
	(SELECT COUNT(*) FROM (SELECT 1 FROM notify_events WHERE remind_at <= $1 ORDER BY remind_at LIMIT 1) r)`

// planClaimSQL turns off bitmap scans for the rest of a claim's
// transaction (see planClaim).
const planClaimSQL = `SELECT set_config('enable_bitmapscan', 'off', true)`

// claimLock is the picks' lock on Postgres.
const claimLock = ` FOR UPDATE SKIP LOCKED`

// The claims' updates take the picked rows by primary key: on Postgres
// through an array, read once, whatever the planner thinks of the pick
// (a join, on a table it has no statistics of yet, scanned every due row
// for each picked one); SQLite reads an IN list once.
const (
	pickedPostgres = `= ANY(ARRAY(SELECT pick FROM picked))`
	pickedSQLite   = `IN (SELECT pick FROM picked)`
)

const deliveryEventsSQL = `SELECT ` + eventColumns + ` FROM notify_events WHERE id IN `

// The outcomes of a delivery, each only while the claim ($n) is still the
// worker's own.
const (
	deliveredSQL  = `UPDATE notify_deliveries SET status = 'sent', finished_at = $1, lease_until = NULL, last_error = '' WHERE claim = $2 AND status = 'pending' AND id IN `
	retryLaterSQL = `UPDATE notify_deliveries SET next_at = $1, lease_until = NULL, last_error = $2 WHERE id = $3 AND claim = $4 AND status = 'pending'`
	failedSQL     = `UPDATE notify_deliveries SET status = 'failed', finished_at = $1, lease_until = NULL, last_error = $2 WHERE id = $3 AND claim = $4 AND status = 'pending'`
	// lastEmailSQL is when the last mail to an address of a person went.
	lastEmailSQL = `SELECT MAX(finished_at) FROM notify_deliveries WHERE org_id = $1 AND user_id = $2 AND channel = 'email' AND target = $3 AND status = 'sent'`
	// digestHoldSQL holds the claimed mails of the list that follows until
	// the digest window ends; the claim was no attempt.
	digestHoldSQL      = `UPDATE notify_deliveries SET next_at = $1, lease_until = NULL, attempts = attempts - 1 WHERE claim = $2 AND status = 'pending' AND id IN `
	queueAgeSQL        = `SELECT MIN(next_at) FROM notify_deliveries WHERE status = 'pending' AND next_at <= $1`
	deliveryLogSQL     = `SELECT d.id, e.kind, d.channel, d.target, d.status, d.attempts, d.last_error, d.created_at, d.finished_at FROM notify_deliveries d JOIN notify_events e ON e.id = d.event_id WHERE d.org_id = $1 AND d.user_id = $2 ORDER BY d.created_at DESC, d.id DESC LIMIT $3`
	orgFailuresSQL     = `SELECT d.id, e.kind, d.channel, d.target, d.status, d.attempts, d.last_error, d.created_at, d.finished_at, d.user_id FROM notify_deliveries d JOIN notify_events e ON e.id = d.event_id WHERE d.org_id = $1 AND d.status = 'failed' ORDER BY d.created_at DESC, d.id DESC LIMIT $2`
	pruneEventsSQL     = `DELETE FROM notify_events WHERE expanded_at IS NOT NULL AND expanded_at < $1 AND remind_at IS NULL AND NOT EXISTS (SELECT 1 FROM notify_deliveries d WHERE d.event_id = notify_events.id AND d.status = 'pending')`
	pruneDeliveriesSQL = `DELETE FROM notify_deliveries WHERE status <> 'pending' AND finished_at < $1`
	keySQL             = `SELECT secret FROM notify_keys WHERE name = $1`
	insertKeySQL       = `INSERT INTO notify_keys (name, secret, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING`
	settingsSQL        = `SELECT channels, paused, quiet_start, quiet_end, time_zone, urgent_in_quiet, work_days, work_start, work_end FROM notify_settings WHERE org_id = $1 AND user_id = $2`
	orgSettingsSQL     = `SELECT text_mode, reminder_seconds FROM notify_org_settings WHERE org_id = $1`
	saveSettingsSQL    = `
	INSERT INTO notify_settings (org_id, user_id, channels, paused, quiet_start, quiet_end, time_zone, urgent_in_quiet, updated_at, work_days, work_start, work_end)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
	ON CONFLICT (org_id, user_id) DO UPDATE SET channels = excluded.channels, paused = excluded.paused,
		quiet_start = excluded.quiet_start, quiet_end = excluded.quiet_end, time_zone = excluded.time_zone,
		urgent_in_quiet = excluded.urgent_in_quiet, updated_at = excluded.updated_at,
		work_days = excluded.work_days, work_start = excluded.work_start, work_end = excluded.work_end`
	unsubscribeSQL = `
	INSERT INTO notify_settings (org_id, user_id, channels, updated_at) VALUES ($1, $2, $3, $4)
	ON CONFLICT (org_id, user_id) DO UPDATE SET channels = $3, updated_at = $4`
	saveOrgSettingsSQL = `
	INSERT INTO notify_org_settings (org_id, text_mode, reminder_seconds, updated_at) VALUES ($1, $2, $3, $4)
	ON CONFLICT (org_id) DO UPDATE SET text_mode = excluded.text_mode, reminder_seconds = excluded.reminder_seconds, updated_at = excluded.updated_at`
)

// Webhooks.
const (
	webhookColumns     = `id, user_id, created_by, url, format, created_at, failing_since, disabled_at, disabled_reason`
	insertWebhookSQL   = `INSERT INTO notify_webhooks (org_id, id, user_id, created_by, url, format, secret, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`
	webhooksOfSQL      = `SELECT ` + webhookColumns + ` FROM notify_webhooks WHERE org_id = $1 AND user_id = $2 ORDER BY created_at, id`
	activeWebhooksSQL  = `SELECT id FROM notify_webhooks WHERE org_id = $1 AND user_id = $2 AND disabled_at IS NULL ORDER BY created_at, id`
	webhooksToSendSQL  = `SELECT id, url, format, secret, disabled_at, created_by, user_id, failing_since FROM notify_webhooks WHERE org_id = $1 AND id IN `
	deleteWebhookSQL   = `DELETE FROM notify_webhooks WHERE org_id = $1 AND id = $2 AND user_id = $3`
	webhookOKSQL       = `UPDATE notify_webhooks SET failing_since = NULL WHERE org_id = $1 AND id = $2 AND failing_since IS NOT NULL`
	webhookFailingSQL  = `UPDATE notify_webhooks SET failing_since = COALESCE(failing_since, $1) WHERE org_id = $2 AND id = $3 RETURNING failing_since`
	disableWebhookSQL  = `UPDATE notify_webhooks SET disabled_at = $1, disabled_reason = $2 WHERE org_id = $3 AND id = $4 AND disabled_at IS NULL`
	webhookDisabledSQL = `SELECT disabled_at FROM notify_webhooks WHERE org_id = $1 AND id = $2`
	// rotateWebhookSecretSQL sets the secret $1 of the webhook $3 of the
	// owner $4 in the org $2.
	rotateWebhookSecretSQL = `UPDATE notify_webhooks SET secret = $1 WHERE org_id = $2 AND id = $3 AND user_id = $4`
	// ownedDeliverySQL reads the status of the delivery $2 when it went to
	// a webhook of the owner $3 in the org $1.
	ownedDeliverySQL = `SELECT d.status FROM notify_deliveries d JOIN notify_webhooks w ON w.org_id = d.org_id AND w.id = d.target
		WHERE d.org_id = $1 AND d.id = $2 AND d.channel = 'webhook' AND w.user_id = $3`
	// redeliverSQL makes the finished delivery $3 of the org $2 pending
	// again, due at $1, with its attempts counted anew.
	redeliverSQL = `UPDATE notify_deliveries SET status = 'pending', next_at = $1, attempts = 0, lease_until = NULL, last_error = '', finished_at = NULL
		WHERE org_id = $2 AND id = $3 AND status <> 'pending'`
)

// Web Push subscriptions.
const (
	countPushSQL  = `SELECT COUNT(*) FROM notify_push_subscriptions WHERE org_id = $1 AND user_id = $2 AND id <> $3`
	upsertPushSQL = `
	INSERT INTO notify_push_subscriptions (org_id, user_id, id, endpoint, p256dh, auth, user_agent, created_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
	ON CONFLICT (org_id, user_id, id) DO UPDATE SET p256dh = excluded.p256dh, auth = excluded.auth,
		user_agent = excluded.user_agent, created_at = excluded.created_at`
	deletePushSQL = `DELETE FROM notify_push_subscriptions WHERE org_id = $1 AND user_id = $2 AND id = $3`
	pushOfSQL     = `SELECT id, endpoint, user_agent, created_at FROM notify_push_subscriptions WHERE org_id = $1 AND user_id = $2 ORDER BY created_at, id`
	pushIDsSQL    = `SELECT id FROM notify_push_subscriptions WHERE org_id = $1 AND user_id = $2 ORDER BY created_at, id`
	pushToSendSQL = `SELECT endpoint, p256dh, auth FROM notify_push_subscriptions WHERE org_id = $1 AND user_id = $2 AND id = $3`
)
