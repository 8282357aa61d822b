package auth

import "time"

// SetTokenCacheTTL replaces the token cache of s with an empty one whose
// entries live ttl, so that a test can tell a revocation that took effect
// from a cache entry that merely expired.
func SetTokenCacheTTL(s *Service, ttl time.Duration) { s.cache = newSessionCache(s.db, ttl) }

// Listening reports whether s hears other replicas' revocations.
func Listening(s *Service) bool { return s.cache.Listening() }

// AfterTokenRead makes s call fn between reading a token and caching it.
func AfterTokenRead(s *Service, fn func()) { s.afterRead = fn }
