package web

import (
	"fmt"
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

// svg draws ch in the dark theme or the light.
func (ch *chart) svg(dark bool) ([]byte, error) {
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
	labels := ch.Labels
	// Values as people write them: 23, 0.5, 1.2k; never 23.00.
	format := func(v float64) string {
		if v >= 1000 {
			return strconv.FormatFloat(v/1000, 'f', -1, 64) + "k"
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	if ch.Kind == charts.ChartTypeHorizontalBar {
		opt.Height = max(160, 80+28*len(labels))
		opt.YAxis = []charts.YAxisOption{{Labels: labels}}
		opt.XAxis = charts.XAxisOption{ValueFormatter: format}
	} else {
		opt.XAxis = charts.XAxisOption{Labels: labels}
		opt.YAxis = []charts.YAxisOption{{Title: ch.Unit, ValueFormatter: format}}
	}
	p, err := charts.Render(opt)
	if err != nil {
		return nil, fmt.Errorf("draw chart: %w", err)
	}
	return p.Bytes()
}
