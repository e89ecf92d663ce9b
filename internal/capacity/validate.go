package capacity

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/endpoint"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// Problem is one thing wrong with a configuration, or, as a warning, one valid value that
// is almost certainly not what was meant.
type Problem struct {
	Path    attrpath.Path // the setting to fix
	Summary string        // a short title
	Detail  string        // names the setting, what is wrong and what to do
	Warning bool
	// Reads are the other settings the rule compared Path with (input_tokens for a shared
	// prefix): a caller that does not know one of them yet cannot judge the rule.
	Reads []attrpath.Path
}

// Validate reports every problem with the configuration, each naming the setting to fix and
// how. It is the one rule: the Terraform glue applies it at plan to the values known then,
// and again at apply, before anything is sent, when they are all known.
func (c Config) Validate() []Problem {
	var v validation
	if _, err := endpoint.Parse(c.Endpoint); err != nil {
		v.fail(attrpath.Root("endpoint"), "Invalid endpoint URL", "%v", err)
	}
	if c.Model == "" {
		v.fail(attrpath.Root("model"), "Empty model name", "must not be empty; give the model name the server lists under /v1/models")
	}
	if c.API != APIChat && c.API != APICompletions {
		v.fail(attrpath.Root("api"), "Unknown API", "must be %q or %q, got %q", APIChat, APICompletions, c.API)
	}
	v.workloads(c.Workloads)
	v.slos(c.SLOs)
	v.search(c)
	trial := attrpath.Root("trial")
	v.between(trial.At("warmup_requests"), c.WarmupRequests, 0, MaxRequests)
	v.between(trial.At("measured_requests"), c.MeasuredRequests, 1, MaxRequests)
	v.between(trial.At("confirmation_trials"), c.ConfirmationTrials, 1, MaxConfirmationTrials)
	if !slices.Contains(CacheFlushModes, c.CacheFlush) {
		v.fail(trial.At("cache_flush"), "Unknown cache flush", "must be one of %s, got %q", strings.Join(CacheFlushModes, ", "), c.CacheFlush)
	}
	for _, d := range []struct {
		name string
		got  fmt.Stringer
		ok   bool
	}{{"stall_timeout", c.StallTimeout, c.StallTimeout > 0}, {"request_timeout", c.RequestTimeout, c.RequestTimeout > 0}} {
		if !d.ok {
			v.fail(trial.At(d.name), "Invalid duration", "must be a positive Go duration such as \"90s\" or \"30m\", got %q", d.got)
		}
	}
	if c.RecordChunkTimes && c.RecordsDirectory == "" {
		v.add(Problem{Path: attrpath.Root("record_chunk_times"), Summary: "Chunk times without records", Reads: []attrpath.Path{attrpath.Root("records_directory")},
			Detail: "record_chunk_times adds chunk arrival times to the per-request records, which are only written with records_directory; set records_directory or remove record_chunk_times."})
	}
	return v.problems
}

// Err is the problems that are errors as one error, each naming its setting; nil when there
// are none (warnings alone do not stop a run).
func Err(problems []Problem) error {
	var errs []error
	for _, p := range problems {
		if !p.Warning {
			errs = append(errs, errors.New(p.Detail))
		}
	}
	return errors.Join(errs...)
}

func (v *validation) workloads(ws []Workload) {
	at := attrpath.Root("workloads")
	if len(ws) == 0 {
		v.fail(at, "No workloads", "must list at least one workload, the input/output shape to find the capacity for")
	}
	seen := map[string]int{}
	for i, w := range ws {
		p := at.Index(i)
		label := p.At("label")
		if w.Label == "" {
			v.fail(label, "Empty workload label", "must not be empty: labels key the result maps; name the shape, e.g. \"8K / 1K\"")
		} else if r, pos, ok := controlChar(w.Label); ok {
			v.fail(label, "Control character in value", "contains the control character %U at byte %d, which would reach terminals, CSV and Markdown renderings; use printable text", r, pos)
		}
		if first, dup := seen[w.Label]; dup && w.Label != "" {
			v.add(Problem{Path: label, Summary: "Duplicate workload label", Reads: []attrpath.Path{at.Index(first).At("label")},
				Detail: fmt.Sprintf("%s: the label %q is already used by workloads[%d]. Labels key maximum_passing_concurrency and first_failing_concurrency, so each must be unique; rename one.", label, w.Label, first)})
		} else if !dup {
			seen[w.Label] = i
		}
		inOK := v.between(p.At("input_tokens"), w.InputTokens, 1, MaxTokens)
		outOK := v.between(p.At("output_tokens"), w.OutputTokens, 1, MaxTokens)
		for _, sd := range []struct {
			name string
			v    float64
			mean string
			n    int
			ok   bool
		}{{"input_tokens_stddev", w.InputTokensStddev, "input_tokens", w.InputTokens, inOK}, {"output_tokens_stddev", w.OutputTokensStddev, "output_tokens", w.OutputTokens, outOK}} {
			switch {
			case math.IsNaN(sd.v) || sd.v < 0:
				v.fail(p.At(sd.name), "Value too small", "must be at least 0, got %g", sd.v)
			case sd.ok && sd.v > float64(sd.n):
				v.add(Problem{Path: p.At(sd.name), Summary: "Length spread wider than the length", Reads: []attrpath.Path{p.At(sd.mean)},
					Detail: fmt.Sprintf("%s (%g) is above the mean length (%d): most draws would be clipped at 1 token; give at most the mean.", p.At(sd.name), sd.v, sd.n)})
			}
		}
		pre := p.At("shared_prefix_tokens")
		switch {
		case w.SharedPrefixTokens < 0:
			v.fail(pre, "Value too small", "must be at least 0, got %d", w.SharedPrefixTokens)
		case inOK && w.SharedPrefixTokens >= w.InputTokens:
			v.add(Problem{Path: pre, Summary: "Shared prefix as long as the prompt", Reads: []attrpath.Path{p.At("input_tokens")},
				Detail: fmt.Sprintf("%s (%d) counts within input_tokens (%d) and must be below it, leaving each prompt a part of its own; lower shared_prefix_tokens or raise input_tokens.", pre, w.SharedPrefixTokens, w.InputTokens)})
		}
	}
}

