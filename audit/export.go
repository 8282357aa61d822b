package audit

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/ctalk/ctalk"
)

// Formats an export writes.
const (
	// FormatJSONL is one JSON object a line, each an Event.
	FormatJSONL = "jsonl"
	// FormatCSV is RFC 4180 CSV with a header row (see csvHeader).
	FormatCSV = "csv"
)

// ParseFormat checks the format an export was asked in.
//
// Returns EInvalid for a format other than jsonl or csv.
func ParseFormat(s string) (string, error) {
	switch f := strings.ToLower(strings.TrimSpace(s)); f {
	case FormatJSONL, FormatCSV:
		return f, nil
	case "":
		return "", ctalk.Errorf(ctalk.EInvalid, "format is missing: choose jsonl or csv")
	}
	return "", ctalk.Errorf(ctalk.EInvalid, "format must be jsonl or csv")
}

// ContentType is the media type of an export in format.
func ContentType(format string) string {
	if format == FormatCSV {
		return "text/csv; charset=utf-8"
	}
	return "application/x-ndjson"
}

// exportPage is how many events an export reads a statement: it reads
// page after page by id, writing each event as it is read, so that its
// memory stays the same whatever the log holds and no statement runs for
// long.
const exportPage = 1000

// csvHeader names the columns of a CSV export.
var csvHeader = []string{"id", "at", "org_id", "user_id", "tool", "outcome", "duration_ms", "ids", "request_id", "factor", "seq", "hash"}

// Export writes orgID's events that f selects (its Limit and Before
// aside), oldest first, to w in format, and returns how many it wrote.
//
// Returns only the database's errors, and w's.
func (l *Log) Export(ctx context.Context, orgID string, f Filter, format string, w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 32<<10)
	var cw *csv.Writer
	enc := json.NewEncoder(bw)
	if format == FormatCSV {
		cw = csv.NewWriter(bw)
		if err := cw.Write(csvHeader); err != nil {
			return 0, err
		}
	}
	f.Before, f.after = 0, 0
	var n int64
	for {
		cond, args := where(orgID, f)
		args = append(args, exportPage)
		rows, err := l.db.Query(ctx, `SELECT `+eventColumns+` FROM audit_events WHERE `+cond+` ORDER BY id LIMIT $`+strconv.Itoa(len(args)), args...)
		if err != nil {
			return n, fmt.Errorf("export audit events: %w", err)
		}
		read := 0
		for rows.Next() {
			e, ids, err := scanEvent(rows)
			if err == nil {
				if cw != nil {
					err = cw.Write(csvRow(e, ids))
				} else {
					err = enc.Encode(e)
				}
			}
			if err != nil {
				rows.Close()
				return n, err
			}
			read++
			n++
			f.after = e.ID
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return n, fmt.Errorf("export audit events: %w", err)
		}
		if cw != nil {
			cw.Flush()
			if err := cw.Error(); err != nil {
				return n, err
			}
		}
		if err := bw.Flush(); err != nil {
			return n, err
		}
		if read < exportPage {
			return n, nil
		}
	}
}

// csvRow is e as a row of csvHeader.
func csvRow(e Event, ids string) []string {
	return []string{strconv.FormatInt(e.ID, 10), e.At.Format(time.RFC3339Nano), cell(e.OrgID), cell(e.UserID), cell(e.Tool), cell(e.Outcome),
		strconv.FormatFloat(e.DurationMS, 'f', -1, 64), cell(ids), cell(e.RequestID), cell(e.Factor), strconv.FormatInt(e.Seq, 10), e.Hash}
}

// cell guards a text cell against spreadsheets, which run a cell that
// starts with =, +, -, @, a tab or a carriage return as a formula: such a
// cell starts with a quote instead (OWASP's advice on CSV injection). A
// request id is the caller's to choose, and nothing else is trusted not to
// start so either.
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
