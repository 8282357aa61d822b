package inbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
)

// LinkedDraft returns the question and draft version an approval link of
// an earlier release names, so that the link can lead its person to the
// question in the web app. A link approves nothing any more: approval needs
// the recipient's signed-in session.
//
// Returns ENotFound for a token that names no draft.
func (s *Service) LinkedDraft(ctx context.Context, raw string) (msgID string, version int, err error) {
	notFound := ctalk.Errorf(ctalk.ENotFound, "this approval link is not valid; open your ctalk inbox to see what waits for you")
	if !auth.WellFormed(raw) {
		return "", 0, notFound
	}
	// A link names no org: the draft it was made for is found by its hash.
	err = s.db.QueryRow(ctalk.AsOperator(ctx, "approval link lookup by hash"), linkedDraftSQL, auth.HashToken(raw)).Scan(&msgID, &version)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, notFound
	}
	if err != nil {
		return "", 0, fmt.Errorf("read approval link: %w", err)
	}
	return msgID, version, nil
}