// slos checks each objective as a whole (the percentile its metric needs, a comparison in
// its direction, goodput in percent), repeats, and values that are valid but almost
// certainly a slip of units: a percentile written as a fraction, a latency in seconds.
// Both would otherwise measure for hours against an objective nobody meant.
func (v *validation) slos(slos []results.SLO) {
	at := attrpath.Root("slos")
	if len(slos) == 0 {
		v.fail(at, "No objectives", "must list at least one objective, e.g. { percentile = 95, threshold_ms = 10000 } for p95 TTFT under 10 s")
	}
	stated := make([]results.SLO, len(slos))
	for i, s := range slos {
		stated[i] = s.WithDefaults() // an empty metric or comparison is the default
	}
	repeats := results.Repeats(stated)
	for i, s := range stated {
		p := at.Index(i)
		for _, f := range s.Problems() {
			v.add(Problem{Path: p.At(f.Field), Summary: "Invalid objective", Detail: fmt.Sprintf("%s %s.", p.At(f.Field), f.Detail),
				Reads: []attrpath.Path{p.At("metric")}}) // every rule of an objective reads its metric
		}
		if j := repeats[i]; j >= 0 {
			v.add(Problem{Path: p, Summary: "Repeated objective", Reads: []attrpath.Path{at.Index(j)},
				Detail: fmt.Sprintf("%s repeats %s of slos[%d]; keep the stricter one.", p, s.Key(), j)})
		}
		if pct := s.Percentile; pct > 0 && pct < 1 {
			v.add(Problem{Path: p.At("percentile"), Summary: "Percentile below 1", Warning: true,
				Detail: fmt.Sprintf("percentile = %g asks for p%g, almost the fastest request of each trial: percentiles are on a 0-100 scale. Did you mean %g (p%g)?", pct, pct, pct*100, pct*100)})
		}
		if th := s.ThresholdMs; th > 0 && th < 50 && (s.Metric == results.MetricTTFT || s.Metric == results.MetricRequestLatency) {
			v.add(Problem{Path: p.At("threshold_ms"), Summary: "Latency threshold below 50 ms", Warning: true, Reads: []attrpath.Path{p.At("metric")},
				Detail: fmt.Sprintf("threshold_ms = %g demands a %s under %g ms: thresholds are in milliseconds. Did you mean %g s (threshold_ms = %g)?", th, strings.ReplaceAll(s.Metric, "_", " "), th, th, th*1000)})
		}
	}
}

func (v *validation) search(c Config) {
	at := attrpath.Root("search")
	levels := at.At("concurrency_levels")
	if c.ConcurrencyLevels != nil && len(c.ConcurrencyLevels) == 0 {
		v.fail(levels, "No concurrency levels", "must list at least one level; remove it to search between search.min_concurrency and search.max_concurrency")
	}
	seen := map[int]int{}
	for i, l := range c.ConcurrencyLevels {
		if !v.between(levels.Index(i), l, 1, MaxConcurrency) {
			continue
		}
		if j, dup := seen[l]; dup {
			v.add(Problem{Path: levels.Index(i), Summary: "Repeated concurrency level", Reads: []attrpath.Path{levels.Index(j)},
				Detail: fmt.Sprintf("%s: %d is already search.concurrency_levels[%d]; list each level once.", levels.Index(i), l, j)})
			continue
		}
		seen[l] = i
	}
	minOK := v.between(at.At("min_concurrency"), c.MinConcurrency, 1, MaxConcurrency)
	maxOK := v.between(at.At("max_concurrency"), c.MaxConcurrency, 1, MaxConcurrency)
	if minOK && maxOK && c.MinConcurrency > c.MaxConcurrency {
		v.add(Problem{Path: at.At("min_concurrency"), Summary: "Search bounds inverted", Reads: []attrpath.Path{at.At("max_concurrency")},
			Detail: fmt.Sprintf("search.min_concurrency (%d) is greater than search.max_concurrency (%d); lower min_concurrency or raise max_concurrency.", c.MinConcurrency, c.MaxConcurrency)})
	}
}

// validation collects problems.
type validation struct{ problems []Problem }

func (v *validation) add(p Problem) { v.problems = append(v.problems, p) }

// fail adds an error whose detail is the path followed by the formatted text.
func (v *validation) fail(p attrpath.Path, summary, format string, args ...any) {
	v.add(Problem{Path: p, Summary: summary, Detail: p.String() + " " + fmt.Sprintf(format, args...) + "."})
}

// between checks lo ≤ got ≤ hi and says whether it holds. The upper bounds keep a run's
// memory and time finite (see MaxTokens).
func (v *validation) between(p attrpath.Path, got, lo, hi int) bool {
	switch {
	case got < lo:
		v.fail(p, "Value too small", "must be at least %d, got %d", lo, got)
	case got > hi:
		v.fail(p, "Value too large", "must be at most %d, got %d. The bound keeps a run's memory and time finite; no real server needs more", hi, got)
	default:
		return true
	}
	return false
}

// controlChar finds the first C0 or C1 control character (DEL included) in s: none belongs
// in a label that ends up on a terminal or in a rendering.
func controlChar(s string) (rune, int, bool) {
	i := strings.IndexFunc(s, unicode.IsControl)
	if i < 0 {
		return 0, 0, false
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return r, i, true
}
