package web

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/go-analyze/charts"

	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/histogram"
)

// questionsView is the overview's questions: per day, the times to an
// answer and to an approval, and who has questions waiting.
type questionsView struct {
	Days                 []inbox.DayCounts
	Asked, Answered      int64
	ToAnswer, ToApproval quantiles
	Open                 []inbox.OpenQuestions
	OpenTotal            int64
}

func (p *Pages) questionsView(ctx context.Context, orgID string, since time.Time, days []string) (*questionsView, error) {
	o, err := p.inbox.Overview(ctx, orgID, since)
	if err != nil {
		return nil, err
	}
	v := &questionsView{Open: o.Open, ToAnswer: quantilesOf(o.ToAnswer, waitWords), ToApproval: quantilesOf(o.ToApproval, waitWords)}
	byDay := map[string]inbox.DayCounts{}
	for _, d := range o.Days {
		byDay[d.Day] = d
	}
	for _, day := range days {
		d := byDay[day]
		d.Day = day
		v.Days = append(v.Days, d)
		v.Asked += d.Asked
		v.Answered += d.Answered
	}
	for _, q := range o.Open {
		v.OpenTotal += q.Total()
	}
	return v, nil
}

// callsView is the overview's tool calls, from the audit log's daily
// rollup: per day and per tool, with errors and latency percentiles.
type callsView struct {
	Days  []callsRow
	Tools []callsRow
	Total callsRow
}

// callsRow is the calls of a day, of a tool, or of the whole range.
type callsRow struct {
	Name          string
	Calls, Errors int64
	ErrorRate     string
	latency       *histogram.Histogram
	P50, P90, P99 float64
	// P50Words, P90Words and P99Words are the percentiles in words.
	P50Words, P90Words, P99Words string
}

func newCallsRow(name string) *callsRow {
	return &callsRow{Name: name, latency: histogram.New(audit.LatencyBoundsMS)}
}

func (r *callsRow) add(d audit.Daily) {
	r.Calls += d.Calls()
	if isError(d.Outcome) {
		r.Errors += d.Calls()
	}
	r.latency.Add(d.Latency)
}

// done works out the row's rate and percentiles once its calls are in.
func (r *callsRow) done() callsRow {
	r.ErrorRate = "none"
	if r.Calls > 0 {
		r.ErrorRate = strconv.FormatFloat(100*float64(r.Errors)/float64(r.Calls), 'f', 1, 64) + "%"
	}
	r.P50, _ = r.latency.Quantile(0.5)
	r.P90, _ = r.latency.Quantile(0.9)
	r.P99, _ = r.latency.Quantile(0.99)
	r.P50Words, r.P90Words, r.P99Words = msWords(r.P50), msWords(r.P90), msWords(r.P99)
	if r.Calls == 0 {
		r.P50Words, r.P90Words, r.P99Words = "none", "none", "none"
	}
	return *r
}

func (p *Pages) callsView(ctx context.Context, orgID string, since time.Time, days []string) (*callsView, error) {
	rows, err := p.audit.Daily(ctx, orgID, since)
	if err != nil {
		return nil, err
	}
	byDay, byTool, total := map[string]*callsRow{}, map[string]*callsRow{}, newCallsRow("all")
	for _, day := range days {
		byDay[day] = newCallsRow(day)
	}
	for _, r := range rows {
		day := byDay[r.Day.Format("2006-01-02")]
		if day == nil {
			continue
		}
		if byTool[r.Tool] == nil {
			byTool[r.Tool] = newCallsRow(r.Tool)
		}
		day.add(r)
		byTool[r.Tool].add(r)
		total.add(r)
	}
	v := &callsView{Total: total.done()}
	for _, day := range days {
		v.Days = append(v.Days, byDay[day].done())
	}
	for _, t := range byTool {
		v.Tools = append(v.Tools, t.done())
	}
	sort.Slice(v.Tools, func(i, j int) bool {
		if v.Tools[i].Calls != v.Tools[j].Calls {
			return v.Tools[i].Calls > v.Tools[j].Calls
		}
		return v.Tools[i].Name < v.Tools[j].Name
	})
	return v, nil
}

