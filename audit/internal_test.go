package audit

// Unchained makes l write its events outside any chain, for a benchmark to
// set beside the chained writes.
func Unchained(l *Log) { l.unchained = true }
