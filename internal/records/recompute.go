package records

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/localfile"
	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// Recomputed is one trial's metrics recomputed from its records file, beside what the
// document reported.
type Recomputed struct {
	Workload   string
	File       string
	Reported   results.Trial
	Recomputed results.Trial
	// Differences lists every recomputable value that differs, as "path: reported vs
	// recomputed"; empty when the file reproduces the document exactly.
	Differences []string
}

// NotDerivable is the one trial metric a records file cannot reproduce: connection set-up
// is measured per request (httptrace) and reported per trial, but connect and TLS times are
// not records keys. Recompute leaves it out of the recomputed trial, and Diff out of the
// comparison.
const NotDerivable = "connection_setup_ms"

// Recompute reads every trial of doc that names a records file under dir, checks the file's
// SHA-256, and recomputes the trial's metrics as the benchmark did. What a records file
// cannot give (prompt text and output bytes: unique_prompts, warmup/profile overlap,
// generated_utf8_bytes; unique_outputs and degenerate_outputs in files from before outputs
// were recorded; time to second token without
// record_chunk_times; output length mismatches when output lengths are spread) is taken
// from the document and not compared; connection_setup_ms (NotDerivable) is left out.
func Recompute(doc *results.Document, dir string) ([]Recomputed, error) {
	return recompute(doc, dir, false)
}

// recompute is Recompute; with skipMissing, a trial whose records file does not exist is
// left out rather than an error.
func recompute(doc *results.Document, dir string, skipMissing bool) ([]Recomputed, error) {
	var out []Recomputed
	for _, w := range doc.Workloads {
		for _, t := range w.AllTrials {
			if t.RecordsFile == "" {
				continue
			}
			path, err := Path(dir, t.RecordsFile)
			if skipMissing && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return out, fmt.Errorf("workload %q %s trial %d at %s: %w", w.Label, t.Kind, t.Trial, level(t), err)
			}
			lines, sum, err := Read(path)
			if skipMissing && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return out, fmt.Errorf("workload %q %s trial %d at %s: records_file %q: %w", w.Label, t.Kind, t.Trial, level(t), t.RecordsFile, err)
			}
			if t.RecordsSHA256 != "" && sum != t.RecordsSHA256 {
				return out, fmt.Errorf("workload %q %s trial %d at %s: %s has SHA-256 %s, the document says %s: the file was changed or is not this run's",
					w.Label, t.Kind, t.Trial, level(t), path, sum, t.RecordsSHA256)
			}
			got, err := recomputeTrial(doc.Objectives(), w.ConfiguredOSL, t, lines)
			if w.OutputTokensStddev > 0 || w.TraceFile != "" {
				// Each request asked for its own max_tokens (spread, or a trace's), which
				// records do not hold: mismatches against it come from the document.
				got.Correctness.OutputLengthMismatches, got.ErrorSummary = t.Correctness.OutputLengthMismatches, t.ErrorSummary
			}
			if err != nil {
				return out, fmt.Errorf("workload %q %s trial %d at %s: %w", w.Label, t.Kind, t.Trial, level(t), err)
			}
			diffs := append(Diff(t, got), podsDiff(t, lines)...)
			out = append(out, Recomputed{Workload: w.Label, File: t.RecordsFile, Reported: t, Recomputed: got, Differences: diffs})
		}
	}
	return out, nil
}

// podsDiff compares a trial's spread over pods with its records: every line of a spread trial
// names a pod of it, and no pod recorded more measured requests than its share held; a trial
// of one generator has no line that names a pod.
func podsDiff(t results.Trial, lines []Line) []string {
	pt := t.Pods
	measured := map[int]int{}
	for _, l := range lines {
		switch {
		case l.Pod == nil && pt != nil:
			return []string{fmt.Sprintf("pods: the trial was spread over %d pods, but a record names none", pt.Pods)}
		case l.Pod == nil:
			continue
		case pt == nil:
			return []string{fmt.Sprintf("pods: a record names pod %d, but the document spreads the trial over none", *l.Pod)}
		case *l.Pod < 0 || *l.Pod >= len(pt.Shares):
			return []string{fmt.Sprintf("pods: a record names pod %d of a trial over %d", *l.Pod, len(pt.Shares))}
		case l.Kind == KindMeasured:
			measured[*l.Pod]++
		}
	}
	var out []string
	if pt != nil {
		for p, sh := range pt.Shares {
			if measured[p] > sh.MeasuredRequests {
				out = append(out, fmt.Sprintf("pods.shares[%d].measured_requests: %d vs %d recorded", p, sh.MeasuredRequests, measured[p]))
			}
		}
	}
	return out
}

