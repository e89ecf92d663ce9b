package capacity

// Replay of recorded traffic: a workload read from a trace file (internal/trace) is sent at
// its recorded offsets divided by a speedup, each request with its recorded lengths, and the
// search over the speedup answers how many times the recorded traffic the server holds.

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
	"github.com/llmserve/terraform-provider-llmserve/internal/prompt"
	"github.com/llmserve/terraform-provider-llmserve/internal/trace"
)

// UnknownTraceFile stands for a trace file whose path is not known yet (at plan, from another
// resource): the workload is a replay, whose file is checked once the path is known.
const UnknownTraceFile = "\x00not known yet"

// LoadTraces reads the trace file of every workload that names one and has not read it yet;
// a file that cannot be read or parsed is a problem Validate reports at its attribute. The
// workloads it reads into are c's own: a copy of c made before keeps its slice unchanged.
func (c *Config) LoadTraces() {
	cloned := false
	for i := range c.Workloads {
		w := c.Workloads[i]
		if w.TraceFile == "" || w.TraceFile == UnknownTraceFile || w.Trace != nil || w.traceErr != nil {
			continue
		}
		if !cloned {
			c.Workloads, cloned = slices.Clone(c.Workloads), true
		}
		c.Workloads[i].Trace, c.Workloads[i].traceErr = trace.ReadFile(w.TraceFile, w.blockTokens())
	}
}

// blockTokens is the tokens one hash_ids entry stands for.
func (w Workload) blockTokens() int {
	if w.TraceBlockTokens == 0 {
		return trace.MooncakeBlockTokens
	}
	return w.TraceBlockTokens
}

// minTraceMeasured is the fewest measured requests a trace must leave after its warmups: the
// backlog guard judges on 8 samples (metrics.MinBacklogSamples), and with fewer requests it
// could never judge a trial.
const minTraceMeasured = 8

// traceWorkload checks a trace workload's own settings: the file read and fit to replay, and
// the synthetic settings it replaces left unset.
func (v *validation) traceWorkload(c Config, i int, w Workload) {
	p := attrpath.Root("workloads").Index(i)
	tp := p.At("trace")
	for _, set := range []struct {
		name string
		ok   bool
	}{{"input_tokens", w.InputTokens == 0}, {"output_tokens", w.OutputTokens == 0}, {"input_tokens_stddev", w.InputTokensStddev == 0},
		{"output_tokens_stddev", w.OutputTokensStddev == 0}, {"shared_prefix_tokens", w.SharedPrefixTokens == 0}} {
		if !set.ok {
			v.add(problem.Problem{Path: p.At(set.name), Summary: "Length set beside a trace", Reads: []attrpath.Path{tp.At("file")},
				Detail: fmt.Sprintf("%s: a trace workload takes every request's lengths and shared blocks from its trace file; remove %s (or remove trace to measure synthetic prompts).", p.At(set.name), set.name)})
		}
	}
	if w.TraceBlockTokens < 0 || w.TraceBlockTokens > MaxTokens {
		v.fail(tp.At("block_tokens"), "Value out of range", "must be between 1 and %d tokens when set (Mooncake's traces use 512)", MaxTokens)
		return
	}
	if w.TraceFile == UnknownTraceFile {
		return
	}
	if w.traceErr != nil {
		v.fail(tp.At("file"), "Unreadable trace", "cannot be replayed: %v. A trace is Mooncake JSONL: one object per line with timestamp (ms), input_length, output_length and optional hash_ids", w.traceErr)
		return
	}
	t := w.Trace
	if t == nil {
		return // not read yet (a caller that knows no file yet)
	}
	for _, r := range t.Requests {
		if r.InputTokens > MaxTokens || r.OutputTokens > MaxTokens {
			v.fail(tp.At("file"), "Trace length out of range", "%s line %d: input_length %d, output_length %d: each must be at most %d tokens", w.TraceFile, r.Line, r.InputTokens, r.OutputTokens, MaxTokens)
			return
		}
	}
	if t.Rate() == 0 {
		v.fail(tp.At("file"), "Trace without a clock", "%s: every request has the same timestamp, so there is no arrival process to replay or speed up; record at least two arrival times", w.TraceFile)
	}
	if nw := c.WarmupRequests; nw >= 0 && nw < len(t.Requests)-1 && t.Rate() > 0 && t.Requests[nw].Offset == t.Span() {
		v.add(problem.Problem{Path: tp.At("file"), Summary: "Trace without a clock", Reads: []attrpath.Path{attrpath.Root("trial").At("warmup_requests")},
			Detail: fmt.Sprintf("%s: after trial.warmup_requests (%d), every measured request has the same timestamp (line %d on), so the measured requests have no rate to keep up with; lower trial.warmup_requests or record more arrivals.",
				w.TraceFile, nw, t.Requests[nw].Line)})
	}
	if measured := len(t.Requests) - c.WarmupRequests; measured < minTraceMeasured {
		// Never a negative count: warmups that outnumber the trace leave nothing to measure.
		leaves := fmt.Sprintf("it leaves %d measured", measured)
		if measured <= 0 {
			leaves = fmt.Sprintf("they take the whole trace and more (%d warmups for %d requests), leaving none measured", c.WarmupRequests, len(t.Requests))
		}
		v.add(problem.Problem{Path: tp.At("file"), Summary: "Trace too short", Reads: []attrpath.Path{attrpath.Root("trial").At("warmup_requests")},
			Detail: fmt.Sprintf("%s has %d requests; after trial.warmup_requests (%d), the first requests replayed as warmups, %s, "+
				"and a replay needs at least %d for the backlog guard; use a longer trace or lower trial.warmup_requests.", w.TraceFile, len(t.Requests), c.WarmupRequests, leaves, minTraceMeasured)})
	}
}

