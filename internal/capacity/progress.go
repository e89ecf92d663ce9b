package capacity

// What a person following a long run reads: one line per finished trial (time, workload,
// concurrency or the rate scheduled and offered, trial kind and number, verdict, each
// objective against its threshold, the guard an open-loop trial missed, the
// trial's duration, and for the run: trials done, elapsed, what is left), written to the
// progress log and the provider's log as the run goes.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/search"
)

// runTracker follows a run: it counts finished and reused trials, knows which trial runs now
// and in which step (for the message of an interrupted run), and writes the human lines.
type runTracker struct {
	cfg   Config
	axis  axis // the run's, once connected: it names trials and counts what is left
	slos  []results.SLO
	start time.Time
	say   func(line string) // nil: nobody reads the lines

	mu        sync.Mutex
	done      map[string][]JournalEntry // by workload, in the search's order
	measured  int                       // trials this run measured
	good      int                       // finished trials without failed requests, reused ones included
	reused    int                       // trials taken from the journal
	reusedBy  []string                  // workloads with reused trials, in order
	trialTime time.Duration             // wall-clock of the trials this run measured
	current   string                    // the trial running now, "" between trials
	step      trialStep                 // what it is doing
	lastError string                    // the last failed request's error, for a server that went away
}

func newRunTracker(cfg Config, slos []results.SLO, say func(string)) *runTracker {
	return &runTracker{cfg: cfg, slos: slos, start: time.Now(), say: say, done: map[string][]JournalEntry{}}
}

// begin marks the trial that runs now, at where on the run's axis.
func (w *runTracker) begin(workload, where string, at trialAt) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	name := trialName(at.Kind, at.Index, w.cfg.ConfirmationTrials)
	if at.Comparison {
		name = fmt.Sprintf("comparison trial %d", at.Index)
	}
	w.current = fmt.Sprintf("%s at %s of workload %q", name, where, workload)
	w.step = stepNone
}

// trialStep is the step a trial is in, as the message of a run stopped in it says.
type trialStep int

// The steps of a trial (trial.go, replicas.go).
const (
	stepNone trialStep = iota
	stepServerIdle
	stepServerFlush
	stepReplicasIdle
	stepReplicasFlush
	stepPrompts
	stepRequests
	stepUsers
)

func (s trialStep) String() string {
	return [...]string{
		stepNone:          "",
		stepServerIdle:    "while waiting for the server to finish earlier work",
		stepServerFlush:   "while flushing the server's prefix cache",
		stepReplicasIdle:  "while waiting for every replica to finish earlier work",
		stepReplicasFlush: "while flushing every replica's prefix cache",
		stepPrompts:       "while its prompts were prepared",
		stepRequests:      "while its requests ran",
		stepUsers:         "while its users held their conversations (thinking users pause their think time before every turn)",
	}[s]
}

// enter names the step the current trial is in.
func (w *runTracker) enter(step trialStep) {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.step = step
	w.mu.Unlock()
}

// where says which trial was running and in which step, or that none was.
func (w *runTracker) where() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.current == "":
		return "between trials"
	case w.step == stepNone:
		return w.current
	}
	return w.current + ", " + w.step.String()
}

// finished records one outcome the search used, measured now or reused from the journal.
func (w *runTracker) finished(workload string, o outcome, e JournalEntry) {
	if w == nil {
		return
	}
	at := w.axis.progressAt(e)
	w.mu.Lock()
	w.done[workload] = append(w.done[workload], e)
	if o.Failed == 0 {
		w.good++
	} else if len(e.ErrorSummary) > 0 {
		w.lastError = e.ErrorSummary[0].Example
	}
	if o.Resumed {
		w.reused++
		if !slices.Contains(w.reusedBy, workload) {
			w.reusedBy = append(w.reusedBy, workload)
		}
	} else {
		w.measured++
		if t := o.Detail; t != nil && t.Timing != nil {
			w.trialTime += time.Duration(t.Timing.TotalS * float64(time.Second))
		}
	}
	w.current, w.step = "", stepNone
	line := ""
	if !o.Resumed {
		line = w.line(workload, at, o, e)
	}
	w.mu.Unlock()
	if line != "" {
		w.sayf("%s", line)
	}
}

