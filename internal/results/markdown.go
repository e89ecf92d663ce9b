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
		// The server's context for one request: llama.cpp divides its --ctx-size among its
		// slots, so this is a slot's share there, not the whole configured context.
		row("Context length", fmt.Sprintf("%d tokens per request (per slot); physical token pool %s", e.ContextLength, tokenPool(e.PhysicalTokenPool)))
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
	if p.EngineWarmupRequests > 0 {
		row("Engine warm-up", fmt.Sprintf("%d requests before each workload's first trial", p.EngineWarmupRequests))
	}
	row("Cache", mdText(p.CachePolicy))
	row("Load ran", loadRanText(d.Runner, p.Version))
	b.WriteString("\n")

	// One axis for every workload names the columns; workloads searched along different axes
	// say theirs in each cell.
	level := "level"
	if a := documentAxis(d); a != nil {
		level = a.Name()
	}
	fmt.Fprintf(&b, "## Summary\n\n| Workload | ISL / OSL | Maximum passing %s | First failing %s | Bound by |\n|---|---:|---:|---:|---|\n", level, level)
	for _, w := range d.Workloads {
		fmt.Fprintf(&b, "| %s | %d / %d | %s | %s | %s |\n", mdText(w.Label), w.ConfiguredISL, w.ConfiguredOSL,
			capacityText(w, "none (even the lowest failed)"),
			firstFailingText(w, "none within the bounds"), mdText(boundByText(objs, w)))
	}
	b.WriteString("\n")
	writeCosts(&b, d)

	for _, w := range d.Workloads {
		ax := w.Axis()
		fmt.Fprintf(&b, "## %s\n\n", mdText(w.Label))
		if w.TraceFile != "" || w.TraceSHA256 != "" {
			// A replay sends the trace's own lengths: its figures are the trace's means.
			trace := mdCode(w.TraceFile)
			if trace == "" {
				trace = "sha256 " + mdCode(w.TraceSHA256)
			}
			fmt.Fprintf(&b, "Replay of the recorded trace %s: %d input / %d output tokens per request on average", trace, w.ConfiguredISL, w.ConfiguredOSL)
			if m := traceMeanRate(w); m > 0 {
				fmt.Fprintf(&b, ", %s requests/s as recorded", significant(m, 3))
			}
		} else {
			fmt.Fprintf(&b, "%d input / %d output tokens configured", w.ConfiguredISL, w.ConfiguredOSL)
		}
		if w.ServerPromptTokens.Max > 0 {
			fmt.Fprintf(&b, " (%s–%s prompt tokens as the server counted them)", formatFloat(w.ServerPromptTokens.Min), formatFloat(w.ServerPromptTokens.Max))
		}
		fmt.Fprintf(&b, ". Maximum passing %s **%s**, first failing **%s**", ax.Name(), capacityText(w, "none"), firstFailingText(w, "none"))
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
		// An open-loop trial also shows the rate it offered and the rate the server completed:
		// the guard that says whether it kept up.
		openLoop := false
		for _, st := range trials {
			openLoop = openLoop || st.Trial.OpenLoop != nil
		}
		kept, keptRule := "", ""
		if openLoop {
			kept, keptRule = " Offered / completed (requests/s) |", "---:|"
		}
		fmt.Fprintf(&b, "| Side | %s | Trial |%s TTFT p50 (ms) | TTFT p95 (ms) | TTFT p99 (ms) | ITL p50 (ms) | Output (tok/s) | Per-user avg (tok/s) | Verdict |\n", ax.Column(), kept)
		fmt.Fprintf(&b, "|---|---:|---:|%s---:|---:|---:|---:|---:|---:|---|\n", keptRule)
		for _, st := range trials {
			t := st.Trial
			verdict := verdictText(objs, t)
			if openLoop {
				kept = " – |"
				if o := t.OpenLoop; o != nil {
					kept = " " + significant(o.OfferedRate, 3) + " / " + significant(o.CompletionRate, 3) + " |"
				}
			}
			fmt.Fprintf(&b, "| %s | %s | %d |%s %s | %s | %s | %s | %s | %s | %s |\n",
				st.Side, levelCell(ax, st), t.Trial, kept,
				fixed(t.TTFTMs.P50, 1), fixed(t.TTFTMs.P95, 1), fixed(t.TTFTMs.P99, 1), fixed(t.ITLMs.P50, 2),
				fixed(t.OutputThroughputTPS, 1), fixed(t.PerUserOutputThroughputTPS.Avg, 1), mdText(verdict))
		}
		b.WriteString("\n")
		writeDisagreements(&b, w)
		writeHostLoad(&b, w)
		writeConversations(&b, ax, trials)
		writeServerView(&b, ax, trials)
		writeAccelerators(&b, ax, trials)
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
	// An open-loop trial that met every objective fails when the server did not keep up
	// with its rate: say which guard, with its figures, not "met".
	missed = append(missed, t.OpenLoop.MissedGuards()...)
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

// capacityText is the maximum passing level along the workload's axis as a reader should
// take it: "≥ N" when every level tried passed (the search's ceiling, not the capacity),
// "none, below N" when even the lowest failed.
func capacityText(w Workload, none string) string {
	ax := w.Axis()
	mp, ff := ax.Boundary()
	switch w.SearchBound() {
	case BoundCeiling:
		return "≥ " + levelText(ax, mp, none)
	case BoundFloor:
		return none + ", below " + levelText(ax, ff, none)
	}
	return levelText(ax, mp, none)
}

// firstFailingText is the first failing level along the workload's axis.
func firstFailingText(w Workload, none string) string {
	ax := w.Axis()
	_, ff := ax.Boundary()
	return levelText(ax, ff, none)
}

func levelText(ax Axis, v *float64, none string) string {
	if v == nil {
		return none
	}
	return ax.Text(*v)
}

// levelTextOf is a trial's level with its unit, "?" when it does not say.
func levelTextOf(ax Axis, st SideTrial) string {
	if v, ok := ax.Level(st); ok {
		return ax.Text(v)
	}
	return "?"
}

// levelCell is a trial's level in a table under the axis' column, "?" when it does not say.
func levelCell(ax Axis, st SideTrial) string {
	if v, ok := ax.Level(st); ok {
		return ax.Cell(v)
	}
	return "?"
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
		if g := guardName(k); g != "" {
			out[i] = g
		}
		for _, s := range objs {
			if s.Key() == k {
				out[i] = strings.TrimSuffix(s.String(), " "+symbols[s.Comparison]+" "+formatFloat(s.ThresholdMs)+" "+s.Unit())
			}
		}
	}
	return strings.Join(out, ", ")
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
// writeConversations is a users trial's conversations: first and later turns' TTFT apart
// (later turns should find their history cached), the requests in flight, the longest
// context reached and the warm-cache proof. Nothing for other trials.
func writeConversations(b *strings.Builder, ax Axis, trials []SideTrial) {
	present := false
	for _, st := range trials {
		present = present || st.Trial.Conversations != nil
	}
	if !present {
		return
	}
	b.WriteString("Conversations (users holding multi-turn conversations with think time):\n\n")
	fmt.Fprintf(b, "| Side | %s | Trial | Users | Measured turns (first) | First-turn TTFT p50 / p95 (ms) | Later-turn TTFT p50 / p95 (ms) | Later-turn prompt cached | In flight mean / peak | Longest context (tokens) | Turns cached beyond their history |\n", ax.Column())
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, st := range trials {
		c := st.Trial.Conversations
		if c == nil {
			continue
		}
		cached := "not reported"
		if p := c.LaterTurnCachedPercent; p != nil {
			cached = fixed(*p, 1) + " %"
		}
		fmt.Fprintf(b, "| %s | %s | %d | %d | %d (%d) | %s / %s | %s / %s | %s | %s / %d | %d | %d |\n",
			st.Side, levelCell(ax, st), st.Trial.Trial, st.Trial.Users, c.MeasuredTurns, c.FirstTurns,
			fixed(c.FirstTurnTTFTP50Ms, 1), fixed(c.FirstTurnTTFTP95Ms, 1), fixed(c.LaterTurnTTFTP50Ms, 1), fixed(c.LaterTurnTTFTP95Ms, 1),
			cached, fixed(c.InFlightMean, 2), c.InFlightPeak, c.ContextTokensMax, c.TurnsCachedBeyondHistory)
	}
	b.WriteString("\n")
}

func writeServerView(b *strings.Builder, ax Axis, trials []SideTrial) {
	present := false
	for _, st := range trials {
		present = present || st.Trial.Server != nil || st.Trial.Correctness.CachedPromptTokens != nil || len(st.Trial.Notes) > 0
	}
	if !present {
		return
	}
	b.WriteString("Server-side view (the engine's own metrics during each trial):\n\n")
	fmt.Fprintf(b, "| Side | %s | Trial | Server TTFT p50 / p95 (ms) | Server latency p50 / p95 (ms) | Queue p95 (ms) | Peak running | Peak queued | Peak KV use | Cached prompt tokens |\n", ax.Column())
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
			st.Side, levelCell(ax, st), t.Trial, lat(sv.TTFTMs, true), lat(sv.RequestLatencyMs, true), lat(sv.QueueTimeMs, false),
			num(sv.PeakRunningRequests, false), num(sv.PeakQueuedRequests, false), num(sv.PeakKVCacheUsage, true), cached)
	}
	b.WriteString("\n")
	notes := false
	for _, st := range trials {
		for _, n := range st.Trial.Notes {
			fmt.Fprintf(b, "> **Note** (%s trial %d at %s %s): %s\n", st.Side, st.Trial.Trial, ax.Name(), levelTextOf(ax, st), mdText(n))
			notes = true
		}
	}
	if notes {
		b.WriteString("\n")
	}
}

