package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Ratio compares the throughput of a tool with that of the limit that
// bounds it, measured by the same client at the same concurrency.
type Ratio struct {
	Tool   string  `json:"tool"`
	Limit  string  `json:"limit"`
	Value  float64 `json:"value"`
	Target string  `json:"target,omitempty"`
	Status string  `json:"status"`
}

// Target statuses.
const (
	statusMet     = "met"
	statusMissed  = "MISSED"
	statusSkipped = "skipped"
	statusInfo    = "info"
)

// fullWaiters is how many waiting agents one replica must hold.
const fullWaiters = 10000

// Target is one of the figures ctalk promises.
type Target struct {
	Name   string `json:"name"`
	Want   string `json:"want"`
	Got    string `json:"got"`
	Status string `json:"status"`
	Note   string `json:"note,omitempty"`
}

// op finds the statistics of an operation of a phase, or nil.
func (res *Result) op(phase, op string) *OpStats {
	for i := range res.Ops {
		if res.Ops[i].Phase == phase && res.Ops[i].Op == op {
			return &res.Ops[i]
		}
	}
	return nil
}

// evaluate computes the ratios and checks every target. Each phase judges
// its own targets, in its own file.
func (r *runner) evaluate() {
	r.throughputTargets()
	r.notifiedTarget()
	r.deliveryTargets()
	r.fanOutTargets()
	r.scaleTarget()
	r.memoryTargets()
	r.errorNotes()
}

// latencyTarget judges a p99 latency measured over n samples against its
// target: skipped says why it was not measured, none what happened when
// no sample arrived.
func latencyTarget(name string, targetMS, p99MS float64, n int, skipped bool, why, none string) Target {
	t := Target{Name: name, Want: fmt.Sprintf("<= %.0f ms", targetMS)}
	switch {
	case skipped:
		t.Status, t.Note = statusSkipped, why
	case n == 0:
		t.Status, t.Note = statusMissed, none
	default:
		t.Got, t.Status = fmt.Sprintf("%.2f ms", p99MS), pass(p99MS <= targetMS)
	}
	return t
}

// errorNotes notes the rows whose calls failed.
func (r *runner) errorNotes() {
	res := r.res
	for _, o := range res.Ops {
		if o.Errors > 0 {
			r.note("%s (%s): %d of %d calls failed; first: %s", o.Op, o.Phase, o.Errors, o.Errors+o.Calls, o.FirstError)
		}
	}
	for _, d := range res.Delivery {
		if d.Errors > 0 {
			r.note("delivery (%s): %d errors; first: %s", d.Setting, d.Errors, d.FirstError)
		}
	}
}

func pass(ok bool) string {
	if ok {
		return statusMet
	}
	return statusMissed
}

// count writes n with thousands separators.
func count(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func ms(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v < 10:
		return fmt.Sprintf("%.3f", v)
	case v < 1000:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// WriteText writes the report as plain-text tables.
func (res *Result) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format+"\n", args...) }
	res.writeSetup(p)
	res.writeThroughput(p)
	res.writeDelivery(p)
	res.writeFanOut(p)
	res.writeScale(p)
	res.writeMemory(p)
	res.writeTargets(p)
	return tw.Flush()
}

// printer writes one line of the report.
type printer func(format string, args ...any)

// writeSetup writes what was measured, how, and on what.
func (res *Result) writeSetup(p printer) {
	s := res.Setup
	p("CTALK-BENCH  %s", s.Started.Format("2006-01-02 15:04 UTC"))
	p("server:       %s at %s", s.Mode, s.URL)
	p("engine:       %s", s.Engine)
	p("clients:      MCP streamable HTTP, era %s: the official Go SDK (tool rows), and the same requests sent bare through net/http, as GET /health is (wire rows); one shared keep-alive transport", s.Era)
	p("load:         %d users per org, concurrency %d, %.1fs per phase, at most %s requests (%s per phase)", s.Users, s.Concurrency, s.PhaseSeconds, count(s.MaxRequests), count(int(s.PhaseCap)))
	p("bcrypt cost:  %s", s.BcryptCost)
	p("ask limits:   %s", s.AskLimits)
	p("machine:      %s %s, %d CPUs (GOMAXPROCS %d); clients and server share it: read the ratios, not the absolute figures", s.GoVersion, s.Platform, s.CPUs, s.GOMAXPROCS)
	p("")

}

