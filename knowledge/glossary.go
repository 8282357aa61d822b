package knowledge

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// Bounds of an org's glossary.
const (
	// MaxGlossaryEntries is the most entries an org's glossary holds.
	MaxGlossaryEntries = 500
	// MaxGlossaryLen bounds a term and what it means, in characters.
	MaxGlossaryLen = 100
)

// GlossaryEntry is one entry of an org's glossary: a term (an abbreviation
// or a word) and what it means (its spelling out, or a synonym). Both
// count as the same in find_answers and in ask_person's look-up, both ways.
type GlossaryEntry struct {
	Term      string    `json:"term"`
	Means     string    `json:"means"`
	UpdatedBy string    `json:"updated_by"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Glossary returns the glossary of c's org, by term.
//
// Returns only the database's errors.
func (s *Service) Glossary(ctx context.Context, c ctalk.Caller) ([]GlossaryEntry, error) {
	out, err := readGlossary(ctx, s.db, c.OrgID)
	if err != nil {
		return nil, fmt.Errorf("read glossary: %w", err)
	}
	return out, nil
}

// readGlossary reads orgID's glossary through q, by term.
func readGlossary(ctx context.Context, q db.Reader, orgID string) ([]GlossaryEntry, error) {
	rows, err := q.Query(ctx, `SELECT term, means, updated_by, updated_at FROM knowledge_glossary WHERE org_id = $1 ORDER BY term`, orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []GlossaryEntry{}
	for rows.Next() {
		var e GlossaryEntry
		if err := rows.Scan(&e.Term, &e.Means, &e.UpdatedBy, &e.UpdatedAt); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// SetGlossaryEntry makes term mean means in c's org, replacing what it
// meant: "SSO", "single sign-on". Only admins may. Every replica's
// look-up and search use it from its next call.
//
// Returns EForbidden when c is not an admin, EInvalid when term or means
// is empty, too long, made only of common words, or the same as the other,
// or when the glossary already holds MaxGlossaryEntries other terms.
func (s *Service) SetGlossaryEntry(ctx context.Context, c ctalk.Caller, term, means string) error {
	if !c.Admin {
		return ctalk.Errorf(ctalk.EForbidden, "only an admin of your organization can edit its glossary")
	}
	term, means = strings.Join(strings.Fields(term), " "), strings.Join(strings.Fields(means), " ")
	for _, f := range []struct{ name, text string }{{"term", term}, {"means", means}} {
		if _, err := ctalk.Text(f.name, f.text, MaxGlossaryLen, true); err != nil {
			return err
		}
		if len(glossForm(f.text).stems) == 0 {
			return ctalk.Errorf(ctalk.EInvalid, "%s %q has only common words, which searches leave out; give the word itself", f.name, f.text)
		}
	}
	if strings.Join(glossForm(term).stems, " ") == strings.Join(glossForm(means).stems, " ") {
		return ctalk.Errorf(ctalk.EInvalid, "%q and %q are already the same word to the search; give a different one", term, means)
	}
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM knowledge_glossary WHERE org_id = $1 AND term <> $2`, c.OrgID, term).Scan(&n); err != nil {
			return err
		}
		if n >= MaxGlossaryEntries {
			return ctalk.Errorf(ctalk.EInvalid, "the glossary holds %d terms, the most it may; remove one first", n)
		}
		res, err := tx.Exec(ctx, `INSERT INTO knowledge_glossary (org_id, term, means, updated_by, updated_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (org_id, term) DO UPDATE SET means = excluded.means, updated_by = excluded.updated_by, updated_at = excluded.updated_at`,
			c.OrgID, term, means, c.UserID, s.db.Now())
		return counted(ctx, tx, c.OrgID, res, err, 0)
	})
	if err != nil {
		return fmt.Errorf("set glossary entry: %w", err)
	}
	return nil
}

// DeleteGlossaryEntry removes term from the glossary of c's org. Only
// admins may.
//
// Returns EForbidden when c is not an admin, ENotFound when the glossary
// has no such term.
func (s *Service) DeleteGlossaryEntry(ctx context.Context, c ctalk.Caller, term string) error {
	if !c.Admin {
		return ctalk.Errorf(ctalk.EForbidden, "only an admin of your organization can edit its glossary")
	}
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		res, err := tx.Exec(ctx, `DELETE FROM knowledge_glossary WHERE org_id = $1 AND term = $2`, c.OrgID, term)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err == nil {
				err = ctalk.Errorf(ctalk.ENotFound, "the glossary has no term %q", term)
			}
			return err
		}
		return counted(ctx, tx, c.OrgID, res, nil, 0)
	})
	if err != nil {
		return fmt.Errorf("delete glossary entry: %w", err)
	}
	return nil
}