// rateAt names where a rate trial ran: the rate it was scheduled at and the rate its measured
// requests were really offered at (a Poisson schedule of a few requests offers far from its
// mean), "rate 3.08/s offered 2.32/s", or for a replay "speedup 1.22× (6.1/s) offered 6.05/s".
func rateAt(e JournalEntry) string {
	at := "rate " + sig3(e.Rate) + "/s"
	if e.Speedup > 0 {
		at = "speedup " + sig3(e.Speedup) + "× (" + sig3(e.Rate) + "/s)"
	}
	if t := e.Metrics; t != nil && t.OpenLoop != nil && t.OpenLoop.OfferedRate > 0 {
		at += " offered " + sig3(t.OpenLoop.OfferedRate) + "/s"
	}
	return at
}

// sig3 writes a rate to three significant digits: 3.0764 → "3.08", 12 → "12".
func sig3(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return trimFloat(v)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func (w *runTracker) sayf(format string, args ...any) {
	if w != nil && w.say != nil {
		w.say(fmt.Sprintf(format, args...))
	}
}

// line is the human line of one finished trial, with the run's standing after it.
func (w *runTracker) line(workload, at string, o outcome, e JournalEntry) string {
	var b strings.Builder
	name := trialName(o.Kind, o.Index, w.cfg.ConfirmationTrials)
	if e.Kind == kindComparison {
		name = fmt.Sprintf("comparison %d", e.Index)
	}
	fmt.Fprintf(&b, "%s  %q %s %s  %s", time.Now().UTC().Format("15:04:05"), workload, at, name, strings.ToUpper(e.verdict()))
	if o.DecidedEarly {
		b.WriteString(" (stopped early)")
	}
	for _, r := range e.SLOs {
		b.WriteString("  " + objectiveText(w.slos, r, e.ValueIsBound))
	}
	// An open-loop trial fails too when the server did not keep up with its rate: say which
	// guard and by how much, or a FAIL reads beside objectives that were all met.
	if t := e.Metrics; t != nil {
		if g := t.OpenLoop.MissedGuards(); len(g) > 0 {
			b.WriteString("  did not keep up: " + strings.Join(g, ", "))
		}
	}
	if o.Failed > 0 {
		fmt.Fprintf(&b, "  %d requests failed", o.Failed)
	}
	if t := o.Detail; t != nil && t.Timing != nil {
		fmt.Fprintf(&b, "  trial %s (server idle %s)", round(t.Timing.TotalS), round(t.Timing.Idle()))
	}
	done := w.measured + w.reused
	fmt.Fprintf(&b, "  | %d %s done", done, plural(done, "trial", "trials"))
	if w.reused > 0 {
		fmt.Fprintf(&b, " (%d resumed)", w.reused)
	}
	fmt.Fprintf(&b, ", %s elapsed", round(time.Since(w.start).Seconds()))
	b.WriteString(", " + w.left(workload))
	return b.String()
}

// objectiveText reads "p95 TTFT 412.3 ms (limit < 300) missed".
func objectiveText(slos []results.SLO, r results.SLOResult, bound bool) string {
	o := results.SLO{Metric: r.Metric, Percentile: r.Percentile}
	for _, s := range slos {
		if s.Metric == r.Metric && s.Percentile == r.Percentile {
			o = s
		}
	}
	m := o.Info()
	name := objectiveName(o)
	verdict := "met"
	if !r.Met {
		verdict = "missed"
	}
	at := ""
	if bound {
		// A probe cut short before any request finished knows no bound at all: "≥ 0 ms"
		// reads as a measurement.
		if r.Value <= 0 {
			return fmt.Sprintf("%s unknown: stopped before a request finished (limit %s %s %s) %s", name, comparisonSymbol(o.Comparison), trimFloat(o.ThresholdMs), m.Unit, verdict)
		}
		at = "≥ "
	}
	return fmt.Sprintf("%s %s%s %s (limit %s %s %s) %s", name, at, trimFloat(math.Round(r.Value*10)/10), m.Unit, comparisonSymbol(o.Comparison), trimFloat(o.ThresholdMs), m.Unit, verdict)
}

func comparisonSymbol(c string) string {
	switch c {
	case results.StrictlyLessThan:
		return "<"
	case results.LessThanOrEqual:
		return "≤"
	case results.GreaterThan:
		return ">"
	case results.GreaterThanOrEqual:
		return "≥"
	}
	return c
}

func trimFloat(v float64) string { return strings.TrimSuffix(fmt.Sprintf("%g", v), ".0") }

// trialName reads "probe" or "confirmation 2/3".
func trialName(k search.Kind, index, of int) string {
	if k == search.Probe {
		return "probe"
	}
	return fmt.Sprintf("confirmation %d/%d", index, of)
}

// round reads a duration in seconds as people do: "850ms", "4.1s", "12m5s", "2h3m".
func round(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}

// left estimates what is still to come: the trials the search can still ask for, as a range
// over where the boundary may lie (assuming clear-cut results: a noisy boundary can add
// guard trials), and their time at this run's mean trial duration.
func (w *runTracker) left(current string) string {
	lo, hi := 0, 0
	started := false
	for _, wl := range w.cfg.Workloads {
		switch {
		case wl.Label == current:
			started = true
			a, b := w.remaining(wl.Label)
			lo, hi = lo+a, hi+b
		case started:
			a, b := w.remaining("")
			lo, hi = lo+a, hi+b
		}
	}
	if hi == 0 {
		return "nothing left"
	}
	n := fmt.Sprintf("%d %s", lo, plural(lo, "trial", "trials"))
	if hi != lo {
		n = fmt.Sprintf("%d–%d trials", lo, hi)
	}
	if w.measured == 0 {
		return n + " left"
	}
	mean := w.trialTime.Seconds() / float64(w.measured)
	t := round(float64(lo) * mean)
	if hi != lo {
		t += "–" + round(float64(hi)*mean)
	}
	return fmt.Sprintf("%s left (about %s)", n, t)
}

// remaining is the fewest and the most trials a workload's search can still ask for, after
// what it has done ("": a workload not begun), along the run's axis.
func (w *runTracker) remaining(workload string) (lo, hi int) {
	// Trials added for a comparison are not the search's; how many more it adds depends on
	// the verdict, at most its budget.
	search := slices.DeleteFunc(slices.Clone(w.done[workload]), func(e JournalEntry) bool { return e.Kind == kindComparison })
	return w.axis.remaining(w.cfg, search)
}

// maxEstimateCandidates bounds the boundaries an estimate plays out: every level when the
// bracket is small, evenly spread ones otherwise.
const maxEstimateCandidates = 64

// playOut plays a workload's search out against every boundary b still possible in [from,
// to] (searchTo runs the search whose trials pass up to b and counts them) and returns the
// fewest and the most trials it would still ask for. The search is deterministic, so for
// clear-cut results this is exact.
func playOut(from, to int, searchTo func(b int) (trials int, err error)) (lo, hi int) {
	lo, hi = math.MaxInt, 0
	for _, b := range candidates(from, to) {
		n, err := searchTo(b)
		if err != nil {
			continue
		}
		lo, hi = min(lo, n), max(hi, n)
	}
	if lo > hi {
		return 0, 0
	}
	return lo, hi
}

// clearCut is a played-out trial's outcome: a clear pass or fail, so no guard trials.
func clearCut[D any](pass bool) search.OutcomeOf[D] {
	if pass {
		return search.OutcomeOf[D]{Pass: true, Value: 0.5}
	}
	return search.OutcomeOf[D]{Value: 2}
}

func candidates(from, to int) []int {
	if to-from+1 <= maxEstimateCandidates {
		out := make([]int, 0, to-from+1)
		for b := from; b <= to; b++ {
			out = append(out, b)
		}
		return out
	}
	out := make([]int, 0, maxEstimateCandidates)
	for i := range maxEstimateCandidates {
		out = append(out, from+int(float64(i)*float64(to-from)/float64(maxEstimateCandidates-1)))
	}
	return slices.Compact(out)
}
