package audit

import (
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// Each org's events form a hash chain: the event numbered seq (from 1, in
// the order the org's batches committed) has the hash of the previous
// event's hash and its own fields, so that changing, removing or inserting
// an event inside the chain breaks every hash after it. audit_orgs holds
// each chain's head (the last seq and hash). A batch locks the heads of its
// orgs (one upsert, in the order of their ids, so that two writers lock
// them in the same order) before it numbers its events: writers of one org
// on every replica extend its chain in turn, each starting where the
// previous commit left it; on SQLite the one writer does so anyway, and
// BEGIN IMMEDIATE orders processes sharing one file.

// chainVersion starts every hashed event, so that a later change of what
// is hashed cannot be mistaken for this one.
const chainVersion = "ctalk audit chain v1"

// headSQL locks an org's head, making it when the org has none, and reads
// it; headsSQL does so for a batch's orgs in one statement on Postgres.
// The update that changes nothing takes the row's lock, as FOR UPDATE
// would, in the same round trip as the insert.
const (
	headSQL      = `INSERT INTO audit_orgs (org_id) VALUES ($1) ON CONFLICT (org_id) DO UPDATE SET seq = audit_orgs.seq RETURNING org_id, seq, hash`
	headsSQL     = `INSERT INTO audit_orgs (org_id) SELECT unnest($1::text[]) ON CONFLICT (org_id) DO UPDATE SET seq = audit_orgs.seq RETURNING org_id, seq, hash`
	moveHeadSQL  = `UPDATE audit_orgs SET seq = $2, hash = $3 WHERE org_id = $1`
	moveHeadsSQL = `UPDATE audit_orgs SET seq = v.seq, hash = v.hash FROM unnest($1::text[], $2::bigint[], $3::text[]) AS v(org_id, seq, hash) WHERE audit_orgs.org_id = v.org_id`
)

// head is where an org's chain ends.
type head struct {
	seq  int64
	hash string
}

// chain numbers and hashes batch's events in tx, each org's after the head
// of its chain, and moves the heads on. It truncates each event's time to
// the microsecond that both engines keep, so that what is hashed is what
// is stored.
func (l *Log) chain(ctx context.Context, tx db.Querier, batch []Event) error {
	var orgIDs []string
	for i := range batch {
		batch[i].At = batch[i].At.UTC().Truncate(time.Microsecond)
		orgIDs = append(orgIDs, batch[i].OrgID)
	}
	slices.Sort(orgIDs)
	orgIDs = slices.Compact(orgIDs)
	heads, err := l.lockHeads(ctx, tx, orgIDs)
	if err != nil {
		return err
	}
	for i := range batch {
		e := &batch[i]
		h := heads[e.OrgID]
		if h == nil {
			return fmt.Errorf("lock audit chain heads: no head for org %q", e.OrgID)
		}
		h.seq++
		e.Seq = h.seq
		e.Hash = eventHash(h.hash, e, idsJSON(e.IDs))
		h.hash = e.Hash
	}
	return l.moveHeads(ctx, tx, orgIDs, heads)
}

// lockHeads reads, locking them in tx, the heads of the chains of orgIDs
// (sorted, without repeats), making those not there yet: one statement on
// Postgres, one an org on SQLite.
func (l *Log) lockHeads(ctx context.Context, tx db.Querier, orgIDs []string) (map[string]*head, error) {
	heads := make(map[string]*head, len(orgIDs))
	read := func(rows *db.Rows, err error) error {
		if err != nil {
			return fmt.Errorf("lock audit chain heads: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			h := &head{}
			if err := rows.Scan(&id, &h.seq, &h.hash); err != nil {
				return err
			}
			heads[id] = h
		}
		return rows.Err()
	}
	if l.db.Engine == db.Postgres {
		rows, err := tx.Query(ctx, headsSQL, orgIDs)
		return heads, read(rows, err)
	}
	for _, id := range orgIDs {
		rows, err := tx.Query(ctx, headSQL, id)
		if err := read(rows, err); err != nil {
			return nil, err
		}
	}
	return heads, nil
}

// moveHeads stores the heads of the chains of orgIDs in tx.
func (l *Log) moveHeads(ctx context.Context, tx db.Querier, orgIDs []string, heads map[string]*head) error {
	if l.db.Engine == db.Postgres {
		seqs, hashes := make([]int64, len(orgIDs)), make([]string, len(orgIDs))
		for i, id := range orgIDs {
			seqs[i], hashes[i] = heads[id].seq, heads[id].hash
		}
		if _, err := tx.Exec(ctx, moveHeadsSQL, orgIDs, seqs, hashes); err != nil {
			return fmt.Errorf("move audit chain heads: %w", err)
		}
		return nil
	}
	for _, id := range orgIDs {
		if _, err := tx.Exec(ctx, moveHeadSQL, id, heads[id].seq, heads[id].hash); err != nil {
			return fmt.Errorf("move audit chain heads: %w", err)
		}
	}
	return nil
}

// eventHash is the hash of e, whose ids are stored as ids, after the event
// whose hash is prev: SHA-256 over each field, length first, in hex. It
// writes the fields into one buffer on the stack, as it is on the write
// path of every tool call.
func eventHash(prev string, e *Event, ids string) string {
	var buf [512]byte
	var num [32]byte
	b := buf[:0]
	b = appendField(b, chainVersion)
	b = appendField(b, prev)
	b = appendField(b, strconv.AppendInt(num[:0], e.Seq, 10))
	b = appendField(b, e.At.UTC().AppendFormat(num[:0], time.RFC3339Nano))
	for _, s := range [...]string{e.OrgID, e.UserID, e.Tool, e.Outcome} {
		b = appendField(b, s)
	}
	b = appendField(b, strconv.AppendFloat(num[:0], e.DurationMS, 'g', -1, 64))
	for _, s := range [...]string{ids, e.RequestID, e.Factor} {
		b = appendField(b, s)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// appendField appends s to b, its length first, so that no two lists of
// fields give the same bytes.
func appendField[S string | []byte](b []byte, s S) []byte {
	return append(binary.BigEndian.AppendUint64(b, uint64(len(s))), s...)
}

// Verification is what Verify found of one org's chain.
type Verification struct {
	OrgID string `json:"org_id"`
	// From is the seq of the checkpoint pruning left (0: the chain is whole
	// from its first event); Head the seq of the org's newest event.
	From int64 `json:"from"`
	Head int64 `json:"head"`
	// Checked is how many events were checked before the first break, or
	// in all.
	Checked int64 `json:"checked"`
	// Break is the first break found; nil when the chain holds.
	Break *Break `json:"break,omitempty"`
}

// OK reports whether the chain holds.
func (v *Verification) OK() bool { return v.Break == nil }

// Break is where a chain stops holding.
type Break struct {
	// Seq is the place in the chain where it breaks; EventID the id of the
	// event found there, zero when it is missing.
	Seq     int64  `json:"seq"`
	EventID int64  `json:"event_id,omitempty"`
	Reason  string `json:"reason"`
}

// verifyPage is how many events Verify reads a statement.
const verifyPage = 5000

const (
	chainHeadSQL   = `SELECT seq, hash, pruned_seq, pruned_hash, pruned_sig FROM audit_orgs WHERE org_id = $1`
	chainEventsSQL = `SELECT ` + eventColumns + ` FROM audit_events WHERE org_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4`
)

// Verify checks orgID's chain, from the signed checkpoint pruning left (or
// its first event) to its head, and returns the first break: an event
// whose fields or hash were changed, one missing or numbered twice, the
// newest missing, or a checkpoint this server did not sign. It reads the
// chain a page at a time. An org without events has an empty chain, which
// holds.
//
// Returns only the database's errors.
func (l *Log) Verify(ctx context.Context, orgID string) (*Verification, error) {
	for attempt := 0; ; attempt++ {
		v, from, err := l.verify(ctx, orgID)
		if err != nil || v.OK() || attempt == 2 {
			return v, err
		}
		// Pruning may have moved the checkpoint on while the chain was
		// read: then what was missing was pruned, and the chain is read
		// again from the new checkpoint.
		var now int64
		if err := l.db.QueryRow(ctx, `SELECT pruned_seq FROM audit_orgs WHERE org_id = $1`, orgID).Scan(&now); err != nil {
			return nil, fmt.Errorf("read the audit chain: %w", err)
		}
		if now == from {
			return v, nil
		}
	}
}

func (l *Log) verify(ctx context.Context, orgID string) (*Verification, int64, error) {
	v := &Verification{OrgID: orgID}
	var prev, prunedSig string
	err := l.db.QueryRow(ctx, chainHeadSQL, orgID).Scan(&v.Head, new(string), &v.From, &prev, &prunedSig)
	if errors.Is(err, sql.ErrNoRows) || ctalk.ErrorCode(err) == ctalk.ENotFound {
		return v, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read the audit chain: %w", err)
	}
	if v.From > 0 {
		key, err := l.checkpointKey(ctx)
		if err != nil {
			return nil, 0, err
		}
		if !hmac.Equal([]byte(prunedSig), []byte(checkpointSig(key, orgID, v.From, prev))) {
			v.Break = &Break{Seq: v.From, Reason: "the checkpoint that pruning left is not signed by this server: it was changed"}
			return v, v.From, nil
		}
	}
	want := v.From + 1
	for want <= v.Head {
		n, err := l.checkPage(ctx, v, &prev, &want)
		if err != nil {
			return nil, 0, fmt.Errorf("read the audit chain: %w", err)
		}
		if v.Break != nil {
			return v, v.From, nil
		}
		if n == 0 {
			break
		}
	}
	if want <= v.Head {
		v.Break = &Break{Seq: want, Reason: fmt.Sprintf("events %d to %d, the newest of the chain, are missing: deleted", want, v.Head)}
	}
	return v, v.From, nil
}

// checkPage checks a page of v's chain from event want on, each event
// against the hash of the one before (prev), moving prev and want past
// those that hold, and sets v.Break at the first that does not; n is how
// many events it read.
func (l *Log) checkPage(ctx context.Context, v *Verification, prev *string, want *int64) (n int, err error) {
	rows, err := l.db.Query(ctx, chainEventsSQL, v.OrgID, *want-1, v.Head, verifyPage)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	for rows.Next() && v.Break == nil {
		n++
		e, ids, err := scanEvent(rows)
		if err != nil {
			return n, err
		}
		switch {
		case e.Seq > *want:
			v.Break = &Break{Seq: *want, Reason: fmt.Sprintf("events %d to %d of the chain are missing: deleted", *want, e.Seq-1)}
		case e.Seq < *want:
			v.Break = &Break{Seq: e.Seq, EventID: e.ID, Reason: fmt.Sprintf("event %d appears more than once: one was added", e.Seq)}
		case eventHash(*prev, &e, ids) != e.Hash:
			v.Break = &Break{Seq: e.Seq, EventID: e.ID, Reason: fmt.Sprintf("event %d (id %d) does not match its hash: its fields or its hash were changed", e.Seq, e.ID)}
		default:
			*prev = e.Hash
			v.Checked++
			*want++
		}
	}
	return n, rows.Err()
}

// checkpointKeyName names the server's checkpoint key in audit_keys.
const checkpointKeyName = "checkpoint"

const (
	keySQL       = `SELECT secret FROM audit_keys WHERE name = $1`
	insertKeySQL = `INSERT INTO audit_keys (name, secret, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING`
)

// checkpointKey returns the key that signs pruning's checkpoints: derived
// by HKDF, for them alone, from a random secret the server makes once and
// keeps in audit_keys (the first replica's wins; the others read it).
func (l *Log) checkpointKey(ctx context.Context) ([]byte, error) {
	l.keyMu.Lock()
	defer l.keyMu.Unlock()
	if l.key != nil {
		return l.key, nil
	}
	var secret string
	err := l.db.QueryRow(ctx, keySQL, checkpointKeyName).Scan(&secret)
	if errors.Is(err, sql.ErrNoRows) || ctalk.ErrorCode(err) == ctalk.ENotFound {
		var b [32]byte
		rand.Read(b[:])
		err = l.db.Write(ctx, func(q db.Querier) error {
			_, err := q.Exec(ctx, insertKeySQL, checkpointKeyName, base64.StdEncoding.EncodeToString(b[:]), l.db.Now())
			return err
		})
		if err == nil {
			err = l.db.QueryRow(ctx, keySQL, checkpointKeyName).Scan(&secret)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("load the audit checkpoint key: %w", err)
	}
	raw, err := base64.StdEncoding.DecodeString(secret)
	if err != nil {
		return nil, fmt.Errorf("the audit checkpoint key: %w", err)
	}
	key, err := hkdf.Key(sha256.New, raw, nil, "ctalk audit checkpoint v1", 32)
	if err != nil {
		return nil, err
	}
	l.key = key
	return key, nil
}

// checkpointSig signs that orgID's chain was pruned up to the event seq
// whose hash is hash: HMAC-SHA-256 in hex.
func checkpointSig(key []byte, orgID string, seq int64, hash string) string {
	m := hmac.New(sha256.New, key)
	var b []byte
	for _, s := range []string{"ctalk audit checkpoint", orgID, strconv.FormatInt(seq, 10), hash} {
		b = appendField(b, s)
	}
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil))
}
