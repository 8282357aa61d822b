package notify

// Listening reports whether Listen is connected.
func (s *Service) Listening() bool { return s.listening.Load() }
