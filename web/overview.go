package web

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sync/errgroup"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/internal/histogram"
	"github.com/ctalk/ctalk/orgs"
)

// The admins' overview of their org: what its people and agents did over
// the last 7, 30 or 90 days, each chart with its numbers in a table beside
// it. Its numbers come from the tables' owners (inbox, channels, audit's
// daily rollup, notify), each in a fixed number of statements whatever the
// range holds.

// overviewRanges are the ranges the page offers, in days; the first is the
// default.
var overviewRanges = []int{7, 30, 90}

func (p *Pages) mountOverview(r routes) {
	r.GET("/admin/overview", p.overviewPage)
	r.with(compress).GET("/admin/overview/:chart", p.overviewChart)
}

// overviewRange is a link of the range picker.
type overviewRange struct {
	Days    int
	Current bool
}

// overviewData is the page: the range, and each section's numbers; a nil
// section is one whose service is off on this server.
type overviewData struct {
	Days      int
	Ranges    []overviewRange
	Since     string
	Agents    agentsNow
	Questions *questionsView
	Calls     *callsView
	Channels  *channelsView
	Notify    *notifyView
}

// agentsNow counts the org's members by presence now.
type agentsNow struct{ Waiting, Active, Away int }

// overviewDays reads the range from the query: 7, 30 or 90 days.
//
// Returns EInvalid for any other.
func overviewDays(c echo.Context) (int, error) {
	v := c.QueryParam("days")
	if v == "" {
		return overviewRanges[0], nil
	}
	n, err := strconv.Atoi(v)
	for _, r := range overviewRanges {
		if err == nil && n == r {
			return n, nil
		}
	}
	return 0, ctalk.Errorf(ctalk.EInvalid, "days must be 7, 30 or 90; pick one of the ranges on the overview page")
}

// overviewPage shows the overview for the range asked for, and keeps what
// it read for the page's charts.
func (p *Pages) overviewPage(c echo.Context) error {
	ctx, m := c.Request().Context(), me(c)
	days, err := overviewDays(c)
	if err != nil {
		return p.adminNotFound(c, err)
	}
	d, err := p.loadOverview(ctx, m.OrgID, days, allSections)
	if err != nil {
		return err
	}
	p.overviews.put(m.OrgID, days, d)
	return p.app(c, http.StatusOK, "overview", &page{Section: "admin", Title: "Overview", Data: d})
}

// countAgents counts orgID's members by presence now.
func (p *Pages) countAgents(ctx context.Context, orgID string, n *agentsNow) error {
	users, err := p.orgs.Users(ctx, orgID)
	if err != nil {
		return err
	}
	for _, u := range users {
		switch u.Presence {
		case orgs.PresenceWaiting:
			n.Waiting++
		case orgs.PresenceActive:
			n.Active++
		default:
			n.Away++
		}
	}
	return nil
}

// overviewChart serves one chart of the overview as SVG, in the theme the
// query asks for (theme=dark, or light), with headers that let it be
// nothing but an image.
func (p *Pages) overviewChart(c echo.Context) error {
	name, ok := strings.CutSuffix(c.Param("chart"), ".svg")
	def, known := overviewCharts[name]
	if !ok || !known {
		return p.adminNotFound(c, ctalk.Errorf(ctalk.ENotFound, "no chart %q on the overview; open the overview page for its charts", c.Param("chart")))
	}
	days, err := overviewDays(c)
	if err != nil {
		return p.adminNotFound(c, err)
	}
	d := p.overviews.get(me(c).OrgID, days)
	if d == nil {
		if d, err = p.loadOverview(c.Request().Context(), me(c).OrgID, days, def.section); err != nil {
			return err
		}
	}
	ch := def.build(d)
	if ch == nil {
		return p.adminNotFound(c, ctalk.Errorf(ctalk.EUnavailable, "the %s chart needs a service this server does not run", name))
	}
	svg, err := ch.svg(c.QueryParam("theme") == "dark", c.QueryParam("width") == "narrow")
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	h.Set("Content-Disposition", "inline")
	return c.Blob(http.StatusOK, "image/svg+xml", svg)
}

// Sections of the overview, which a chart names to load only its own.
const (
	sectionQuestions = 1 << iota
	sectionCalls
	sectionChannels
	sectionNotify
	sectionAgents
	allSections = sectionQuestions | sectionCalls | sectionChannels | sectionNotify | sectionAgents
)