// loadRanText says where the load ran: the Terraform process unless a runner carried it;
// nothing for another tool's document, which does not say.
func loadRanText(r *Runner, version string) string {
	if r == nil {
		if strings.HasPrefix(version, "terraform-provider-llmserve") {
			return "in the Terraform process"
		}
		return ""
	}
	where := mdText(r.Kind) + " runner"
	if r.Host != "" {
		where += " on " + mdCode(r.Host)
	}
	if r.Network != "" {
		where += ", network " + mdCode(r.Network)
	}
	return where
}

// writeDisagreements lists the levels whose confirmation trials disagreed beyond their size.
func writeDisagreements(b *strings.Builder, w Workload) {
	if len(w.TrialDisagreements) == 0 {
		return
	}
	b.WriteString("Confirmation trials that disagree beyond their size (noise: measure again on a quieter host before gating):\n\n")
	for _, d := range w.TrialDisagreements {
		fmt.Fprintf(b, "- at %s, %s: %s in trial %d but %s in trial %d (+%.0f %%)\n",
			mdText(d.LevelTextOn(w.Axis())), mdText(d.Objective), formatFloat(d.Low), d.LowTrial, formatFloat(d.High), d.HighTrial, d.SpreadPercent())
	}
	b.WriteString("\n")
}

// writeHostLoad summarises the load generator's machine over the workload's trials: the
// range of the 1-minute load average and the busiest trial.
func writeHostLoad(b *strings.Builder, w Workload) {
	lo, hi, busy, cpus, n := math.Inf(1), math.Inf(-1), 0.0, 0, 0
	for _, t := range w.AllTrials {
		h := t.Host
		if h == nil {
			continue
		}
		n++
		lo, hi = math.Min(lo, math.Min(h.LoadAvg1mStart, h.LoadAvg1mEnd)), math.Max(hi, math.Max(h.LoadAvg1mStart, h.LoadAvg1mEnd))
		busy, cpus = math.Max(busy, h.BusyPercent), max(cpus, h.CPUs)
	}
	if n == 0 {
		return
	}
	fmt.Fprintf(b, "Load generator's host over %d %s: 1-minute load average %.2f–%.2f on %d CPUs, at most %.0f %% busy.\n\n",
		n, map[bool]string{true: "trial", false: "trials"}[n == 1], lo, hi, cpus, busy)
}
