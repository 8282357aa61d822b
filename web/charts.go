package web

import (
	"fmt"
	"math"
	"strconv"

	"github.com/go-analyze/charts"
)

// A chart of the overview, drawn on the server as SVG by go-analyze/charts
// (the maintained fork of wcharczuk/go-chart) in the colours of the
// stylesheet's light or dark theme; the page picks one by
// prefers-color-scheme in a <picture>, so no script is needed.
type chart struct {
	// Kind is charts.ChartTypeLine, ChartTypeBar or ChartTypeHorizontalBar.
	Kind string
	// Labels name the categories (days, tools, people), Series the lines
	// or bars, Values[series][category] the numbers.
	Labels, Series []string
	Values         [][]float64
	// Stack stacks a bar chart's series; Unit names the values' unit.
	Stack bool
	Unit  string
}

// chartThemes are the stylesheet's colours (web/static/ctalk.css), light
// and dark: the card's background, text, axes, grid, and series colours
// that keep 3:1 contrast against it.
var chartThemes = map[bool]charts.ColorPalette{
	false: charts.MakeTheme(charts.ThemeOption{
		BackgroundColor: charts.ColorFromHex("ffffff"), TextColor: charts.ColorFromHex("1b1f24"),
		AxisStrokeColor: charts.ColorFromHex("6e7781"), AxisSplitLineColor: charts.ColorFromHex("d0d7de"),
		LegendBorderColor: charts.ColorFromHex("ffffff"), TitleBorderColor: charts.ColorFromHex("ffffff"),
		SeriesColors: hexColors("0b5cad", "b3261e", "1a7f37", "9a6700", "8250df", "59636e"),
	}),
	true: charts.MakeTheme(charts.ThemeOption{
		IsDarkMode:      true,
		BackgroundColor: charts.ColorFromHex("161b22"), TextColor: charts.ColorFromHex("e6edf3"),
		AxisStrokeColor: charts.ColorFromHex("6e7681"), AxisSplitLineColor: charts.ColorFromHex("30363d"),
		LegendBorderColor: charts.ColorFromHex("161b22"), TitleBorderColor: charts.ColorFromHex("161b22"),
		SeriesColors: hexColors("4493f8", "ff7b72", "3fb950", "d29922", "a371f7", "9198a1"),
	}),
}

func hexColors(hex ...string) []charts.Color {
	out := make([]charts.Color, len(hex))
	for i, h := range hex {
		out[i] = charts.ColorFromHex(h)
	}
	return out
}

// svg draws ch in the dark theme or the light, at a phone's width when
// narrow (the page's <picture> offers that one below 40em, where the wide
// chart scaled down left its text unreadable).
func (ch *chart) svg(dark, narrow bool) ([]byte, error) {
	if len(ch.Labels) == 0 {
		// The library needs a category to draw axes; an empty range is one
		// day of zeros.
		ch.Labels, ch.Values = []string{"none"}, make([][]float64, len(ch.Series))
		for i := range ch.Values {
			ch.Values[i] = []float64{0}
		}
	}
	opt := charts.ChartOption{
		OutputFormat: charts.ChartOutputSVG,
		Width:        720,
		Height:       320,
		Theme:        chartThemes[dark],
		Padding:      charts.Box{Top: 16, Right: 24, Bottom: 16, Left: 16},
		SeriesList:   charts.NewSeriesListGeneric(ch.Values, ch.Kind),
		Legend:       charts.LegendOption{SeriesNames: ch.Series},
		StackSeries:  charts.Ptr(ch.Stack),
	}
	if narrow {
		opt.Width, opt.Height = 360, 280
		opt.Padding = charts.Box{Top: 12, Right: 12, Bottom: 12, Left: 8}
	}
	labels := ch.Labels
	value := charts.ValueAxisOption{Title: ch.Unit, ValueFormatter: formatValue}
	if ch.Unit == "" {
		// A count: whole ticks from 0, never 0.2 of a question.
		top, n := wholeTicks(ch.Values, ch.Stack)
		value.Min, value.Max, value.LabelCount, value.PreferNiceIntervals = charts.Ptr(0.0), charts.Ptr(top), n, charts.Ptr(false)
	}
	if ch.Kind == charts.ChartTypeHorizontalBar {
		return ch.horizontal(opt, value)
	} else {
		opt.XAxis = charts.XAxisOption{Labels: labels}
		if narrow {
			// Three day labels (first, middle, last) never touch at a phone's width.
			opt.XAxis.LabelCount = min(len(labels), 3)
		}
		opt.YAxis = []charts.YAxisOption{value}
	}
	p, err := charts.Render(opt)
	if err != nil {
		return nil, fmt.Errorf("draw chart: %w", err)
	}
	return p.Bytes()
}

// formatValue writes a value as people write them: 23, 0.5, 2.4, 1.2k;
// never 23.00 or 2.4000000000000004.
func formatValue(v float64) string {
	if math.Abs(v) >= 1000 {
		return strconv.FormatFloat(math.Round(v/100)/10, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// wholeTicks is the top of a count axis and how many labels it has, so that
// every tick is a whole number: the largest value (of the stack, when
// stacked) rounded up to a multiple of a step of 1, 2 or 5 times a power of
// ten that gives at most five intervals.
func wholeTicks(values [][]float64, stacked bool) (top float64, labels int) {
	var largest float64
	for i := range values {
		for j, v := range values[i] {
			if stacked && i > 0 {
				continue
			}
			if stacked {
				v = 0
				for k := range values {
					if j < len(values[k]) {
						v += values[k][j]
					}
				}
			}
			largest = max(largest, v)
		}
	}
	largest = max(largest, 1)
	step := 1.0
	for p := 1.0; ; p *= 10 {
		if s := nicestStep(largest, p); s > 0 {
			step = s
			break
		}
	}
	top = step * math.Ceil(largest/step)
	return top, int(top/step) + 1
}

// nicestStep is the smallest of 1, 2 and 5 times power that divides largest
// into at most five intervals, or 0 when none does.
func nicestStep(largest, power float64) float64 {
	for _, m := range []float64{1, 2, 5} {
		if math.Ceil(largest/(m*power)) <= 5 {
			return m * power
		}
	}
	return 0
}

// horizontal draws a horizontal bar chart through the library's painter,
// whose bar chart takes the value axis's bounds (its ChartOption takes a
// horizontal chart's value axis from XAxis, which has none).
func (ch *chart) horizontal(opt charts.ChartOption, value charts.ValueAxisOption) ([]byte, error) {
	opt.Height = max(160, 80+28*len(ch.Labels))
	value.Title = ""
	p := charts.NewPainter(charts.PainterOptions{OutputFormat: charts.ChartOutputSVG, Width: opt.Width, Height: opt.Height})
	p.FilledRect(0, 0, opt.Width, opt.Height, opt.Theme.GetBackgroundColor(), opt.Theme.GetBackgroundColor(), 0)
	err := p.BarChart(charts.BarChartOption{
		Theme: opt.Theme, Padding: opt.Padding, Horizontal: true, StackSeries: opt.StackSeries,
		SeriesList:     charts.NewSeriesListBar(ch.Values),
		ValueAxis:      []charts.ValueAxisOption{value},
		CategoryAxis:   charts.CategoryAxisOption{Labels: ch.Labels},
		Legend:         opt.Legend,
		ValueFormatter: formatValue,
	})
	if err != nil {
		return nil, fmt.Errorf("draw chart: %w", err)
	}
	return p.Bytes()
}
