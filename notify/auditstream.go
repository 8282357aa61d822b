package notify

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/db"
)

// An org's audit stream sends every event of its audit log, as the audit
// export's JSON Lines write them, to the URL an admin set (a SIEM's
// collector), signed as the webhooks are. Each org's stream has a cursor,
// the seq of the last event of its chain (audit/chain.go) its receiver
// took with a 2xx: a round claims the streams with events past their
// cursor, one replica an org at a time (the claim's lease), sends each the
// next events after its cursor in one request, and moves the cursor on
// only once the receiver took them. A failure sends the same events again,
// and those that came since, after a backoff: at least once, in the order
// of the chain, never one skipped.

// AuditSource reads an org's audit chain: *audit.Log.
type AuditSource interface {
	After(ctx context.Context, orgID string, seq int64, limit int) ([]audit.Event, error)
	Head(ctx context.Context, orgID string) (int64, error)
}

// SetAuditSource gives the service the audit log its streams read. Call it
// before serving.
func (s *Service) SetAuditSource(src AuditSource) { s.auditSrc = src }

// AuditStreamBatch bounds the events of one request of an audit stream.
const AuditStreamBatch = 500

// AuditStream is an org's audit stream as its admins see it: never its
// secret.
type AuditStream struct {
	URL       string    `json:"url"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	// Seq is the last event the receiver took (its seq in the chain).
	Seq int64 `json:"seq"`
	// LastAt is the last request's time, LastOKAt the last one taken;
	// LastError what went wrong with the last, empty when it was taken.
	LastAt       *time.Time `json:"last_at,omitempty"`
	LastOKAt     *time.Time `json:"last_ok_at,omitempty"`
	LastError    string     `json:"last_error,omitempty"`
	FailingSince *time.Time `json:"failing_since,omitempty"`
	NextAt       time.Time  `json:"next_at"`
}

const (
	// setAuditStreamSQL starts an org's stream at the head $6 of its chain,
	// or gives its stream a new URL and secret from where it is.
	setAuditStreamSQL = `INSERT INTO notify_audit_streams (org_id, url, secret, created_by, created_at, seq, next_at) VALUES ($1, $2, $3, $4, $5, $6, $5)
		ON CONFLICT (org_id) DO UPDATE SET url = excluded.url, secret = excluded.secret, created_by = excluded.created_by, created_at = excluded.created_at,
			next_at = excluded.next_at, attempts = 0, last_error = '', failing_since = NULL`
	auditStreamSQL       = `SELECT url, created_by, created_at, seq, last_at, last_ok_at, last_error, failing_since, next_at FROM notify_audit_streams WHERE org_id = $1`
	auditStreamTargetSQL = `SELECT url, secret FROM notify_audit_streams WHERE org_id = $1`
	stopAuditStreamSQL   = `DELETE FROM notify_audit_streams WHERE org_id = $1`

	// auditStreamsDueSQL tells whether a stream has events past its cursor
	// and is free to claim ($1 is now): a read that spares each replica a
	// claim's write at every poll. It reads the heads of audit's chains in
	// the join, as the claim does, rather than a round trip per org.
	auditStreamsDueSQL = `SELECT COUNT(*) FROM (SELECT 1 FROM notify_audit_streams s JOIN audit_orgs a ON a.org_id = s.org_id
		WHERE a.seq > s.seq AND s.next_at <= $1 AND (s.lease_until IS NULL OR s.lease_until < $1) LIMIT 1) d`
	// claimAuditStreams is claimEventsSQL for streams with events past
	// their cursor: one claim holds an org's stream at a time.
	claimAuditStreamsSQL = `
	WITH picked (pick) AS MATERIALIZED (SELECT s.org_id FROM notify_audit_streams s
		WHERE s.next_at <= $2 AND (s.lease_until IS NULL OR s.lease_until < $2)
		  AND s.seq < (SELECT a.seq FROM audit_orgs a WHERE a.org_id = s.org_id)
		ORDER BY s.next_at LIMIT $4`
	claimAuditStreamsUpdate = `)
	UPDATE notify_audit_streams SET lease_until = $1, claim = $3
	WHERE org_id `
	claimAuditStreamsTail = `
	  AND (lease_until IS NULL OR lease_until < $2)
	RETURNING org_id, url, secret, seq, attempts`

	// The outcomes of a request, each only while the claim $2 is still
	// the worker's own: the cursor moves from $5 to $3 only when no other
	// claim moved it meanwhile.
	auditStreamTakenSQL = `UPDATE notify_audit_streams SET seq = $3, lease_until = NULL, attempts = 0, last_at = $4, last_ok_at = $4, last_error = '', failing_since = NULL, next_at = $4
		WHERE org_id = $1 AND claim = $2 AND seq = $5`
	auditStreamFailedSQL = `UPDATE notify_audit_streams SET lease_until = NULL, attempts = attempts + 1, last_at = $3, last_error = $4, failing_since = COALESCE(failing_since, $3), next_at = $5
		WHERE org_id = $1 AND claim = $2`
)

// SetAuditStream streams orgID's audit log to rawURL from now on, or
// moves its stream there from where it was, with a new signing secret,
// returned this once. by is the admin who set it (its caller checked).
//
// Returns EInvalid for a URL a webhook could not have, EUnavailable
// without an audit log.
func (s *Service) SetAuditStream(ctx context.Context, orgID, by, rawURL string) (*AuditStream, string, error) {
	if s.auditSrc == nil {
		return nil, "", ctalk.Errorf(ctalk.EUnavailable, "the audit log is not enabled on this server")
	}
	u, err := s.checkWebhookURL(rawURL)
	if err != nil {
		return nil, "", err
	}
	head, err := s.auditSrc.Head(ctx, orgID)
	if err != nil {
		return nil, "", err
	}
	secret := newWebhookSecret()
	err = s.db.Write(ctx, func(q db.Querier) error {
		_, err := q.Exec(ctx, setAuditStreamSQL, orgID, u, secret, by, s.db.Now(), head)
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("set audit stream: %w", err)
	}
	st, err := s.AuditStream(ctx, orgID)
	return st, secret, err
}

// AuditStream returns orgID's audit stream, nil when it has none.
//
// Returns only the database's errors.
func (s *Service) AuditStream(ctx context.Context, orgID string) (*AuditStream, error) {
	st := &AuditStream{}
	var last, ok, failing db.NullTime
	err := s.db.QueryRow(ctx, auditStreamSQL, orgID).Scan(&st.URL, &st.CreatedBy, &st.CreatedAt, &st.Seq, &last, &ok, &st.LastError, &failing, &st.NextAt)
	if errors.Is(err, sql.ErrNoRows) || ctalk.ErrorCode(err) == ctalk.ENotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read audit stream: %w", err)
	}
	st.LastAt, st.LastOKAt, st.FailingSince = timePtr(last), timePtr(ok), timePtr(failing)
	return st, nil
}

func timePtr(t db.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	return &t.Time
}

// StopAuditStream turns orgID's audit stream off: nothing more is sent,
// and its cursor goes with it.
//
// Returns ENotFound when the org has no stream.
func (s *Service) StopAuditStream(ctx context.Context, orgID string) error {
	var n int64
	err := s.db.Write(ctx, func(q db.Querier) error {
		res, err := q.Exec(ctx, stopAuditStreamSQL, orgID)
		if err == nil {
			n, _ = res.RowsAffected()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("stop audit stream: %w", err)
	}
	if n == 0 {
		return notFound("audit stream")
	}
	return nil
}

// TestAuditStream sends orgID's stream one test line at once, an event of
// tool "test" with seq 0, signed as every request, and returns what the
// receiver answered: nil when it took it. Its cursor does not move.
//
// Returns ENotFound when the org has no stream, and the EUnavailable of a
// receiver that failed, saying why.
func (s *Service) TestAuditStream(ctx context.Context, orgID string) error {
	var rawURL, secret string
	err := s.db.QueryRow(ctx, auditStreamTargetSQL, orgID).Scan(&rawURL, &secret)
	if errors.Is(err, sql.ErrNoRows) || ctalk.ErrorCode(err) == ctalk.ENotFound {
		return notFound("audit stream")
	}
	if err != nil {
		return fmt.Errorf("read audit stream: %w", err)
	}
	e := audit.Event{At: s.db.Now(), OrgID: orgID, Tool: "test", Outcome: "ok", IDs: []string{}}
	if err := s.postAuditEvents(ctx, rawURL, secret, newID("test_"), []audit.Event{e}); err != nil {
		return ctalk.Errorf(ctalk.EUnavailable, "the test event did not reach the audit stream: %v", err)
	}
	return nil
}

// postAuditEvents sends events in one request, as JSON Lines.
func (s *Service) postAuditEvents(ctx context.Context, rawURL, secret, id string, events []audit.Event) error {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	for _, e := range events {
		if err := enc.Encode(e); err != nil {
			return permanent("build body: %v", err)
		}
	}
	req, err := signedRequest(ctx, rawURL, secret, id, audit.ContentType(audit.FormatJSONL), body.Bytes())
	if err != nil {
		return err
	}
	failure, _ := s.post(req, "audit stream", id)
	return failure
}

// RunAuditStreams sends the audit streams' events until ctx ends, on every
// replica, looking every Poll. It returns at once without an audit source.
func (s *Service) RunAuditStreams(ctx context.Context) {
	if s.auditSrc == nil {
		return
	}
	poll := time.NewTicker(s.cfg.Poll)
	defer poll.Stop()
	for ctx.Err() == nil {
		n, err := s.StreamAudit(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("audit streams: a round failed; retrying", "error", err)
		}
		if n == 0 || err != nil {
			select {
			case <-ctx.Done():
			case <-poll.C:
			}
		}
	}
}

// claimedStream is a stream a round claimed.
type claimedStream struct {
	orgID, url, secret, claim string
	seq                       int64
	attempts                  int
}

// StreamAudit claims the streams with events past their cursor and sends
// each its next events once, Workers at a time, and returns how many
// streams it claimed. Tests call it to drive the streams.
//
// Returns only the database's errors.
func (s *Service) StreamAudit(ctx context.Context) (int, error) {
	now := s.db.Now()
	var due int
	if err := s.db.QueryRow(ctx, auditStreamsDueSQL, now).Scan(&due); err != nil {
		return 0, fmt.Errorf("look for due audit streams: %w", err)
	}
	if due == 0 {
		return 0, nil
	}
	claim := newID("c_")
	var streams []*claimedStream
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		streams = streams[:0]
		rows, err := tx.Query(ctx, s.claimSQL(claimAuditStreamsSQL, claimAuditStreamsUpdate, claimAuditStreamsTail), now.Add(s.cfg.Lease), now, claim, s.cfg.Batch)
		if err != nil {
			return fmt.Errorf("claim audit streams: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			c := &claimedStream{claim: claim}
			if err := rows.Scan(&c.orgID, &c.url, &c.secret, &c.seq, &c.attempts); err != nil {
				return fmt.Errorf("claim audit streams: %w", err)
			}
			streams = append(streams, c)
		}
		return rows.Err()
	})
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, s.cfg.Workers)
	for _, c := range streams {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			s.streamOnce(ctx, c)
		})
	}
	wg.Wait()
	return len(streams), nil
}

// streamOnce sends c's next events after its cursor and records the
// outcome. The request's webhook-id names the org and the events' seqs,
// so that the same events sent again have the same id.
func (s *Service) streamOnce(ctx context.Context, c *claimedStream) {
	events, err := s.auditSrc.After(ctx, c.orgID, c.seq, AuditStreamBatch)
	if err == nil && len(events) == 0 {
		// Pruned before they were sent: the cursor goes to the head.
		var head int64
		if head, err = s.auditSrc.Head(ctx, c.orgID); err == nil {
			s.log.Warn("audit stream: events pruned before they were sent", "org", c.orgID, "from", c.seq+1, "to", head)
			s.settleStream(ctx, c, head, nil)
			return
		}
	}
	if err != nil {
		s.settleStream(ctx, c, 0, temporary("read audit events: %v", err))
		return
	}
	if first := events[0].Seq; first != c.seq+1 {
		s.log.Warn("audit stream: events pruned before they were sent", "org", c.orgID, "from", c.seq+1, "to", first-1)
	}
	last := events[len(events)-1].Seq
	id := "audit_" + c.orgID + "_" + strconv.FormatInt(events[0].Seq, 10) + "-" + strconv.FormatInt(last, 10)
	s.settleStream(ctx, c, last, s.postAuditEvents(ctx, c.url, c.secret, id, events))
}

// settleStream records the outcome failure of sending c the events up to
// seq: the cursor moves to seq when the receiver took them, else the same
// events go again after a backoff. However long the receiver fails, the
// stream keeps its cursor and tries again: nothing is dropped.
func (s *Service) settleStream(ctx context.Context, c *claimedStream, seq int64, failure error) {
	if ctx.Err() != nil {
		// Shutting down: the lease runs out and another round sends them.
		return
	}
	now := s.db.Now()
	query, args := auditStreamTakenSQL, []any{c.orgID, c.claim, seq, now, c.seq}
	if failure != nil {
		query, args = auditStreamFailedSQL, []any{c.orgID, c.claim, now, errText(failure), now.Add(s.backoff(c.attempts + 1))}
	}
	if err := s.record(ctx, query, args...); err != nil {
		s.log.Warn("audit stream: cannot record a request's outcome; its events will be sent again", "org", c.orgID, "error", err)
	}
}
