package results

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Markdown renders the document for a pull request or a wiki page: the setup, a summary of
// the boundaries, and per workload a table of its confirmation trials.
func Markdown(d *Document) string {
	var b strings.Builder
	e := d.Experiment
	title := e.Model
	if title == "" {
		title = "LLM inference server"
	}
	fmt.Fprintf(&b, "# Capacity report: %s\n\n", mdText(title))
	objs := d.Objectives()
	fmt.Fprintf(&b, "SLO: %s in every confirmation trial.\n\n", mdText(SLOsSentence(objs)))

	b.WriteString("## Setup\n\n| | |\n|---|---|\n")
	row := func(k, v string) {
		if strings.TrimSpace(v) != "" {
			fmt.Fprintf(&b, "| %s | %s |\n", k, v)
		}
	}
	row("Model", joinNonEmpty(" @ ", mdCode(e.Model), mdCode(e.Checkpoint)))
	row("Image", joinNonEmpty(" ", mdCode(e.ImageTag), mdCode(e.ImageDigest)))
	row("Hardware", mdText(e.Hardware))
	row("Driver", mdText(e.Driver))
	row("Kernel", mdText(e.Kernel))
	if e.TensorParallelism > 0 {
		row("Tensor parallelism", strconv.Itoa(e.TensorParallelism))
	}
	if e.ContextLength > 0 {
		row("Context length", fmt.Sprintf("%d tokens (physical token pool %s)", e.ContextLength, tokenPool(e.PhysicalTokenPool)))
	}
	if s := e.SpeculativeMode; s != nil {
		row("Speculative decoding", fmt.Sprintf("%s, %d steps, top-k %d, %d draft tokens", mdText(s.Algorithm), s.Steps, s.TopK, s.DraftTokens))
	} else {
		row("Speculative decoding", "off")
	}
	p := d.AIPerf
	row("Load generator version", mdText(p.Version))
	var load []string
	if p.ArrivalPattern != "" {
		load = append(load, mdText(p.ArrivalPattern))
	}
	if p.Streaming {
		load = append(load, "streaming")
	}
	load = append(load, "temperature "+formatFloat(p.Temperature))
	if p.IgnoreEOS {
		load = append(load, "ignore_eos")
	}
	if p.ServerTokenCount {
		load = append(load, "token counts from the server")
	}
	row("Load", strings.Join(load, ", "))
	row("Trials", fmt.Sprintf("%d warmup + %d measured requests per trial, %d confirmation trials per boundary side",
		p.WarmupsPerTrial, p.MeasuredRequestsPerTrial, p.IndependentTrialsPerBoundarySide))
	row("Cache", mdText(p.CachePolicy))
	b.WriteString("\n")

	b.WriteString("## Summary\n\n| Workload | ISL / OSL | Maximum passing concurrency | First failing concurrency | Bound by |\n|---|---:|---:|---:|---|\n")
	for _, w := range d.Workloads {
		fmt.Fprintf(&b, "| %s | %d / %d | %s | %s | %s |\n", mdText(w.Label), w.ConfiguredISL, w.ConfiguredOSL,
			capacityText(w, "none (even the lowest failed)"),
			firstFailingText(w, "none within the bounds"), mdText(boundByText(objs, w)))
	}
	b.WriteString("\n")
	writeCosts(&b, d)

	for _, w := range d.Workloads {
		fmt.Fprintf(&b, "## %s\n\n", mdText(w.Label))
		fmt.Fprintf(&b, "%d input / %d output tokens configured", w.ConfiguredISL, w.ConfiguredOSL)
		if w.ServerPromptTokens.Max > 0 {
			fmt.Fprintf(&b, " (%s–%s prompt tokens as the server counted them)", formatFloat(w.ServerPromptTokens.Min), formatFloat(w.ServerPromptTokens.Max))
		}
		fmt.Fprintf(&b, ". Maximum passing concurrency **%s**, first failing **%s**", capacityText(w, "none"), boundaryText(w.FirstFailingConcurrency, "none"))
		if by := boundByText(objs, w); by != "–" {
			fmt.Fprintf(&b, ", bound by %s", mdText(by))
		}
		b.WriteString(".\n\n")
		// Notes change how the numbers read (a ceiling is not a capacity), so they come first.
		for _, n := range w.Notes {
			fmt.Fprintf(&b, "> **Note:** %s\n", mdText(n))
		}
		if len(w.Notes) > 0 {
			b.WriteString("\n")
		}
		trials := w.Trials()
		if len(trials) == 0 {
			b.WriteString("No confirmation trials recorded.\n\n")
			continue
		}
		b.WriteString("| Side | Concurrency | Trial | TTFT p50 (ms) | TTFT p95 (ms) | TTFT p99 (ms) | ITL p50 (ms) | Output (tok/s) | Per-user avg (tok/s) | Verdict |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
		for _, st := range trials {
			t := st.Trial
			verdict := verdictText(objs, t)
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |\n",
				st.Side, concurrencyText(st.Concurrency), t.Trial,
				fixed(t.TTFTMs.P50, 1), fixed(t.TTFTMs.P95, 1), fixed(t.TTFTMs.P99, 1), fixed(t.ITLMs.P50, 2),
				fixed(t.OutputThroughputTPS, 1), fixed(t.PerUserOutputThroughputTPS.Avg, 1), mdText(verdict))
		}
		b.WriteString("\n")
		writeServerView(&b, trials)
		writeAccelerators(&b, trials)
	}

	c := d.CorrectnessTotal
	b.WriteString("## Correctness\n\n")
	fmt.Fprintf(&b, "%d measured requests (%d HTTP 200), %d errors, %d cancelled trials, %s output length mismatches, "+
		"%d warmup/profile prompt overlaps, %d unique prompts and %d unique outputs",
		c.ProfilingRecords, c.HTTP200, c.Errors, boolCount(c.Cancelled), formatFloat(c.OutputLengthMismatches),
		c.WarmupProfilePromptOverlap, c.UniquePrompts, c.UniqueOutputs)
	if c.UniquenessScope != "" {
		fmt.Fprintf(&b, " (%s)", mdText(strings.ReplaceAll(c.UniquenessScope, "_", " ")))
	}
	b.WriteString(".\n")
	return b.String()
}

