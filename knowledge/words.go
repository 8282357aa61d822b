package knowledge

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/ctalk/ctalk/db"
)

// Bounds of the words of shared answers that a replica keeps for
// ask_person's look-up.
const (
	// maxWordsAnswers is the most shared answers of an org whose words are
	// kept: a bigger org is searched on every look-up, as reading all its
	// answers again after each change would cost more than the searches it
	// spares.
	maxWordsAnswers = 2000
	// maxWordsOrgs bounds the orgs whose words are kept; past it, they are
	// all forgotten and read again as needed.
	maxWordsOrgs = 1000
)

// orgWords are the crude stems of every word of an org's shared questions
// and answers, as coverage compares them, at a version of the org's row of
// shared_answer_counts. Never changed once made, so shared between
// look-ups.
type orgWords struct {
	version int64
	stems   map[string]bool
}

// wordCache holds orgWords by org.
type wordCache struct {
	mu   sync.Mutex
	orgs map[string]*orgWords
}

// mayOffer reports whether a look-up of q in orgID may find an answer to
// offer: false when the org shares no answer, or when the words of all its
// shared answers together hold less than MinCoverage of q's, as no one
// answer can hold more. It reads the org's row of shared_answer_counts, and
// the words of its answers only when they changed since this replica last
// read them: every share, edit and unshare, on any replica, moves the
// row's version on in its own transaction, so that words read at an older
// version are never trusted.
func (s *Service) mayOffer(ctx context.Context, orgID string, q query) (bool, error) {
	var answers int
	var version int64
	err := s.db.QueryRow(ctx, `SELECT answers, version FROM shared_answer_counts WHERE org_id = $1`, orgID).Scan(&answers, &version)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// Nothing was ever shared there.
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read shared answer counts: %w", err)
	case answers <= 0:
		return false, nil
	case answers > maxWordsAnswers:
		return true, nil
	}
	stems, err := s.words.stems(ctx, s.db, orgID, version)
	if err != nil {
		return false, err
	}
	return q.coverageIn(stems) >= MinCoverage, nil
}

// stems returns the stems of orgID's shared answers at version, read again
// unless this replica holds them at that version. They are read after the
// version, so they hold every word of it; an answer changed in between
// moved the version on, and the next look-up reads them again.
func (c *wordCache) stems(ctx context.Context, d *db.DB, orgID string, version int64) (map[string]bool, error) {
	c.mu.Lock()
	w := c.orgs[orgID]
	c.mu.Unlock()
	if w != nil && w.version == version {
		return w.stems, nil
	}
	rows, err := d.Query(ctx, `SELECT question, answer FROM shared_answers WHERE org_id = $1`, orgID)
	if err != nil {
		return nil, fmt.Errorf("read shared answers' words: %w", err)
	}
	defer rows.Close()
	stems := map[string]bool{}
	for rows.Next() {
		var question, answer string
		if err := rows.Scan(&question, &answer); err != nil {
			return nil, fmt.Errorf("read shared answers' words: %w", err)
		}
		addStems(stems, question, answer)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read shared answers' words: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.orgs) >= maxWordsOrgs {
		clear(c.orgs)
	}
	if w := c.orgs[orgID]; w == nil || w.version < version {
		c.orgs[orgID] = &orgWords{version: version, stems: stems}
	}
	return stems, nil
}
