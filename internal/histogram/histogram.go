// Package histogram estimates percentiles from counts in buckets, as
// Prometheus's histogram_quantile does: the overview keeps counts per bucket
// (in rollup rows, or in one pass of SQL), never every value.
package histogram

import (
	"database/sql"
	"fmt"
	"strings"
)

// Histogram counts values in buckets: Counts[i] is how many values were at
// most Bounds[i] and above Bounds[i-1]; the last count, one more than the
// bounds, is of the values above the last bound.
type Histogram struct {
	Bounds []float64
	Counts []int64
}

// New returns an empty histogram over bounds, which must ascend.
func New(bounds []float64) *Histogram {
	return &Histogram{Bounds: bounds, Counts: make([]int64, len(bounds)+1)}
}

// Observe counts v.
func (h *Histogram) Observe(v float64) {
	h.Counts[h.Bucket(v)]++
}

// Bucket is the index of the bucket that v falls in.
func (h *Histogram) Bucket(v float64) int {
	for i, b := range h.Bounds {
		if v <= b {
			return i
		}
	}
	return len(h.Bounds)
}

// Add adds the counts of o, which has the same bounds.
func (h *Histogram) Add(o *Histogram) {
	for i, n := range o.Counts {
		h.Counts[i] += n
	}
}

// Total is how many values were counted.
func (h *Histogram) Total() int64 {
	var n int64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Quantile estimates the q-quantile (0 < q < 1) by interpolating linearly
// within the bucket it falls in, the first bucket starting at zero. A
// quantile in the open last bucket is reported as the last bound, the most
// that can be said of it. With no values it is 0 and ok is false.
func (h *Histogram) Quantile(q float64) (v float64, ok bool) {
	total := h.Total()
	if total == 0 {
		return 0, false
	}
	rank := q * float64(total)
	var below int64
	for i, c := range h.Counts {
		if c == 0 || float64(below+c) < rank {
			below += c
			continue
		}
		if i == len(h.Bounds) {
			break
		}
		lower := 0.0
		if i > 0 {
			lower = h.Bounds[i-1]
		}
		return lower + (h.Bounds[i]-lower)*(rank-float64(below))/float64(c), true
	}
	return h.Bounds[len(h.Bounds)-1], true
}

// SumsSQL is the select list that counts the rows of a query per bucket of
// bounds by the value of the SQL expression expr, in the order of Counts,
// for Scan into them: a histogram in one pass, on either engine.
func SumsSQL(expr string, bounds []float64) string {
	var b strings.Builder
	for i, hi := range bounds {
		b.WriteString("SUM(CASE WHEN ")
		if i > 0 {
			fmt.Fprintf(&b, "%s > %g AND ", expr, bounds[i-1])
		}
		fmt.Fprintf(&b, "%s <= %g THEN 1 ELSE 0 END), ", expr, hi)
	}
	fmt.Fprintf(&b, "SUM(CASE WHEN %s > %g THEN 1 ELSE 0 END)", expr, bounds[len(bounds)-1])
	return b.String()
}

// Dest is the scan destinations of the counts of h, for a row of SumsSQL.
// SUM of no rows is NULL, which they read as zero.
func (h *Histogram) Dest() []any {
	out := make([]any, len(h.Counts))
	for i := range h.Counts {
		out[i] = (*nullCount)(&h.Counts[i])
	}
	return out
}

// nullCount scans a count that may be NULL.
type nullCount int64

// Scan implements sql.Scanner.
func (n *nullCount) Scan(v any) error {
	var c sql.NullInt64
	if err := c.Scan(v); err != nil {
		return err
	}
	*n = nullCount(c.Int64)
	return nil
}