// writeThroughput writes every row and its ratio to the limit that bounds it.
func (res *Result) writeThroughput(p printer) {
	s := res.Setup
	p("THROUGHPUT AND LATENCY  (each row runs alone at concurrency %d; the rows of a phase take turns, %d turns each, so that a shared machine's load weighs on them alike; the full-cycle rows run together)", s.Concurrency, rounds)
	p("phase\tkind\toperation\tcalls\terrors\tcalls/s\tp50 ms\tp95 ms\tp99 ms")
	for _, o := range res.Ops {
		p("%s\t%s\t%s\t%d\t%d\t%.1f\t%s\t%s\t%s", o.Phase, o.Kind, o.Op, o.Calls, o.Errors, o.PerSecond, ms(o.P50MS), ms(o.P95MS), ms(o.P99MS))
	}
	if len(res.Ops) == 0 {
		p("(no throughput phase ran)")
	}
	p("")

	p("RATIOS  (tool throughput / limit throughput: same client, same concurrency, same run)")
	p("tool\tlimit\tratio\ttarget\tresult")
	for _, rt := range res.Ratios {
		v := "n/a"
		if rt.Status != statusSkipped {
			v = fmt.Sprintf("%.2f", rt.Value)
		}
		p("%s\t%s\t%s\t%s\t%s", rt.Tool, rt.Limit, v, dash(rt.Target), rt.Status)
	}
	p("")

}

// writeDelivery writes delivery latency per setting.
func (res *Result) writeDelivery(p printer) {
	p("DELIVERY  (send_response -> the asker's waiting wait_for_reply returns; one sample at a time)")
	p("setting\tsamples\tp50 ms\tp99 ms\tafter-ack p50\tafter-ack p99\ttarget p99\tresult")
	for _, d := range res.Delivery {
		if d.Skipped {
			p("%s\t-\t-\t-\t-\t-\t<= %.0f ms\tskipped: %s", d.Setting, d.TargetP99, d.Note)
			continue
		}
		p("%s\t%d\t%s\t%s\t%.3f\t%.3f\t<= %.0f ms\t%s", d.Setting, d.Samples, ms(d.P50MS), ms(d.P99MS), d.AckP50MS, d.AckP99MS, d.TargetP99, pass(d.Samples > 0 && d.P99MS <= d.TargetP99))
	}
	if len(res.Delivery) == 0 {
		p("(phase not run)")
	}
	p("")

}

// writeFanOut writes the fan-out latency per setting.
func (res *Result) writeFanOut(p printer) {
	p("FAN-OUT  (post_message to a channel whose members all wait in wait_for_message, through the wire client -> each wait returns; a round starts once the server counts every member waiting)")
	p("setting\tmembers\trounds\tlast p50 ms\tlast p99 ms\teach p50 ms\teach p99 ms\tpost p50 ms\tCPU ms/round\tdb CPU ms/round\tdb CPU ms/whole round\ttarget p99\tresult")
	for _, f := range res.FanOut {
		if f.Skipped {
			p("%s\t%d\t-\t-\t-\t-\t-\t-\t-\t-\t-\t<= %.0f ms\tskipped: %s", f.Setting, f.Members, f.TargetP99, f.Note)
			continue
		}
		dbcpu, dbround := "-", "-"
		if f.DBCPUMS > 0 {
			dbcpu, dbround = fmt.Sprintf("%.1f", f.DBCPUMS), fmt.Sprintf("%.1f", f.DBRoundCPUMS)
		}
		p("%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%.0f\t%s\t%s\t<= %.0f ms\t%s", f.Setting, f.Members, f.Rounds, ms(f.LastP50MS), ms(f.LastP99MS), ms(f.EachP50MS), ms(f.EachP99MS), ms(f.PostP50MS), f.CPUMS, dbcpu, dbround, f.TargetP99, pass(f.Rounds > 0 && f.LastP99MS <= f.TargetP99))
	}
	if len(res.FanOut) == 0 {
		p("(phase not run)")
	}
	p("")
}