// Path is the file a trial's records_file names under dir (localfile.Within: a local name
// whose resolved path stays inside dir). A refusal names the field: records_file "../x" is not
// a relative path inside the directory.
func Path(dir, recordsFile string) (string, error) {
	p, err := localfile.Within(dir, recordsFile)
	switch {
	case localfile.IsRefused(err): // the error names the file itself
		return "", fmt.Errorf("records_file %w", err)
	case err != nil:
		return "", fmt.Errorf("records_file %q: %w", recordsFile, err)
	}
	return p, nil
}

// CheckFiles looks at every records file doc names under dir without reading one: each must
// be inside dir and, where it exists, a regular file within File's bound. A missing file is
// not an error (a comparison falls back on the spread of repeated trials); a refused one is,
// naming the workload, the trial and its records_file.
func CheckFiles(doc *results.Document, dir string) error {
	for _, w := range doc.Workloads {
		for _, t := range w.AllTrials {
			if t.RecordsFile == "" {
				continue
			}
			p, err := Path(dir, t.RecordsFile)
			if err == nil {
				if err = localfile.Check(p, File); err != nil {
					err = fmt.Errorf("records_file %q: %w", t.RecordsFile, err)
				}
			}
			if localfile.IsRefused(err) {
				return fmt.Errorf("workload %q %s trial %d at %s: %w", w.Label, t.Kind, t.Trial, level(t), err)
			}
		}
	}
	return nil
}

// level names where a trial ran, for messages: "concurrency 4", "2.5 requests/s" or
// "speedup 1.5 (2.5 requests/s)".
func level(t results.Trial) string {
	switch {
	case t.Speedup > 0:
		return fmt.Sprintf("speedup %.4g (%.4g requests/s)", t.Speedup, t.RequestRate)
	case t.RequestRate > 0:
		return fmt.Sprintf("%.4g requests/s", t.RequestRate)
	}
	return fmt.Sprintf("concurrency %d", t.Concurrency)
}

// recomputeTrial judges a trial's records as the benchmark judged them (metrics.Judge), then
// takes from the document what its records file cannot give: the trial's identity, the
// prompt-side counts, the cache check, time to second token without chunk times, and the
// verdict of a trial stopped early (decided by what was in flight then, which a file does
// not hold) or one the document reports no SLO results for.
func recomputeTrial(slos []results.SLO, osl int, reported results.Trial, lines []Line) (results.Trial, error) {
	recs := make([]load.RequestResult, len(lines))
	chunkTimes, outputs := false, true
	for i, l := range lines {
		recs[i] = l.RequestResult()
		chunkTimes = chunkTimes || l.ChunkOffsetsNs != nil
		outputs = outputs && l.OutputRecorded()
	}
	verdictReported := reported.StoppedEarly || len(reported.SLOs) == 0
	run := metrics.TrialRun{Records: recs, SLOs: slos, RequestedOSL: osl, Confirmation: reported.Kind == confirmation,
		Stopped: reported.StoppedEarly, WaitedOut: verdictReported}
	if o := reported.OpenLoop; o != nil {
		run.OpenLoop = &metrics.OpenLoopRun{Arrival: o.Arrival, Rate: reported.RequestRate}
	}
	j, err := metrics.Judge(run)
	t := j.Trial
	if err != nil {
		return t, err
	}
	// Identity and what a file cannot hold come from the document.
	t.Trial, t.Concurrency, t.Kind, t.Verdict, t.StoppedEarly = reported.Trial, reported.Concurrency, reported.Kind, reported.Verdict, reported.StoppedEarly
	if reported.OpenLoop != nil {
		t.RequestRate, t.Speedup = reported.RequestRate, reported.Speedup
	}
	t.RecordsFile, t.RecordsSHA256 = reported.RecordsFile, reported.RecordsSHA256
	if reported.Users > 0 {
		t.Users = reported.Users
		if rc := reported.Conversations; rc != nil {
			c := metrics.Conversations(recs, 0, 0)
			// The first turns' allowance needs the prompt calibration, which the file does
			// not hold: the proof's count is the document's, like the cold-cache check's.
			c.TurnsCachedBeyondHistory = rc.TurnsCachedBeyondHistory
			t.Conversations = &c
		}
	}
	c, rc := &t.Correctness, reported.Correctness
	c.UniqueWarmupPrompts, c.UniquePrompts, c.WarmupProfilePromptOverlap = rc.UniqueWarmupPrompts, rc.UniquePrompts, rc.WarmupProfilePromptOverlap
	c.GeneratedUTF8Bytes = rc.GeneratedUTF8Bytes
	if !outputs {
		// A file from before outputs were recorded: no output hashes, code points or heads.
		c.UniqueOutputs, c.DegenerateOutputs = rc.UniqueOutputs, rc.DegenerateOutputs
	}
	// The cache check needs the prompt calibration; the per-request counts are in the file.
	c.CachedPromptTokens, c.RequestsCachedBeyondSharedPrefix = rc.CachedPromptTokens, rc.RequestsCachedBeyondSharedPrefix
	if !chunkTimes {
		t.TTSTMs = reported.TTSTMs
	}
	t.ConnectionSetupMs = nil // NotDerivable
	if verdictReported {
		t.SLOs, t.GoodputPercent = reported.SLOs, reported.GoodputPercent
	}
	return t, nil
}