// channelsView is the overview's channel messages: per day, by people and
// by agents, and per channel.
type channelsView struct {
	Days     []channelsRow
	Channels []channelsRow
	Messages int64
}

// channelsRow counts the messages of a day or of a channel.
type channelsRow struct {
	Name              string
	Messages, ByAgent int64
}

func (p *Pages) channelsView(ctx context.Context, orgID string, since time.Time, days []string) (*channelsView, error) {
	rows, err := p.channels.Activity(ctx, orgID, since)
	if err != nil {
		return nil, err
	}
	byDay, byChannel := map[string]*channelsRow{}, map[string]*channelsRow{}
	v := &channelsView{}
	for _, r := range rows {
		for _, row := range []struct {
			m   map[string]*channelsRow
			key string
		}{{byDay, r.Day}, {byChannel, r.Channel}} {
			if row.m[row.key] == nil {
				row.m[row.key] = &channelsRow{Name: row.key}
			}
			row.m[row.key].Messages += r.Messages
			row.m[row.key].ByAgent += r.ByAgent
		}
		v.Messages += r.Messages
	}
	for _, day := range days {
		r := channelsRow{Name: day}
		if byDay[day] != nil {
			r = *byDay[day]
		}
		v.Days = append(v.Days, r)
	}
	counts := map[string]int64{}
	for k, r := range byChannel {
		counts[k] = r.Messages
	}
	for _, k := range topBy(counts, len(counts)) {
		v.Channels = append(v.Channels, *byChannel[k])
	}
	return v, nil
}

// notifyView is the overview's notification deliveries, per day and per
// channel (email, webhook), by state.
type notifyView struct {
	Days     []notifyRow
	Channels []notifyRow
	Total    notifyRow
}

// notifyRow counts deliveries by state, and the attempts beyond the first.
type notifyRow struct {
	Name                           string
	Sent, Failed, Pending, Retries int64
}

func (r *notifyRow) add(status string, n, attempts int64) {
	switch status {
	case "sent":
		r.Sent += n
	case "failed":
		r.Failed += n
	default:
		r.Pending += n
	}
	r.Retries += max(0, attempts-n)
}

func (p *Pages) notifyView(ctx context.Context, orgID string, since time.Time, days []string) (*notifyView, error) {
	rows, err := p.notify.Health(ctx, orgID, since)
	if err != nil {
		return nil, err
	}
	byDay, byChannel := map[string]*notifyRow{}, map[string]*notifyRow{}
	for _, day := range days {
		byDay[day] = &notifyRow{Name: day}
	}
	for _, ch := range []string{"email", "webhook"} {
		byChannel[ch] = &notifyRow{Name: ch}
	}
	v := &notifyView{Total: notifyRow{Name: "all"}}
	for _, r := range rows {
		if byDay[r.Day] != nil {
			byDay[r.Day].add(r.Status, r.Deliveries, r.Attempts)
		}
		if byChannel[r.Channel] != nil {
			byChannel[r.Channel].add(r.Status, r.Deliveries, r.Attempts)
		}
		v.Total.add(r.Status, r.Deliveries, r.Attempts)
	}
	for _, day := range days {
		v.Days = append(v.Days, *byDay[day])
	}
	v.Channels = []notifyRow{*byChannel["email"], *byChannel["webhook"]}
	return v, nil
}

// overviewCharts are the overview's charts by name: the section each
// reads, and how it is drawn from it (nil when the section is off).
var overviewCharts = map[string]struct {
	section int
	build   func(*overviewData) *chart
}{
	"questions": {sectionQuestions, questionsChart},
	"open":      {sectionQuestions, openChart},
	"calls":     {sectionCalls, callsChart},
	"tools":     {sectionCalls, toolsChart},
	"latency":   {sectionCalls, latencyChart},
	"channels":  {sectionChannels, channelsChart},
	"notify":    {sectionNotify, notifyChart},
}

