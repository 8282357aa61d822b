package web

import (
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/go-analyze/charts"
)

// axisLabels are the texts of an SVG chart that read as numbers.
func axisLabels(t *testing.T, svg []byte) []string {
	t.Helper()
	var out []string
	for _, m := range regexp.MustCompile(`<text[^>]*>([^<]*)</text>`).FindAllSubmatch(svg, -1) {
		if _, err := strconv.ParseFloat(string(m[1]), 64); err == nil {
			out = append(out, string(m[1]))
		}
	}
	return out
}

// TestChartCountsHaveWholeTicks: a chart of counts never labels a tick
// with a fraction of a question, whatever its kind and width, and values
// read as people write them.
func TestChartCountsHaveWholeTicks(t *testing.T) {
	for _, kind := range []string{charts.ChartTypeLine, charts.ChartTypeBar, charts.ChartTypeHorizontalBar} {
		for _, narrow := range []bool{false, true} {
			for _, values := range [][][]float64{{{1, 0, 2}, {0, 1, 0}}, {{3, 7, 12}, {1, 0, 4}}, {{0, 0, 0}, {0, 0, 0}}, {{230, 7, 1200}, {1, 0, 4}}} {
				ch := &chart{Kind: kind, Stack: kind != charts.ChartTypeLine, Series: []string{"a", "b"}, Labels: []string{"x", "y", "z"}, Values: values}
				svg, err := ch.svg(false, narrow)
				if err != nil {
					t.Fatal(err)
				}
				labels := axisLabels(t, svg)
				if len(labels) < 2 {
					t.Errorf("%s narrow=%v %v: only the labels %v", kind, narrow, values, labels)
				}
				for _, l := range labels {
					if f, _ := strconv.ParseFloat(l, 64); f != float64(int64(f)) {
						t.Errorf("%s narrow=%v %v: tick %q is not whole (labels %v)", kind, narrow, values, l, labels)
					}
				}
			}
		}
	}
	for v, want := range map[float64]string{2.4000000000000004: "2.4", 23: "23", 0.5: "0.5", 1234: "1.2k", 1000: "1k"} {
		if got := formatValue(v); got != want {
			t.Errorf("formatValue(%v) = %q, want %q", v, got, want)
		}
	}
	if top, n := wholeTicks([][]float64{{1, 2}, {1, 1}}, true); top != 3 || n != 4 || !slices.Contains([]int{4}, n) {
		t.Errorf("wholeTicks of a stack of 3 = %v, %d; want 3, 4", top, n)
	}
}