// speedupProblems checks search.speedup and that it has traces to replay.
func (v *validation) speedupSearch(c Config) {
	sp := attrpath.Root("search").At("speedup")
	o := c.OpenLoop
	l := o.Ladder()
	switch {
	case !(l.Min >= MinSpeedup) || math.IsInf(l.Min, 0):
		v.fail(sp.At("min"), "Invalid speedup search", "must be a factor of at least %g (1 replays the trace as recorded, 0.5 half as fast), got %g", MinSpeedup, l.Min)
	case !(l.Tolerance > 0 && l.Tolerance < 1):
		v.fail(sp.At("tolerance"), "Invalid speedup search", "must be in (0, 1), the relative step between neighbouring speedups tried, got %g; remove it for the default %g", l.Tolerance, DefaultRateTolerance)
	case !(l.Max >= l.Min) || math.IsInf(l.Max, 0):
		v.add(problem.Problem{Path: sp.At("max"), Summary: "Invalid speedup search", Reads: []attrpath.Path{sp.At("min")},
			Detail: fmt.Sprintf("%s (%g) is below search.speedup.min (%g); raise max or lower min.", sp.At("max"), l.Max, l.Min)})
	default:
		if err := l.Validate(); err != nil {
			v.fail(sp.At("tolerance"), "Invalid speedup search", "%s", strings.ReplaceAll(strings.ReplaceAll(err.Error(), "rate search", "speedup search"), " requests/s", ""))
		}
	}
	if o.MaxInFlight != 0 || o.Arrival.Pattern != "" {
		v.fail(attrpath.Root("arrival"), "Arrival beside a replay", "search.speedup replays each trace's own arrivals; remove arrival")
	}
	for i, w := range c.Workloads {
		if p := attrpath.Root("workloads").Index(i); w.TraceFile == "" {
			v.add(problem.Problem{Path: p, Summary: "Workload without a trace", Reads: []attrpath.Path{p.At("trace").At("file")},
				Detail: fmt.Sprintf("%s: search.speedup replays recorded traffic faster or slower, and workloads[%d] (%q) has no trace: add trace = { file = \"…\" } to it, or measure it in a benchmark with search.rate or a concurrency search.", p, i, w.Label)})
		}
	}
	if len(c.ConcurrencyLevels) > 0 {
		v.fail(attrpath.Root("search").At("concurrency_levels"), "Two searches", "cannot be set with search.speedup: a benchmark searches concurrency, request rate or the speedup of a trace")
	}
}

