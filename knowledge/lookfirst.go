package knowledge

import (
	"context"
	"fmt"

	"github.com/ctalk/ctalk"
)

// LookUp is a question about to be asked, as the look-up before it
// (LookFirst) needs it.
type LookUp struct {
	Question string
	// Key is the ask's idempotency key, if any: a retry of a question
	// already asked with it gets that question, not earlier answers.
	Key string
	// Anyway is the asker's choice to ask whatever was shared (they saw
	// what was offered); FollowUp, a follow-up on a thread, which goes to
	// the one who answered it. Neither is looked up.
	Anyway, FollowUp bool
}

// Retried reports whether c already asked a question with key; see
// SkipRetries.
type Retried func(ctx context.Context, c ctalk.Caller, key string) (bool, error)

// SkipRetries makes LookFirst ask retried whether an ask's idempotency key
// already asked a question, which it then never holds back. Call it before
// serving; without it, every key is taken as new.
func (s *Service) SkipRetries(retried Retried) { s.retried = retried }

// LookFirst is the look-up that ask_person and the web app's ask form make
// before a question is stored, one rule for both: the shared answers that
// answer it (Found.Held: it is not asked), or else those related to it,
// shown when it is asked (Suggest); none when the question must be asked
// at once (asked anyway, a follow-up, or a retry of a question already
// asked).
// The look-up spares a person an interruption and must never stop a
// question: on an error the caller asks, and logs it.
//
// Returns only the database's errors.
func (s *Service) LookFirst(ctx context.Context, c ctalk.Caller, in LookUp) (Found, error) {
	if in.Anyway || in.FollowUp {
		return Found{}, nil
	}
	if in.Key != "" && s.retried != nil {
		asked, err := s.retried(ctx, c, in.Key)
		if ctalk.ErrorCode(err) == ctalk.EInvalid {
			// The ask says what is wrong with the key.
			return Found{}, nil
		}
		if err != nil || asked {
			return Found{}, err
		}
	}
	found, err := s.Suggest(ctx, c, in.Question)
	if err != nil {
		return Found{}, fmt.Errorf("look up shared answers before asking: %w", err)
	}
	return found, nil
}