// confirmation is results.Trial.Kind of a confirmation trial (search.Confirmation's name).
const confirmation = "confirmation"

// Diff lists the recomputable values of two trials that differ, exactly (no tolerance: a
// records file reproduces the numbers bit for bit). NotDerivable is not compared.
func Diff(a, b results.Trial) []string {
	var out []string
	num := func(name string, x, y float64) {
		if x != y {
			out = append(out, fmt.Sprintf("%s: %v vs %v", name, x, y))
		}
	}
	stats := func(name string, x, y *results.Stats) {
		switch {
		case x == nil && y == nil:
			return
		case x == nil || y == nil:
			out = append(out, name+": present in only one")
			return
		}
		xv, yv := statValues(*x), statValues(*y)
		for i, k := range results.StatKeys {
			num(name+"."+k, xv[i], yv[i])
		}
	}
	stats("ttft_ms", &a.TTFTMs, &b.TTFTMs)
	stats("request_latency_ms", &a.RequestLatencyMs, &b.RequestLatencyMs)
	stats("itl_ms", &a.ITLMs, &b.ITLMs)
	stats("per_user_output_throughput_tps", &a.PerUserOutputThroughputTPS, &b.PerUserOutputThroughputTPS)
	stats("ttst_ms", a.TTSTMs, b.TTSTMs)
	stats("inter_chunk_latency_ms", a.InterChunkLatencyMs, b.InterChunkLatencyMs)
	num("output_throughput_tps", a.OutputThroughputTPS, b.OutputThroughputTPS)
	num("request_throughput_rps", a.RequestThroughputRPS, b.RequestThroughputRPS)
	num("benchmark_duration_s", a.BenchmarkDurationS, b.BenchmarkDurationS)
	num("server_prompt_tokens.min", a.ServerPromptTokens.Min, b.ServerPromptTokens.Min)
	num("server_prompt_tokens.max", a.ServerPromptTokens.Max, b.ServerPromptTokens.Max)
	num("server_completion_tokens.min", a.ServerCompletionTokens.Min, b.ServerCompletionTokens.Min)
	num("server_completion_tokens.max", a.ServerCompletionTokens.Max, b.ServerCompletionTokens.Max)
	ac, bc := a.Correctness, b.Correctness
	ad, bd := ac.DegenerateOutputs, bc.DegenerateOutputs
	ac.DegenerateOutputs, bc.DegenerateOutputs = nil, nil
	if ac != bc {
		out = append(out, fmt.Sprintf("correctness: %+v vs %+v", a.Correctness, b.Correctness))
	}
	if (ad == nil) != (bd == nil) || ad != nil && *ad != *bd {
		out = append(out, fmt.Sprintf("correctness.degenerate_outputs: %+v vs %+v", fmtDegenerate(ad), fmtDegenerate(bd)))
	}
	if (a.GoodputPercent == nil) != (b.GoodputPercent == nil) || a.GoodputPercent != nil && *a.GoodputPercent != *b.GoodputPercent {
		out = append(out, fmt.Sprintf("goodput_percent: %v vs %v", fmtPtr(a.GoodputPercent), fmtPtr(b.GoodputPercent)))
	}
	if fmt.Sprint(a.ErrorSummary) != fmt.Sprint(b.ErrorSummary) {
		out = append(out, fmt.Sprintf("error_summary: %+v vs %+v", a.ErrorSummary, b.ErrorSummary))
	}
	if (a.OpenLoop == nil) != (b.OpenLoop == nil) || a.OpenLoop != nil && fmt.Sprint(*a.OpenLoop) != fmt.Sprint(*b.OpenLoop) {
		out = append(out, fmt.Sprintf("open_loop: %+v vs %+v", a.OpenLoop, b.OpenLoop))
	}
	if fmt.Sprint(a.SLOs) != fmt.Sprint(b.SLOs) {
		out = append(out, fmt.Sprintf("slos: %+v vs %+v", a.SLOs, b.SLOs))
	}
	return out
}

func fmtDegenerate(d *results.DegenerateOutputs) any {
	if d == nil {
		return nil
	}
	return *d
}

func fmtPtr(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func statValues(s results.Stats) []float64 {
	return []float64{s.Avg, s.Min, s.Max, s.Std, s.P1, s.P5, s.P10, s.P25, s.P50, s.P75, s.P90, s.P95, s.P99}
}
