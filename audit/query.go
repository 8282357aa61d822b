package audit

import (
	"context"
	"strconv"
	"strings"

	"github.com/ctalk/ctalk"
)

// Bounds of a page of events.
const (
	DefaultLimit = 50
	MaxLimit     = 200
)

// Query asks for a page of an org's events as an admin writes it: in the
// arguments of the get_audit_log tool, or the filter form of the web app's
// audit page. Empty fields do not filter.
type Query struct {
	UserID  string
	Tool    string
	Outcome string
	// Since and Until are RFC 3339 times: events at or after Since, and
	// before Until.
	Since, Until string
	// Limit is the page's size; zero means DefaultLimit.
	Limit int
	// Cursor is the NextCursor of the previous page.
	Cursor string
}

// Page is a page of events, newest first.
type Page struct {
	Events []Event
	// NextCursor asks for the next (older) page; empty on the last.
	NextCursor string
}

// Filter validates q and returns the filter it asks for.
//
// Returns EInvalid, naming the field that is wrong and what it takes.
func (q Query) Filter() (f Filter, err error) {
	f = Filter{Tool: strings.TrimSpace(q.Tool), Outcome: strings.TrimSpace(q.Outcome), Limit: q.Limit}
	if id := strings.TrimSpace(q.UserID); id != "" {
		if f.UserID, err = ctalk.ParseID("user_id", id); err != nil {
			return f, err
		}
	}
	if f.Outcome != "" && !ValidOutcome(f.Outcome) {
		return f, ctalk.Errorf(ctalk.EInvalid, "outcome is not one of ok, cancelled, invalid, unauthorized, forbidden, not_found, conflict, rate_limited, unavailable, internal")
	}
	if f.Since, err = ctalk.ParseTime("since", q.Since); err != nil {
		return f, err
	}
	if f.Until, err = ctalk.ParseTime("until", q.Until); err != nil {
		return f, err
	}
	if f.Limit == 0 {
		f.Limit = DefaultLimit
	}
	if f.Limit < 1 || f.Limit > MaxLimit {
		return f, ctalk.Errorf(ctalk.EInvalid, "limit must be a whole number from 1 to %d", MaxLimit)
	}
	if c := strings.TrimSpace(q.Cursor); c != "" {
		if f.Before, err = strconv.ParseInt(c, 10, 64); err != nil || f.Before <= 0 {
			return f, ctalk.Errorf(ctalk.EInvalid, "cursor is not one this server issued; pass next_cursor from the previous page")
		}
	}
	return f, nil
}

// Query returns the page of orgID's events that q asks for.
//
// Returns EInvalid for a query that Filter refuses.
func (l *Log) Query(ctx context.Context, orgID string, q Query) (*Page, error) {
	f, err := q.Filter()
	if err != nil {
		return nil, err
	}
	events, more, err := l.Events(ctx, orgID, f)
	if err != nil {
		return nil, err
	}
	p := &Page{Events: events}
	if more {
		p.NextCursor = strconv.FormatInt(events[len(events)-1].ID, 10)
	}
	return p, nil
}
