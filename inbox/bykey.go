package inbox

import (
	"context"

	"github.com/ctalk/ctalk"
)

// AskedWithKey returns the question the caller asked with an idempotency key,
// or nil when none was: ask_person's look-up of earlier answers holds back
// only questions not asked yet, so that a retry of an ask gets its question.
//
// Returns EInvalid for a key too long.
func (s *Service) AskedWithKey(ctx context.Context, c ctalk.Caller, key string) (*Question, error) {
	key, err := ctalk.Text("idempotency_key", key, MaxKeyLen, false)
	if err != nil || key == "" {
		return nil, err
	}
	return byKey(ctx, s.db, c.OrgID, c.UserID, key)
}
