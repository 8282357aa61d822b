package orgs

import "time"

// SetMemberCacheTTL replaces the member cache of s with an empty one whose
// entries live ttl, so that a test can tell a change that took effect from
// a cache entry that merely expired.
func SetMemberCacheTTL(s *Service, ttl time.Duration) { s.members = newMemberCache(s.db, ttl) }

// MemberListening reports whether s hears other replicas' changes.
func MemberListening(s *Service) bool { return s.members.Listening() }

// AfterMemberRead makes s call fn between reading a member and caching it.
func AfterMemberRead(s *Service, fn func()) { s.afterRead = fn }