// verdictText is the verdict cell: a fail names each objective the trial missed with its
// value (not whichever objective a column happens to lack), an error how many requests
// failed, and a pass the value of any objective no column shows.
func verdictText(objs []SLO, t Trial) string {
	// Values the table's columns already show.
	shown := func(s SLO) bool {
		return s.Metric == MetricTTFT && (s.Percentile == 50 || s.Percentile == 95 || s.Percentile == 99) ||
			s.Metric == MetricITL && s.Percentile == 50
	}
	var missed, extra []string
	for _, s := range objs {
		met, known := s.Met(t)
		v, err := s.Value(t)
		lead := s.MetricShort()
		if !s.Info().PerTrial {
			lead = "p" + formatFloat(s.Percentile) + " " + lead
		}
		switch {
		case known && !met && err == nil:
			missed = append(missed, fmt.Sprintf("%s %s %s, not %s %s %s", lead, fixed(v, 1), s.Unit(), words[s.Comparison], formatFloat(s.ThresholdMs), s.Unit()))
		case known && !met:
			missed = append(missed, lead+" missed")
		case err == nil && !shown(s):
			extra = append(extra, fmt.Sprintf("%s %s %s", lead, fixed(v, 1), s.Unit()))
		}
	}
	verdict := Verdict(objs, t)
	switch verdict {
	case VerdictFail:
		if len(missed) > 0 {
			return "fail: " + strings.Join(missed, "; ")
		}
	case VerdictError:
		out := fmt.Sprintf("error: %d of %d requests failed", t.Correctness.Errors, t.Correctness.ProfilingRecords)
		if len(missed) > 0 {
			out += "; " + strings.Join(missed, "; ")
		}
		return out
	}
	if len(extra) > 0 {
		verdict += " (" + strings.Join(extra, ", ") + ")"
	}
	return verdict
}

// capacityText is the maximum passing concurrency (or request rate, for a search by rate) as
// a reader should take it: "≥ N" when every level tried passed (the search's ceiling, not the
// capacity), "none, below N" when even the lowest failed.
func capacityText(w Workload, none string) string {
	mp, ff := boundaryText(w.MaximumPassingConcurrency, none), boundaryText(w.FirstFailingConcurrency, none)
	if w.MaximumPassingRequestRate != nil || w.FirstFailingRequestRate != nil {
		mp, ff = openText(w.MaximumPassingRequestRate, w.MaximumPassingSpeedup, none), openText(w.FirstFailingRequestRate, w.FirstFailingSpeedup, none)
	}
	switch w.SearchBound() {
	case BoundCeiling:
		return "≥ " + mp
	case BoundFloor:
		return none + ", below " + ff
	}
	return mp
}

// firstFailingText is the first failing concurrency, or request rate for a search by rate.
func firstFailingText(w Workload, none string) string {
	if w.MaximumPassingRequestRate != nil || w.FirstFailingRequestRate != nil {
		return openText(w.FirstFailingRequestRate, w.FirstFailingSpeedup, none)
	}
	return boundaryText(w.FirstFailingConcurrency, none)
}

// openText is a rate boundary, with a replay's speedup first: "speedup 1.5 (7.5 requests/s)".
func openText(rate, speedup *float64, none string) string {
	if rate != nil && speedup != nil {
		return "speedup " + formatFloat(*speedup) + " (" + rateText(rate, none) + ")"
	}
	return rateText(rate, none)
}

