package notify

import "context"

// Listening reports whether Listen is connected.
func (s *Service) Listening() bool { return s.listening.Load() }

// ReachListening reports whether ListenReach is connected.
func (s *Service) ReachListening() bool { return s.reach.Listening() }

// LastEmailSQL is the read of the last mail to an address, whose plan
// TestLastMailIsReadByItsIndex checks.
const LastEmailSQL = lastEmailSQL

// ExpandOnce claims and expands one batch of due events, and returns how
// many it claimed.
func (s *Service) ExpandOnce(ctx context.Context) (int, error) { return s.expandDue(ctx) }

// TakeOutbox reads one batch of the questions' outbox, and returns how many
// questions it read.
func (s *Service) TakeOutbox(ctx context.Context) (int, error) { return s.takeOutbox(ctx) }

// OutboxBatch is how many questions a read of the outbox takes at most.
const OutboxBatch = expandBatch

// OutboxSQL is the read of the questions' outbox on each engine, whose plan
// TestOutboxIsReadByItsIndex checks.
var OutboxSQL = map[string]string{"sqlite": outboxSQL, "postgres": outboxPostgresSQL}

// AnyDueSQL is the worker's look for due work, whose plan
// TestAnyDueReadsTheQueuesIndexes checks.
const AnyDueSQL = anyDueSQL