// writeScale writes the reads at a small and a large history.
func (res *Result) writeScale(p printer) {
	if sc := res.Scale; sc != nil {
		p("SCALE  (org history of %s vs %s stored questions; the measured user has %d pending and %d recent replies throughout)", count(sc.SmallRows), count(sc.BigRows), sc.Pending, sc.RecentReplies)
		if sc.Skipped {
			p("skipped: %s", sc.Note)
		} else {
			p("operation\tkind\tcalls\tp50 ms @%s\tp99 ms @%s\tp50 ms @%s\tp99 ms @%s\tp50 ratio\ttarget", count(sc.SmallRows), count(sc.SmallRows), count(sc.BigRows), count(sc.BigRows))
			for _, op := range sc.Ops {
				target := "-"
				if op.Op == "check_inbox" {
					target = "<= 1.50x " + pass(op.Ratio > 0 && op.Ratio <= 1.5)
				}
				p("%s\t%s\t%d+%d\t%s\t%s\t%s\t%s\t%.2fx\t%s", op.Op, op.Kind, op.Small.Calls, op.Big.Calls, ms(op.Small.P50MS), ms(op.Small.P99MS), ms(op.Big.P50MS), ms(op.Big.P99MS), op.Ratio, target)
			}
			p("seeding took %.1f s. %s", sc.SeedSeconds, sc.Note)
		}
		p("")
	}

}

// writeMemory writes the memory of the waiting agents.
func (res *Result) writeMemory(p printer) {
	if m := res.Memory; m != nil {
		p("MEMORY  (%d agents blocked in wait_for_inbox at once)", m.Waiters)
		if m.Skipped {
			p("skipped: %s", m.Note)
		} else {
			p("measured:\t%s", m.Mode)
			p("RSS:\t%.1f MB idle, %.1f MB with %d waiting (+%.1f MB, %.1f KB per agent), %.1f MB after they left", m.RSSBaselineMB, m.RSSWaitingMB, m.Waiters, m.RSSWaitingMB-m.RSSBaselineMB, m.PerWaiterKB, m.RSSAfterMB)
			p("Go runtime:\theap in use %.1f MB idle, %.1f MB waiting, %.1f MB after they left; goroutine stacks %.1f MB idle, %.1f MB waiting (%.1f KB per goroutine)", m.HeapIdleMB, m.HeapWaitingMB, m.HeapAfterMB, m.StackIdleMB, m.StackWaitingMB, perGoroutineKB(m))
			if m.OpenFilesWaiting > 0 {
				p("open files:\t%d idle, %d with %d waiting (+%d)", m.OpenFilesIdle, m.OpenFilesWaiting, m.Waiters, m.OpenFilesWaiting-m.OpenFilesIdle)
			}
			p("goroutines:\t%d idle, %d with %d waiting, %d after they left (back to baseline: %v)", m.GoroutinesBaseline, m.GoroutinesWaiting, m.Waiters, m.GoroutinesAfter, m.BackToBaseline)
			if wk := m.Wake; wk != nil {
				p("wake-ups:\t%d agents asked a question each (%d askers, %.0f asks/s) with all %d waiting: %d woken, p50 %s ms, p99 %s ms, max %s ms from the ask's start to the wait's return; %d errors", wk.Asked, wk.Askers, wk.RatePerSec, m.Waiters, wk.Samples, ms(wk.P50MS), ms(wk.P99MS), ms(wk.MaxMS), wk.Errors)
				if wk.FirstError != "" {
					p("wake error:\t%s", wk.FirstError)
				}
			}
			if m.ReturnedEarly > 0 {
				p("early returns:\t%d waits returned before the agents hung up; first error: %s", m.ReturnedEarly, m.FirstError)
			}
			p("how:\t%s", m.Note)
		}
		p("")
	}

}

// writeTargets writes each target with its verdict, and the notes.
func (res *Result) writeTargets(p printer) {
	met, missed, skipped := 0, 0, 0
	p("TARGETS")
	for _, t := range res.Targets {
		mark := "[ ok ]"
		switch t.Status {
		case statusMet:
			met++
		case statusMissed:
			mark = "[MISS]"
			missed++
		default:
			mark = "[ -- ]"
			skipped++
		}
		line := fmt.Sprintf("%s\t%s\tgot %s\t%s", mark, t.Name, dash(t.Got), t.Status)
		if t.Note != "" {
			line += ": " + t.Note
		}
		p("%s", line)
	}
	p("%d met, %d MISSED, %d not judged. A missed target is a finding, not a failure of the run.", met, missed, skipped)
	if len(res.Notes) > 0 {
		p("")
		p("NOTES")
		for _, n := range res.Notes {
			p("- %s", n)
		}
	}
}

func perGoroutineKB(m *Memory) float64 {
	if d := m.GoroutinesWaiting - m.GoroutinesBaseline; d > 0 {
		return (m.StackWaitingMB - m.StackIdleMB) * 1024 / float64(d)
	}
	return 0
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