// loadOverview reads the sections asked for of orgID's last days days, all
// at once: each is its owner's few statements, independent of the others
// (on SQLite too, whose readers do not wait for each other).
func (p *Pages) loadOverview(ctx context.Context, orgID string, days, sections int) (*overviewData, error) {
	today := time.Now().UTC().Truncate(24 * time.Hour)
	since := today.AddDate(0, 0, 1-days)
	d := &overviewData{Days: days, Since: since.Format("2 January 2006")}
	for _, r := range overviewRanges {
		d.Ranges = append(d.Ranges, overviewRange{Days: r, Current: r == days})
	}
	labels := dayLabels(since, days)
	g, ctx := errgroup.WithContext(ctx)
	load := func(section int, on bool, fn func() error) {
		if sections&section != 0 && on {
			g.Go(fn)
		}
	}
	load(sectionQuestions, true, func() (err error) { d.Questions, err = p.questionsView(ctx, orgID, since, labels); return })
	load(sectionCalls, p.audit != nil, func() (err error) { d.Calls, err = p.callsView(ctx, orgID, since, labels); return })
	load(sectionChannels, true, func() (err error) { d.Channels, err = p.channelsView(ctx, orgID, since, labels); return })
	load(sectionNotify, p.notify != nil, func() (err error) { d.Notify, err = p.notifyView(ctx, orgID, since, labels); return })
	load(sectionAgents, true, func() error { return p.countAgents(ctx, orgID, &d.Agents) })
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return d, nil
}

// overviewKeep is how long the charts of an overview page draw what the
// page read rather than reading their sections again: longer than a
// browser takes to ask for a page's images.
const overviewKeep = 30 * time.Second

// overviewMemo keeps, per replica, the overview each org's page last read
// for each range, for the charts the browser asks for right after it: they
// show the numbers of the tables beside them, and the page is read once,
// not once more per chart.
type overviewMemo struct {
	mu sync.Mutex
	m  map[overviewKey]overviewKept
}

type overviewKey struct {
	org  string
	days int
}

type overviewKept struct {
	d  *overviewData
	at time.Time
}

// get returns what the page of org and days read within overviewKeep, or
// nil.
func (m *overviewMemo) get(org string, days int) *overviewData {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.m[overviewKey{org, days}]
	if !ok || time.Since(k.at) > overviewKeep {
		return nil
	}
	return k.d
}

// put keeps d for org and days, and forgets what has outlived
// overviewKeep.
func (m *overviewMemo) put(org string, days int, d *overviewData) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[overviewKey]overviewKept{}
	}
	for k, v := range m.m {
		if time.Since(v.at) > overviewKeep {
			delete(m.m, k)
		}
	}
	m.m[overviewKey{org, days}] = overviewKept{d, time.Now()}
}

// dayLabels are the UTC days from since, as the services spell them.
func dayLabels(since time.Time, days int) []string {
	out := make([]string, days)
	for i := range out {
		out[i] = since.AddDate(0, 0, i).Format("2006-01-02")
	}
	return out
}

// shortDay is a day of dayLabels as a chart's axis shows it.
func shortDay(day string) string {
	t, err := time.Parse("2006-01-02", day)
	if err != nil {
		return day
	}
	return t.Format("Jan 2")
}

// quantiles are a histogram's median and 90th percentile in words.
type quantiles struct {
	Count    int64
	P50, P90 string
}

func quantilesOf(h *histogram.Histogram, format func(float64) string) quantiles {
	q := quantiles{Count: h.Total(), P50: "none", P90: "none"}
	if v, ok := h.Quantile(0.5); ok {
		q.P50 = format(v)
	}
	if v, ok := h.Quantile(0.9); ok {
		q.P90 = format(v)
	}
	return q
}

// waitWords says a number of seconds as a person would.
func waitWords(s float64) string {
	switch {
	case s < 90:
		return strconv.Itoa(int(s+0.5)) + " s"
	case s < 90*60:
		return strconv.Itoa(int(s/60+0.5)) + " min"
	case s < 36*3600:
		return strconv.FormatFloat(s/3600, 'f', 1, 64) + " h"
	}
	return strconv.FormatFloat(s/86400, 'f', 1, 64) + " days"
}

// msWords says a number of milliseconds.
func msWords(ms float64) string {
	if ms < 1000 {
		return strconv.Itoa(int(ms+0.5)) + " ms"
	}
	return strconv.FormatFloat(ms/1000, 'f', 1, 64) + " s"
}

// isError says whether an audited outcome is an error: anything but ok and
// a call the caller cancelled.
func isError(outcome string) bool { return outcome != "ok" && outcome != "cancelled" }

// topBy sorts keys by count, most first, then by name, and keeps n.
func topBy(counts map[string]int64, n int) []string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys[:min(n, len(keys))]
}

// chartRef is a chart on the page: its image in both themes, and what it
// shows in words, for its alt text and caption.
type chartRef struct {
	Light, Dark, Alt string
	// NarrowLight and NarrowDark are the same chart drawn at a phone's
	// width.
	NarrowLight, NarrowDark string
}

// Chart refers to the chart name of the page's range.
func (d *overviewData) Chart(name, alt string) chartRef {
	src := "/admin/overview/" + name + ".svg?days=" + strconv.Itoa(d.Days)
	return chartRef{Light: src, Dark: src + "&theme=dark", NarrowLight: src + "&width=narrow", NarrowDark: src + "&theme=dark&width=narrow", Alt: alt}
}