// series fills a chart's values by calling value for each row and series.
func series[T any](rows []T, n int, value func(T, int) float64) [][]float64 {
	out := make([][]float64, n)
	for s := range out {
		for _, r := range rows {
			out[s] = append(out[s], value(r, s))
		}
	}
	return out
}

func labelsOf[T any](rows []T, name func(T) string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = name(r)
	}
	return out
}

func questionsChart(d *overviewData) *chart {
	rows := d.Questions.Days
	return &chart{Kind: charts.ChartTypeLine, Series: []string{"Asked", "Answered"},
		Labels: labelsOf(rows, func(r inbox.DayCounts) string { return shortDay(r.Day) }),
		Values: series(rows, 2, func(r inbox.DayCounts, s int) float64 { return float64([]int64{r.Asked, r.Answered}[s]) })}
}

// chartTop is how many people, tools or channels a bar chart shows; the
// table beside it lists all.
const chartTop = 10

func openChart(d *overviewData) *chart {
	rows := d.Questions.Open[:min(chartTop, len(d.Questions.Open))]
	return &chart{Kind: charts.ChartTypeHorizontalBar, Stack: true, Series: []string{"Under an hour", "Under a day", "Under a week", "Older"},
		Labels: labelsOf(rows, func(r inbox.OpenQuestions) string { return r.RecipientID }),
		Values: series(rows, 4, func(r inbox.OpenQuestions, s int) float64 { return float64([]int64{r.Hour, r.Day, r.Week, r.Older}[s]) })}
}

func callsChart(d *overviewData) *chart {
	if d.Calls == nil {
		return nil
	}
	rows := d.Calls.Days
	return &chart{Kind: charts.ChartTypeBar, Stack: true, Series: []string{"Succeeded", "Failed"},
		Labels: labelsOf(rows, func(r callsRow) string { return shortDay(r.Name) }),
		Values: series(rows, 2, func(r callsRow, s int) float64 { return float64([]int64{r.Calls - r.Errors, r.Errors}[s]) })}
}

func toolsChart(d *overviewData) *chart {
	if d.Calls == nil {
		return nil
	}
	rows := d.Calls.Tools[:min(chartTop, len(d.Calls.Tools))]
	return &chart{Kind: charts.ChartTypeHorizontalBar, Stack: true, Series: []string{"Succeeded", "Failed"},
		Labels: labelsOf(rows, func(r callsRow) string { return r.Name }),
		Values: series(rows, 2, func(r callsRow, s int) float64 { return float64([]int64{r.Calls - r.Errors, r.Errors}[s]) })}
}

func latencyChart(d *overviewData) *chart {
	if d.Calls == nil {
		return nil
	}
	rows := d.Calls.Days
	return &chart{Kind: charts.ChartTypeLine, Series: []string{"Median", "90th percentile", "99th percentile"}, Unit: "ms",
		Labels: labelsOf(rows, func(r callsRow) string { return shortDay(r.Name) }),
		Values: series(rows, 3, func(r callsRow, s int) float64 {
			if r.Calls == 0 {
				return charts.GetNullValue() // no line through a day without calls
			}
			return []float64{r.P50, r.P90, r.P99}[s]
		})}
}

func channelsChart(d *overviewData) *chart {
	rows := d.Channels.Days
	return &chart{Kind: charts.ChartTypeBar, Stack: true, Series: []string{"By people", "By agents"},
		Labels: labelsOf(rows, func(r channelsRow) string { return shortDay(r.Name) }),
		Values: series(rows, 2, func(r channelsRow, s int) float64 { return float64([]int64{r.Messages - r.ByAgent, r.ByAgent}[s]) })}
}

func notifyChart(d *overviewData) *chart {
	if d.Notify == nil {
		return nil
	}
	rows := d.Notify.Days
	return &chart{Kind: charts.ChartTypeBar, Stack: true, Series: []string{"Sent", "Failed", "Pending"},
		Labels: labelsOf(rows, func(r notifyRow) string { return shortDay(r.Name) }),
		Values: series(rows, 3, func(r notifyRow, s int) float64 { return float64([]int64{r.Sent, r.Failed, r.Pending}[s]) })}
}
