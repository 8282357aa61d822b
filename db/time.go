package db

import (
	"database/sql"
	"fmt"
	"time"
)

// NullTime scans a nullable time on either engine. SQLite returns the result
// of an aggregate such as MIN(created_at) as text, without the column's
// declared type, so it is parsed here.
type NullTime sql.NullTime

// Scan implements sql.Scanner.
func (t *NullTime) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*t = NullTime{}
	case time.Time:
		*t = NullTime{Time: x.UTC(), Valid: true}
	case string:
		return t.parse(x)
	case []byte:
		return t.parse(string(x))
	default:
		return fmt.Errorf("scan time: unsupported type %T", v)
	}
	return nil
}

func (t *NullTime) parse(s string) error {
	for _, layout := range []string{"2006-01-02 15:04:05.999999999-07:00", time.RFC3339Nano, "2006-01-02 15:04:05.999999999"} {
		if p, err := time.Parse(layout, s); err == nil {
			*t = NullTime{Time: p.UTC(), Valid: true}
			return nil
		}
	}
	return fmt.Errorf("scan time: cannot parse %q", s)
}

// Ptr returns the time in UTC, or nil when it is NULL.
func (t NullTime) Ptr() *time.Time {
	if !t.Valid {
		return nil
	}
	v := t.Time.UTC()
	return &v
}

// farFuture stands for "no upper bound" in a time range: after every time
// stored, and one both engines compare.
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// Range returns the bounds of a half-open time range [since, until) as
// statements compare them: in UTC, an until left zero (no upper bound)
// standing as a time after every one stored, so that one statement serves
// with and without an upper bound. A zero since needs no stand-in: it is
// before every time stored.
func Range(since, until time.Time) (time.Time, time.Time) {
	if until.IsZero() {
		until = farFuture
	}
	return since.UTC(), until.UTC()
}
