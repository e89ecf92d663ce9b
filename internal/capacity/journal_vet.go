package capacity

// The journal is evidence, not authority: a line is reused only when what it says agrees with
// its own figures and with the configuration that resumes it. A line edited by hand (a p95
// lowered, a fail turned into a pass), copied, or written by a broken tool is measured again
// instead, and the warning names it by its line number and says why.

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/search"
)

// suspectLine is a journal line of this configuration that its own figures or the
// configuration contradict: not reused.
type suspectLine struct {
	line int
	why  string
}

// maxSuspectListed is how many suspect lines the warning lists one by one; the rest are counted.
const maxSuspectListed = 10

// journalKey is what identifies a trial in a run: a run records each trial once.
type journalKey struct {
	workload      string
	concurrency   int
	rate, speedup float64
	kind          string
	index         int
}

func (t JournalEntry) key() journalKey {
	return journalKey{t.Workload, t.Concurrency, t.Rate, t.Speedup, t.Kind, t.Index}
}

// vetHistory keeps the trials of history (line numbers in lines) that are consistent with
// themselves and with cfg, and returns the others as suspect lines. Trials whose requests
// failed, or whose client was the bottleneck, are kept as they are: the run measures them
// again whatever they say.
//
// Two error-free lines of the same trial (workload, level, kind and index) are both set
// aside: a run never records a trial twice (a reused trial is not written again, and only
// a trial with failed requests is measured again), so a second copy means the file was
// edited or written by two runs at once, and nothing tells which copy is the measurement.
// Measuring that one trial again costs less than trusting the wrong copy.
func vetHistory(history []JournalEntry, lines []int, cfg Config) ([]JournalEntry, []suspectLine) {
	objectives := sessionSLOs(cfg)
	why := make([]string, len(history))
	copies := map[journalKey][]int{}
	for i, t := range history {
		if t.remeasured() {
			continue
		}
		why[i] = t.inconsistency(cfg, objectives)
		copies[t.key()] = append(copies[t.key()], i)
	}
	for _, idx := range copies {
		if len(idx) < 2 {
			continue
		}
		nums := make([]string, len(idx))
		for k, i := range idx {
			nums[k] = fmt.Sprint(lines[i])
		}
		for _, i := range idx {
			why[i] = fmt.Sprintf("lines %s record the same trial (%s): a run records each trial once, so no copy is reused",
				strings.Join(nums, ", "), history[i].trialName())
		}
	}
	var kept []JournalEntry
	var suspect []suspectLine
	for i, t := range history {
		if why[i] != "" {
			suspect = append(suspect, suspectLine{line: lines[i], why: why[i]})
			continue
		}
		kept = append(kept, t)
	}
	return kept, suspect
}

// trialName reads like `workload "64 / 8", concurrency 2, confirmation 1`.
func (t JournalEntry) trialName() string {
	return fmt.Sprintf("workload %q, %s, %s %d", t.Workload, t.level(), t.Kind, t.Index)
}

// inconsistency says why the trial t cannot be reused by a run of cfg judged by objectives
// (with their defaults), or "" when it can: it belongs to a workload, level and trial the
// configuration asks for, carries its metrics, those figures are possible, its objective
// values are its metrics', and its verdict and closeness are what those values give.
func (t JournalEntry) inconsistency(cfg Config, objectives []results.SLO) string {
	if !slices.ContainsFunc(cfg.Workloads, func(w Workload) bool { return w.Label == t.Workload }) {
		return fmt.Sprintf("workload %q is not one of the configuration's", t.Workload)
	}
	if why := t.offConfiguration(cfg); why != "" {
		return why
	}
	if t.Metrics == nil {
		return "it carries no metrics, so its verdict cannot be checked against its figures"
	}
	m := *t.Metrics
	m.StoppedEarly = t.DecidedEarly // the document's flag, which the journal keeps beside the metrics
	switch {
	case m.Trial != t.Index:
		return fmt.Sprintf("it is %s %d, but its metrics are of trial %d", t.Kind, t.Index, m.Trial)
	case t.Rate == 0 && m.Concurrency != t.Concurrency:
		return fmt.Sprintf("it ran at concurrency %d, but its metrics at %d", t.Concurrency, m.Concurrency)
	case m.Correctness.Errors != 0:
		return fmt.Sprintf("it states no failed request, but its metrics count %d", m.Correctness.Errors)
	case !slices.Equal(t.SLOs, m.SLOs):
		return "its objective values differ from those in its metrics"
	}
	if errs := results.CheckTrial(objectives, m); len(errs) > 0 {
		return fmt.Sprintf("its metrics cannot be a measurement: %v", errs[0])
	}
	if !t.DecidedEarly {
		if why := t.objectiveValues(objectives, m); why != "" {
			return why
		}
	}
	stated := results.VerdictFail
	if t.Pass {
		stated = results.VerdictPass
	}
	if t.Verdict != "" && t.Verdict != stated {
		return fmt.Sprintf("its verdict %q contradicts its pass flag (%t)", t.Verdict, t.Pass)
	}
	switch derived := results.Verdict(objectives, m); derived {
	case stated:
	case results.VerdictUnknown:
		return fmt.Sprintf("it says %s, but it records nothing to judge %s by", stated, unjudgedObjectives(objectives, m))
	default:
		return fmt.Sprintf("it says %s, but its own figures give %s (%s)", stated, derived, figures(objectives, m))
	}
	return t.closenessInconsistency(objectives, m)
}