// traceWithoutReplay refuses trace workloads in a search that does not replay them.
func (v *validation) traceWithoutReplay(c Config) {
	if c.OpenLoop != nil && c.OpenLoop.Speedup {
		return
	}
	for i, w := range c.Workloads {
		if w.TraceFile != "" {
			v.fail(attrpath.Root("workloads").Index(i).At("trace"), "Trace without a replay",
				"a trace workload is replayed at its recorded arrivals by a search over the speedup: add search = { speedup = { min = 0.5, max = 8 } } (and no search.rate or concurrency bounds), or remove trace")
		}
	}
}

// tracePhases are the prompts of one replay trial: the trace's first WarmupRequests requests
// are its warmups, the rest its measured requests, each fitted to its own input length. A
// hash_ids block is the same text wherever it appears (keyed by the workload and the id), so
// requests whose hash_ids begin alike begin with the same text and share that prefix; the
// tokens beyond a request's blocks are text of its own.
func (s *session) tracePhases(ctx context.Context, w Workload, stream string) (trialPhases, error) {
	t := w.Trace
	nw := min(s.cfg.WarmupRequests, len(t.Requests))
	var out trialPhases
	var err error
	if out.warmup, err = s.tracePrompts(ctx, w, stream+" warmup", t.Requests[:nw]); err != nil {
		return out, fmt.Errorf("warmup prompts: %w", err)
	}
	if out.measured, err = s.tracePrompts(ctx, w, stream+" measured", t.Requests[nw:]); err != nil {
		return out, fmt.Errorf("measured prompts: %w", err)
	}
	return out, nil
}

func (s *session) tracePrompts(ctx context.Context, w Workload, stream string, reqs []trace.Request) (trialPrompts, error) {
	out := trialPrompts{texts: make([]string, len(reqs)), maxTokens: make([]int, len(reqs))}
	block := w.blockTokens()
	for i, r := range reqs {
		var b strings.Builder
		used := 0
		for j, id := range r.HashIDs {
			n := min(block, r.InputTokens-j*block) // the last block may be cut short
			text, err := s.blocks.text(ctx, s.prompts, fmt.Sprintf("%s block %d/%d", w.Label, id, n), n)
			if err != nil {
				return out, fmt.Errorf("trace line %d, hash_ids[%d]: %w", r.Line, j, err)
			}
			b.WriteString(text)
			b.WriteString("\n")
			used += n
		}
		if own := r.InputTokens - used; own > 0 {
			p, cal, err := s.prompts.Prompts(ctx, fmt.Sprintf("%s #%d", stream, i), 1, own)
			if err != nil {
				return out, fmt.Errorf("trace line %d: %w", r.Line, err)
			}
			out.calibration = cal
			b.WriteString(p[0])
		}
		out.texts[i] = strings.TrimSuffix(b.String(), "\n")
		out.maxTokens[i] = r.OutputTokens
	}
	if out.calibration == (prompt.Calibration{}) {
		out.calibration = s.blocks.calibration()
	}
	return out, nil
}

// blockTexts are the texts of a run's hash_ids blocks, fitted once each.
type blockTexts struct {
	mu    sync.Mutex
	texts map[string]string
	cal   prompt.Calibration
}

func (b *blockTexts) text(ctx context.Context, g *prompt.Generator, key string, tokens int) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.texts[key]; ok {
		return t, nil
	}
	p, cal, err := g.Prompts(ctx, key, 1, tokens)
	if err != nil {
		return "", err
	}
	if b.texts == nil {
		b.texts = map[string]string{}
	}
	b.texts[key], b.cal = p[0], cal
	return p[0], nil
}

func (b *blockTexts) calibration() prompt.Calibration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cal
}

// sharedBlockTokens is the most tokens of any request's hash_ids blocks: what a prefix cache
// may rightly serve of a replayed prompt.
func sharedBlockTokens(w Workload) int {
	most := 0
	for _, r := range w.Trace.Requests {
		most = max(most, min(r.InputTokens, len(r.HashIDs)*w.blockTokens()))
	}
	return most
}

// traceRate is the request rate a replay of w's trace at speedup offers: the trace's mean
// rate, as recorded, times the speedup.
func traceRate(w Workload, speedup float64) float64 { return w.Trace.Rate() * speedup }
