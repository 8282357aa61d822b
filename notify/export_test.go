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