func rateText(r *float64, none string) string {
	if r == nil {
		return none
	}
	return formatFloat(*r) + " requests/s"
}

// boundByText names what failed the first failing level: bound_by, or for documents older
// than it the objectives its confirmation trials missed, derived from them.
func boundByText(objs []SLO, w Workload) string {
	by := w.BoundBy
	if len(by) == 0 {
		if h, err := DeriveHeadline(objs, w); err == nil {
			by = h.BoundBy
		}
	}
	if len(by) == 0 {
		return "–"
	}
	out := make([]string, len(by))
	for i, k := range by {
		out[i] = k
		for _, s := range objs {
			if s.Key() == k {
				out[i] = strings.TrimSuffix(s.String(), " "+symbols[s.Comparison]+" "+formatFloat(s.ThresholdMs)+" "+s.Unit())
			}
		}
	}
	return strings.Join(out, ", ")
}

func boundaryText(c *int, none string) string {
	if c == nil {
		return none
	}
	return strconv.Itoa(*c)
}

func concurrencyText(c int) string {
	if c == 0 {
		return "?"
	}
	return strconv.Itoa(c)
}

func boolCount(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fixed rounds for reading; the CSV and OpenMetrics renderings keep every digit.
// Beyond 1e15 it switches to an exponent rather than write hundreds of digits.
func fixed(v float64, decimals int) string {
	if math.Abs(v) >= 1e15 {
		return strconv.FormatFloat(v, 'g', 6, 64)
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// mdText keeps free text from breaking a table row or starting markup.
func mdText(s string) string {
	r := strings.NewReplacer("|", `\|`, "*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;", ">", "&gt;")
	return r.Replace(noControl(s))
}

// noControl turns every control character (line breaks, tabs, escape sequences, bidi
// overrides and other format characters) into a space: a label must not reach a terminal
// or a rendered page as anything but text.
func noControl(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return ' '
		}
		return r
	}, s)
}

// mdCode shows identifiers (model, digest) as code; an empty value stays empty.
func mdCode(s string) string {
	if s == "" {
		return ""
	}
	s = strings.NewReplacer("|", `\|`).Replace(noControl(s))
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

func joinNonEmpty(sep string, parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, sep)
}

// tokenPool shows a KV pool size, or says the server did not report one.
func tokenPool(p *int) string {
	if p == nil {
		return "not reported"
	}
	return strconv.Itoa(*p)
}

// writeServerView renders what the engine itself saw in each trial (its metrics) and the
// proof that the cache was cold, beside the client's table, when the document has them.
func writeServerView(b *strings.Builder, trials []SideTrial) {
	present := false
	for _, st := range trials {
		present = present || st.Trial.Server != nil || st.Trial.Correctness.CachedPromptTokens != nil || len(st.Trial.Notes) > 0
	}
	if !present {
		return
	}
	b.WriteString("Server-side view (the engine's own metrics during each trial):\n\n")
	b.WriteString("| Side | Concurrency | Trial | Server TTFT p50 / p95 (ms) | Server latency p50 / p95 (ms) | Queue p95 (ms) | Peak running | Peak queued | Peak KV use | Cached prompt tokens |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	dash := "–"
	lat := func(l *ServerLatency, both bool) string {
		switch {
		case l == nil:
			return dash
		case both:
			return fixed(l.P50, 1) + " / " + fixed(l.P95, 1)
		}
		return fixed(l.P95, 1)
	}
	num := func(f *float64, pct bool) string {
		switch {
		case f == nil:
			return dash
		case pct:
			return fixed(*f*100, 1) + " %"
		}
		return fixed(*f, 0)
	}
	for _, st := range trials {
		t := st.Trial
		sv := t.Server
		if sv == nil {
			sv = &ServerView{}
		}
		cached := dash
		if c := t.Correctness.CachedPromptTokens; c != nil {
			cached = "not reported"
			if c.Known {
				cached = strconv.Itoa(c.Tokens)
			}
		}
		fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |\n",
			st.Side, concurrencyText(st.Concurrency), t.Trial, lat(sv.TTFTMs, true), lat(sv.RequestLatencyMs, true), lat(sv.QueueTimeMs, false),
			num(sv.PeakRunningRequests, false), num(sv.PeakQueuedRequests, false), num(sv.PeakKVCacheUsage, true), cached)
	}
	b.WriteString("\n")
	notes := false
	for _, st := range trials {
		for _, n := range st.Trial.Notes {
			fmt.Fprintf(b, "> **Note** (%s trial %d at concurrency %s): %s\n", st.Side, st.Trial.Trial, concurrencyText(st.Concurrency), mdText(n))
			notes = true
		}
	}
	if notes {
		b.WriteString("\n")
	}
}
