package knowledge

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/orgs"
)

// Answered is a question just answered, as inbox returned it.
type Answered struct {
	MessageID  string
	AskerID    string
	AnswererID string
	Question   string
	Answer     string
	AnsweredAt time.Time
}

// Sharing says whether an answer was shared, and why.
type Sharing struct {
	Shared bool   `json:"shared"`
	Why    string `json:"why" jsonschema:"what decided whether the answer is shared"`
}

// Choose records the choice of c, a person in the web app approving,
// editing or writing the answer to question id, of whether it is shared
// once sent. It outranks what their agent proposes. The caller must have
// checked that c is the question's recipient and may decide it.
//
// Returns only the database's errors.
func (s *Service) Choose(ctx context.Context, c ctalk.Caller, id string, share bool) error {
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		_, err := tx.Exec(ctx, `INSERT INTO answer_share_choices (org_id, question_id, share, chosen_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (org_id, question_id) DO UPDATE SET share = excluded.share, chosen_at = excluded.chosen_at`,
			c.OrgID, id, share, s.db.Now())
		return err
	})
	if err != nil {
		return fmt.Errorf("record share choice: %w", err)
	}
	return nil
}

// Publish shares the answer a, just sent by c, when the org and the person
// say so: never when the org's knowledge_sharing is off; else the person's
// choice in the web app (Choose, or person, which is that choice made as the
// answer is sent); else, where the org's approval mode lets the agent send
// what its person approved, the agent's proposal; else the org's default
// (shared when on). In human approval mode the agent's proposal counts for
// nothing: only the person decides. Publishing twice keeps the first copy.
//
// Returns EForbidden when c did not answer a.
func (s *Service) Publish(ctx context.Context, c ctalk.Caller, a Answered, person, proposal *bool) (Sharing, error) {
	if c.UserID != a.AnswererID {
		return Sharing{}, ctalk.Errorf(ctalk.EForbidden, "only the person who answered %s can share it", a.MessageID)
	}
	var out Sharing
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		var err error
		if out, err = decide(ctx, tx, c.OrgID, a.MessageID, person, proposal); err != nil || !out.Shared {
			return err
		}
		res, err := tx.Exec(ctx, `INSERT INTO shared_answers (org_id, question_id, asker_id, answerer_id, question, answer, answered_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (org_id, question_id) DO NOTHING`,
			c.OrgID, a.MessageID, a.AskerID, a.AnswererID, a.Question, a.Answer, a.AnsweredAt.UTC())
		return counted(ctx, tx, c.OrgID, res, err, 1)
	})
	if err != nil {
		return Sharing{}, fmt.Errorf("share answer: %w", err)
	}
	return out, nil
}

// counted records in shared_answer_counts, in the transaction tx of a
// change to orgID's shared answers whose result is res (or err), that the
// org shares added more answers (-1 for one unshared, 0 for one edited)
// and that its answers changed, when a row changed: the version that the
// look-up's cached words stand on moves on with every change.
func counted(ctx context.Context, tx db.Querier, orgID string, res sql.Result, err error, added int) error {
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO shared_answer_counts (org_id, answers, version) VALUES ($1, $3, 1)
		ON CONFLICT (org_id) DO UPDATE SET answers = shared_answer_counts.answers + $2, version = shared_answer_counts.version + 1`, orgID, added, max(added, 0))
	return err
}

// decide works out whether the answer to question id is shared, as Publish
// says, reading the org's settings and the person's choice through tx.
func decide(ctx context.Context, tx db.Querier, orgID, id string, person, proposal *bool) (Sharing, error) {
	k, err := orgs.KnowledgeSettings(ctx, tx, orgID)
	if err != nil || k.Sharing == orgs.SharingOff {
		return Sharing{Why: "your organization's knowledge_sharing is off: answers are not shared"}, err
	}
	if person == nil {
		var chosen bool
		switch err := tx.QueryRow(ctx, `SELECT share FROM answer_share_choices WHERE org_id = $1 AND question_id = $2`, orgID, id).Scan(&chosen); {
		case err == nil:
			person = &chosen
		case !errors.Is(err, sql.ErrNoRows):
			return Sharing{}, err
		}
	}
	if person != nil {
		return Sharing{Shared: *person, Why: "the person chose in ctalk's web app"}, nil
	}
	mode, err := orgs.ApprovalMode(ctx, tx, orgID)
	if err != nil {
		return Sharing{}, err
	}
	if proposal != nil && mode == orgs.ApprovalAgent {
		return Sharing{Shared: *proposal, Why: "your person's choice, as you gave it in share"}, nil
	}
	why := "your organization's default (knowledge_sharing " + k.Sharing + ")"
	if proposal != nil {
		why += "; in human approval mode only your person decides, in ctalk's web app, and they did not"
	}
	return Sharing{Shared: k.Sharing == orgs.SharingOn, Why: why}, nil
}

// Unshare removes the shared answer id from the org's knowledge; the
// answer stays between its two people. Its answerer and the org's admins
// may.
//
// Returns ENotFound (no such shared answer in c's org), EForbidden.
func (s *Service) Unshare(ctx context.Context, c ctalk.Caller, id string) error {
	return s.change(ctx, c, id, func(tx db.Querier) error {
		res, err := tx.Exec(ctx, `DELETE FROM shared_answers WHERE org_id = $1 AND question_id = $2`, c.OrgID, id)
		return counted(ctx, tx, c.OrgID, res, err, -1)
	})
}

// Edit replaces the text of the shared answer id, as the org reads it
// (what the asker received stays as sent). Its answerer and the org's
// admins may.
//
// Returns EInvalid, ENotFound (no such shared answer in c's org), EForbidden.
func (s *Service) Edit(ctx context.Context, c ctalk.Caller, id, answer string) error {
	text, err := ctalk.Text("answer", answer, MaxAnswerLen, true)
	if err != nil {
		return err
	}
	return s.change(ctx, c, id, func(tx db.Querier) error {
		res, err := tx.Exec(ctx, `UPDATE shared_answers SET answer = $3, updated_at = $4, edited_by = $5 WHERE org_id = $1 AND question_id = $2`,
			c.OrgID, id, text, s.db.Now(), c.UserID)
		return counted(ctx, tx, c.OrgID, res, err, 0)
	})
}

// change runs fn on the shared answer id once c may change it, in one
// transaction with the check.
func (s *Service) change(ctx context.Context, c ctalk.Caller, id string, fn func(db.Querier) error) error {
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		var answerer string
		err := tx.QueryRow(ctx, `SELECT answerer_id FROM shared_answers WHERE org_id = $1 AND question_id = $2`, c.OrgID, id).Scan(&answerer)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return notFound(id)
		case err != nil:
			return err
		case !(&Answer{AnswererID: answerer}).MayChange(c):
			return ctalk.Errorf(ctalk.EForbidden, "only %s, who answered it, or an admin can change shared answer %s", answerer, id)
		}
		return fn(tx)
	})
	if ctalk.ErrorCode(err) == ctalk.EInternal {
		return fmt.Errorf("change shared answer: %w", err)
	}
	return err
}

// Settings returns how c's org shares answers: its knowledge_sharing and
// knowledge_stale_days.
//
// Returns only the database's errors.
func (s *Service) Settings(ctx context.Context, c ctalk.Caller) (orgs.Knowledge, error) {
	return orgs.KnowledgeSettings(ctx, s.db, c.OrgID)
}