// offConfiguration says why the trial's workload level, kind or index is not one cfg's
// search can ask for, or "".
func (t JournalEntry) offConfiguration(cfg Config) string {
	if t.Kind == kindComparison {
		// A comparison's levels are the baseline's, wherever the search's bounds lie.
		switch {
		case t.Rate != 0:
			return fmt.Sprintf("it is a comparison trial at rate %.6g requests/s, but comparisons measure closed-loop levels", t.Rate)
		case t.Index < 1:
			return fmt.Sprintf("it is comparison %d, but they are numbered from 1", t.Index)
		}
		return ""
	}
	if why := cfg.runAxis().offAxis(t); why != "" {
		return why
	}
	switch {
	case t.Kind == search.Probe.String() && t.Index != 1:
		return fmt.Sprintf("it is probe %d, but a level has one probe", t.Index)
	case t.Kind == search.Confirmation.String() && (t.Index < 1 || t.Index > cfg.ConfirmationTrials):
		return fmt.Sprintf("it is confirmation %d, but trial.confirmation_trials is %d", t.Index, cfg.ConfirmationTrials)
	}
	return ""
}

// objectiveValues checks a full trial's objective values: each objective once, each value
// the statistic its metrics hold for it (where they hold one), each met flag what the value
// gives.
func (t JournalEntry) objectiveValues(objectives []results.SLO, m results.Trial) string {
	for _, s := range objectives {
		n := 0
		for _, r := range m.SLOs {
			if r.Metric != s.Metric || r.Percentile != s.Percentile {
				continue
			}
			n++
			if met := s.Meets(r.Value); met != r.Met && (r.Met || r.Value != 0) {
				return fmt.Sprintf("it says %s was %s, but its value %s %s %s the objective %s", s.Key(), metWord(r.Met), num(r.Value), s.Unit(), map[bool]string{true: "meets", false: "misses"}[met], s.String())
			}
			bare := m
			bare.SLOs = nil
			if v, err := s.Value(bare); err == nil && !closeTo(v, r.Value) {
				return fmt.Sprintf("its %s value %s %s is not the %s its own statistics give (%s %s)", s.Key(), num(r.Value), s.Unit(), s.Key(), num(v), s.Unit())
			}
		}
		if n != 1 {
			return fmt.Sprintf("it records %d values of the objective %s, where a trial records one", n, s.Key())
		}
	}
	if len(m.SLOs) != len(objectives) {
		return fmt.Sprintf("it records %d objective values for the configuration's %d objectives", len(m.SLOs), len(objectives))
	}
	return ""
}

// closenessInconsistency checks the closeness the search's guard band reads: a full trial's
// is the largest of its objectives' (at least 1 when an open-loop trial did not keep up);
// a pass is never beyond its thresholds, a fail cut short is at least 1.
func (t JournalEntry) closenessInconsistency(objectives []results.SLO, m results.Trial) string {
	if t.DecidedEarly {
		if !t.Pass && t.Closeness < 1 {
			return fmt.Sprintf("it is a fail cut short, but states closeness %s, below 1", num(t.Closeness))
		}
		if t.Pass && t.Closeness > 1 {
			return fmt.Sprintf("it is a pass, but states closeness %s, beyond the thresholds", num(t.Closeness))
		}
		return ""
	}
	want := 0.0
	for _, s := range objectives {
		for _, r := range m.SLOs {
			if r.Metric == s.Metric && r.Percentile == s.Percentile {
				want = max(want, s.Closeness(r.Value))
			}
		}
	}
	if m.OpenLoop != nil && !m.OpenLoop.KeptUp {
		want = max(want, 1)
	}
	if !closeTo(want, t.Closeness) {
		return fmt.Sprintf("it states closeness %s, but its objective values give %s", num(t.Closeness), num(want))
	}
	return ""
}

// figures reads like "p95 time_to_first_token 1523.4 ms, the objective p95 TTFT < 150 ms" for each objective.
func figures(objectives []results.SLO, m results.Trial) string {
	var out []string
	for _, s := range objectives {
		if v, err := s.Value(m); err == nil {
			out = append(out, fmt.Sprintf("%s %s %s, the objective %s", s.Key(), num(v), s.Unit(), s.String()))
		}
	}
	if m.OpenLoop != nil && len(m.OpenLoop.Missed) > 0 {
		out = append(out, "did not keep up ("+strings.Join(m.OpenLoop.Missed, ", ")+")")
	}
	return strings.Join(out, "; ")
}

func unjudgedObjectives(objectives []results.SLO, m results.Trial) string {
	var out []string
	for _, s := range objectives {
		if _, ok := s.Met(m); !ok {
			out = append(out, s.Key())
		}
	}
	return strings.Join(out, ", ")
}

func metWord(met bool) string { return map[bool]string{true: "met", false: "missed"}[met] }

func num(v float64) string { return fmt.Sprintf("%.6g", v) }

// closeTo allows the rounding a value's trip through JSON or a second computation can add.
func closeTo(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*max(math.Abs(a), math.Abs(b), 1)
}
