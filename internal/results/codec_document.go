package results

// How each block of a schema v1 document is read: its keys, which are required, and what
// is kept as written.

import (
	"math"
	"strconv"
)

func (r *reader) document(root *node) *Document {
	o := r.asObject("", root)
	if o == nil {
		return nil
	}
	// The version decides what the rest means, so nothing else is checked without it.
	v, p := o.field("schema_version")
	if v == nil {
		return nil
	}
	if v.kind != kindNumber {
		r.fail(p, "expected integer, got %s", v.kind)
		return nil
	}
	if v.text != strconv.Itoa(SchemaVersion) {
		r.fail(p, "unsupported version %s: this provider reads version %d", v.text, SchemaVersion)
		return nil
	}
	d := &Document{SchemaVersion: SchemaVersion}
	d.Experiment = r.experiment(o.child("experiment"))
	if ao := o.child("aiperf"); ao != nil {
		ao.plain(&d.AIPerf)
		ao.optionalValue("comparison_budget", &d.AIPerf.ComparisonBudget)
		ao.optionalValue("engine_warmup_requests", &d.AIPerf.EngineWarmupRequests)
		ao.finish()
	}
	if v, p := o.optional("slo"); v != nil {
		s := r.slo(r.asObject(p, v), true)
		d.SLO = &s
	}
	if v, p := o.optional("slos"); v != nil {
		if v.kind != kindArray {
			r.fail(p, "expected array, got %s", v.kind)
		}
		for i, it := range v.items {
			d.SLOs = append(d.SLOs, r.slo(r.asObject(joinIndex(p, i), it), false))
		}
		if len(d.SLOs) == 0 {
			r.fail(p, "must list at least one objective")
		}
	}
	if d.SLO != nil && d.SLOs != nil {
		r.fail("slo", "both slo and slos are set: a document states its objectives once; keep slos (slo is the single objective of older documents)")
	}
	if d.SLO == nil && d.SLOs == nil {
		r.fail("slos", "missing required key (or the single \"slo\" of older documents)")
	}
	items, wp := o.array("workloads")
	d.Workloads = make([]Workload, 0, len(items))
	labels := map[string]int{}
	for i, it := range items {
		ip := joinIndex(wp, i)
		w := r.workload(r.asObject(ip, it))
		if lv, ok := it.get("label"); ok && lv.kind == kindString && lv.text == "" {
			r.fail(joinKey(ip, "label"), "must not be empty: labels key the capacity maps")
		}
		if first, dup := labels[w.Label]; dup && w.Label != "" {
			r.fail(joinKey(ip, "label"), "duplicate workload label %q (also workloads[%d]); labels key the capacity maps", w.Label, first)
		}
		labels[w.Label] = i
		d.Workloads = append(d.Workloads, w)
	}
	d.CorrectnessTotal = r.correctness(o.child("correctness_total"))
	if v, p := o.optional("price"); v != nil {
		if po := r.asObject(p, v); po != nil {
			pr := &Price{PerHour: po.num("per_hour")}
			po.optionalValue("accelerators", &pr.Accelerators)
			if pr.PerHour < 0 || math.IsInf(pr.PerHour, 0) {
				r.fail(joinKey(p, "per_hour"), "must be a finite price of at least 0, got %v", pr.PerHour)
			}
			if pr.Accelerators < 0 {
				r.fail(joinKey(p, "accelerators"), "must be at least 0, got %d", pr.Accelerators)
			}
			po.finish()
			d.Price = pr
		}
	}
	if v, p := o.optional("runner"); v != nil {
		rn := plainBlock[Runner](r.asObject(p, v))
		d.Runner = &rn
	}
	o.finish()
	return d
}

func (r *reader) experiment(o *object) Experiment {
	var e Experiment
	if o == nil {
		return e
	}
	o.plain(&e)
	e.PhysicalTokenPool = o.nullableInt("physical_token_pool")
	o.optionalValue("replicas", &e.Replicas)
	o.optionalValue("accelerator", &e.Accelerator)
	if v, p := o.field("speculative_mode"); v != nil && v.kind != kindNull {
		if so := r.asObject(p, v); so != nil {
			e.SpeculativeMode = &SpeculativeMode{}
			so.plain(e.SpeculativeMode)
			so.finish()
		}
	}
	o.finish()
	return e
}

// slo reads one objective; legacy is the single `slo` block of older documents, which
// always states all_confirmation_trials_must_pass.
func (r *reader) slo(o *object, legacy bool) SLO {
	var s SLO
	if o == nil {
		return s
	}
	s.Metric = o.str("metric")
	if m, ok := LookupMetric(s.Metric); ok && m.PerTrial {
		if v, p := o.optional("percentile"); v != nil {
			r.fail(p, "%s takes no percentile", s.Metric)
		}
	} else {
		s.Percentile = o.num("percentile")
	}
	s.ThresholdMs = o.num("threshold_ms")
	s.Comparison = o.str("comparison")
	if legacy {
		if s.AllConfirmationTrialsMustPass = o.boolean("all_confirmation_trials_must_pass"); !s.AllConfirmationTrialsMustPass {
			o.keepAsWritten("all_confirmation_trials_must_pass")
		}
	}
	o.finish()
	return s
}

func (r *reader) sloResults(v *node, p string) []SLOResult {
	if v.kind != kindArray {
		r.fail(p, "expected array, got %s", v.kind)
		return nil
	}
	out := make([]SLOResult, 0, len(v.items))
	for i, it := range v.items {
		o := r.asObject(joinIndex(p, i), it)
		if o == nil {
			continue
		}
		var s SLOResult
		s.Metric = o.str("metric")
		if pv, pp := o.optional("percentile"); pv != nil {
			if s.Percentile = r.num(pp, pv); s.Percentile == 0 {
				o.keepAsWritten("percentile")
			}
		}
		s.Value = o.num("value")
		s.Met = o.boolean("met")
		o.finish()
		out = append(out, s)
	}
	return out
}

func (r *reader) workload(o *object) Workload {
	var w Workload
	if o == nil {
		return w
	}
	w.Label = o.str("label")
	w.ConfiguredISL = o.integer("configured_isl")
	w.ConfiguredOSL = o.integer("configured_osl")
	w.ServerPromptTokens = plainBlock[MinMax](o.child("server_prompt_tokens"))
	o.optionalValue("input_tokens_stddev", &w.InputTokensStddev)
	o.optionalValue("output_tokens_stddev", &w.OutputTokensStddev)
	o.optionalValue("shared_prefix_tokens", &w.SharedPrefixTokens)
	w.MaximumPassingConcurrency = o.nullableInt("maximum_passing_concurrency")
	w.FirstFailingConcurrency = o.nullableInt("first_failing_concurrency")
	for _, rate := range []struct {
		key string
		dst **float64
	}{{"maximum_passing_request_rate", &w.MaximumPassingRequestRate}, {"first_failing_request_rate", &w.FirstFailingRequestRate},
		{"maximum_passing_speedup", &w.MaximumPassingSpeedup}, {"first_failing_speedup", &w.FirstFailingSpeedup}} {
		if v, p := o.optional(rate.key); v != nil && v.kind != kindNull {
			f := r.num(p, v)
			*rate.dst = &f
		}
	}
	for _, users := range []struct {
		key string
		dst **int
	}{{"maximum_passing_users", &w.MaximumPassingUsers}, {"first_failing_users", &w.FirstFailingUsers}} {
		if v, p := o.optional(users.key); v != nil && v.kind != kindNull {
			n := r.integer(p, v)
			*users.dst = &n
		}
	}
	o.optionalValue("trace_file", &w.TraceFile)
	o.optionalValue("trace_sha256", &w.TraceSHA256)
	w.PassingTrials = r.trials(o, "passing_trials")
	w.FailingTrials = r.trials(o, "failing_trials")
	if v, _ := o.optional("trials"); v != nil {
		if w.AllTrials = r.trials(o, "trials"); len(w.AllTrials) == 0 {
			o.keepAsWritten("trials")
		}
	}
	w.BoundBy = o.optionalStrings("bound_by")
	if v, p := o.optional("client_bound"); v != nil {
		if v.kind != kindBool {
			r.fail(p, "expected boolean, got %s", v.kind)
		} else if w.ClientBound = v.boolean; !w.ClientBound {
			o.keepAsWritten("client_bound")
		}
	}
	w.Notes = o.optionalStrings("notes")
	if v, p := o.optional("trial_disagreements"); v != nil {
		w.TrialDisagreements = r.trialDisagreements(p, v)
		if len(w.TrialDisagreements) == 0 {
			o.keepAsWritten("trial_disagreements")
		}
	}
	o.finish()
	return w
}

func (r *reader) trialDisagreements(path string, v *node) []TrialDisagreement {
	if v.kind != kindArray {
		r.fail(path, "expected array, got %s", v.kind)
		return nil
	}
	var out []TrialDisagreement
	for i, it := range v.items {
		do := r.asObject(joinIndex(path, i), it)
		if do == nil {
			continue
		}
		var d TrialDisagreement
		do.plain(&d)
		do.optionalValue("concurrency", &d.Concurrency)
		do.optionalValue("request_rate", &d.RequestRate)
		do.optionalValue("speedup", &d.Speedup)
		do.finish()
		out = append(out, d)
	}
	return out
}

func (r *reader) trials(o *object, key string) []Trial {
	items, p := o.array(key)
	ts := make([]Trial, 0, len(items))
	for i, it := range items {
		ts = append(ts, r.trial(r.asObject(joinIndex(p, i), it)))
	}
	return ts
}

func (r *reader) trial(o *object) Trial {
	var t Trial
	if o == nil {
		return t
	}
	t.TTFTMs = r.stats(o.child("ttft_ms"), latencyKeys)
	t.RequestLatencyMs = r.stats(o.child("request_latency_ms"), latencyKeys)
	t.ITLMs = r.stats(o.child("itl_ms"), latencyKeys)
	t.OutputThroughputTPS = o.num("output_throughput_tps")
	t.PerUserOutputThroughputTPS = r.stats(o.child("per_user_output_throughput_tps"), userThroughputKeys)
	for _, opt := range []struct {
		key string
		dst **Stats
	}{{"ttst_ms", &t.TTSTMs}, {"inter_chunk_latency_ms", &t.InterChunkLatencyMs}, {"connection_setup_ms", &t.ConnectionSetupMs}} {
		if v, p := o.optional(opt.key); v != nil {
			st := r.stats(r.asObject(p, v), StatKeys)
			*opt.dst = &st
		}
	}
	if v, p := o.optional("kind"); v != nil {
		switch t.Kind = r.str(p, v); t.Kind {
		case "probe", "confirmation":
		default:
			r.fail(p, "%q is not one of probe, confirmation", t.Kind)
		}
	}
	o.optionalValue("records_file", &t.RecordsFile)
	o.optionalValue("records_sha256", &t.RecordsSHA256)
	if v, p := o.optional("verdict"); v != nil {
		switch t.Verdict = r.str(p, v); t.Verdict {
		case VerdictPass, VerdictFail, VerdictError, VerdictClientBound:
		default:
			r.fail(p, "%q is not one of pass, fail, error, client_bound", t.Verdict)
		}
	}
	if v, p := o.optional("stopped_early"); v != nil {
		if v.kind != kindBool {
			r.fail(p, "expected boolean, got %s", v.kind)
		} else if t.StoppedEarly = v.boolean; !t.StoppedEarly && t.Kind == "" {
			o.keepAsWritten("stopped_early")
		}
	}
	t.RequestThroughputRPS = o.num("request_throughput_rps")
	t.BenchmarkDurationS = o.num("benchmark_duration_s")
	t.ServerPromptTokens = plainBlock[MinMax](o.child("server_prompt_tokens"))
	t.ServerCompletionTokens = plainBlock[MinMax](o.child("server_completion_tokens"))
	t.Correctness = r.correctness(o.child("correctness"))
	t.Trial = o.integer("trial")
	o.optionalValue("concurrency", &t.Concurrency)
	if v, p := o.optional("slos"); v != nil {
		if t.SLOs = r.sloResults(v, p); len(t.SLOs) == 0 {
			o.keepAsWritten("slos")
		}
	}
	if v, p := o.optional("goodput_percent"); v != nil {
		g := r.num(p, v)
		t.GoodputPercent = &g
	}
	if v, p := o.optional("error_summary"); v != nil {
		t.ErrorSummary = r.errorSummary(p, v)
		if len(t.ErrorSummary) == 0 {
			o.keepAsWritten("error_summary")
		}
	}
	r.engineView(o, &t)
	o.optionalValue("request_rate", &t.RequestRate)
	o.optionalValue("speedup", &t.Speedup)
	o.optionalValue("users", &t.Users)
	o.optionalValue("for_comparison", &t.ForComparison)
	if v, p := o.optional("conversations"); v != nil {
		if co := r.asObject(p, v); co != nil {
			var c ConversationTrial
			co.plain(&c)
			c.LaterTurnCachedPercent = r.cachedPercent(co)
			co.finish()
			t.Conversations = &c
		}
	}
	if v, p := o.optional("open_loop"); v != nil {
		ol := r.asObject(p, v)
		if ol != nil {
			var x OpenLoopTrial
			ol.plain(&x)
			x.Missed = ol.optionalStrings("missed")
			ol.finish()
			t.OpenLoop = &x
		}
	}
	if v, p := o.optional("replicas"); v != nil {
		t.Replicas = r.replicaChecks(p, v)
	}
	if v, p := o.optional("accelerators"); v != nil {
		t.Accelerators = r.accelerators(r.asObject(p, v))
	}
	if v, p := o.optional("timing"); v != nil {
		if to := r.asObject(p, v); to != nil {
			timing := plainBlock[TrialTiming](to)
			t.Timing = &timing
		}
	}
	if v, p := o.optional("host"); v != nil {
		if ho := r.asObject(p, v); ho != nil {
			host := plainBlock[HostLoad](ho)
			t.Host = &host
		}
	}
	if v, p := o.optional("client"); v != nil {
		t.Client = r.client(r.asObject(p, v))
	}
	if v, p := o.optional("pods"); v != nil {
		t.Pods = r.podsTrial(p, v)
	}
	o.finish()
	return t
}

func (r *reader) client(o *object) *ClientTrial {
	if o == nil {
		return nil
	}
	var c ClientTrial
	o.plain(&c)
	o.optionalValue("schedule_limit_ms", &c.ScheduleLimitMs)
	for _, lag := range []struct {
		key string
		dst **float64
	}{{"read_lag_mean_ms", &c.ReadLagMeanMs}, {"read_lag_p99_ms", &c.ReadLagP99Ms}, {"read_lag_max_ms", &c.ReadLagMaxMs}} {
		if v, p := o.optional(lag.key); v != nil {
			f := r.num(p, v)
			*lag.dst = &f
		}
	}
	if v, p := o.optional("cpu"); v != nil {
		if co := r.asObject(p, v); co != nil {
			var cpu ClientCPU
			co.plain(&cpu)
			if tv, tp := co.optional("throttling"); tv != nil {
				if to := r.asObject(tp, tv); to != nil {
					th := plainBlock[CPUThrottling](to)
					cpu.Throttling = &th
				}
			}
			co.finish()
			c.CPU = &cpu
		}
	}
	c.BoundBy = o.optionalStrings("bound_by")
	o.finish()
	return &c

}

// podsTrial reads a trial's spread over pods.
func (r *reader) podsTrial(path string, v *node) *PodsTrial {
	o := r.asObject(path, v)
	if o == nil {
		return nil
	}
	var pt PodsTrial
	o.plain(&pt)
	items, sp := o.array("shares")
	pt.Shares = make([]PodShare, 0, len(items))
	for i, it := range items {
		if so := r.asObject(joinIndex(sp, i), it); so != nil {
			pt.Shares = append(pt.Shares, plainBlock[PodShare](so))
		}
	}
	o.finish()
	return &pt
}

func (r *reader) replicaChecks(path string, v *node) []ReplicaCheck {
	if v.kind != kindArray {
		r.fail(path, "expected array, got %s", v.kind)
		return nil
	}
	out := make([]ReplicaCheck, 0, len(v.items))
	for i, it := range v.items {
		o := r.asObject(joinIndex(path, i), it)
		if o == nil {
			continue
		}
		var c ReplicaCheck
		o.plain(&c)
		for _, opt := range []struct {
			key string
			dst **float64
		}{{"prompt_tokens", &c.PromptTokens}, {"prefix_cache_hit_tokens", &c.PrefixCacheHitTokens}} {
			if n, p := o.optional(opt.key); n != nil {
				f := r.num(p, n)
				*opt.dst = &f
			}
		}
		o.finish()
		out = append(out, c)
	}
	return out
}

func (r *reader) errorSummary(path string, v *node) []ErrorCount {
	if v.kind != kindArray {
		r.fail(path, "expected array, got %s", v.kind)
		return nil
	}
	var out []ErrorCount
	for i, it := range v.items {
		ip := joinIndex(path, i)
		eo := r.asObject(ip, it)
		if eo == nil {
			continue
		}
		e := ErrorCount{Kind: eo.str("kind"), Count: eo.integer("count"), Example: eo.str("example")}
		if hv, hp := eo.optional("http_status"); hv != nil {
			if e.HTTPStatus = r.integer(hp, hv); e.HTTPStatus == 0 {
				eo.keepAsWritten("http_status")
			}
		}
		if e.Kind == "" {
			r.fail(joinKey(ip, "kind"), "must not be empty")
		}
		if e.Count < 1 {
			r.fail(joinKey(ip, "count"), "must be at least 1, got %d", e.Count)
		}
		eo.finish()
		out = append(out, e)
	}
	return out
}

// The statistics older documents carry: the reference has p50/p95/p99 of the latencies and
// avg/p50/p95 of per-user throughput. Documents of this provider carry every StatKeys entry.
var (
	latencyKeys        = []string{"p50", "p95", "p99"}
	userThroughputKeys = []string{"avg", "p50", "p95"}
)

// stats reads a metric object. The required keys must be there; any other statistic is
// read when present, and Stats remembers which were, to write the same keys back.
func (r *reader) stats(o *object, required []string) Stats {
	var s Stats
	if o == nil {
		return s
	}
	var has statSet
	for i, k := range StatKeys {
		isRequired := false
		for _, q := range required {
			isRequired = isRequired || q == k
		}
		var v *node
		var p string
		if isRequired {
			v, p = o.field(k)
		} else {
			v, p = o.optional(k)
		}
		if v == nil {
			continue
		}
		*s.field(i) = r.num(p, v)
		has |= 1 << i
	}
	if has != 1<<len(StatKeys)-1 {
		s.has = has
	}
	o.finish()
	return s
}

func (r *reader) correctness(o *object) Correctness {
	var c Correctness
	if o == nil {
		return c
	}
	o.plain(&c)
	o.optionalValue("uniqueness_scope", &c.UniquenessScope)
	if v, p := o.optional("cached_prompt_tokens"); v != nil {
		c.CachedPromptTokens = &CacheCount{Tokens: r.integer(p, v), Known: true}
	}
	o.optionalValue("requests_cached_beyond_shared_prefix", &c.RequestsCachedBeyondSharedPrefix)
	if v, p := o.optional("degenerate_outputs"); v != nil {
		if do := r.asObject(p, v); do != nil {
			var d DegenerateOutputs
			if do != nil {
				do.plain(&d)
				do.optionalValue("repeated_token", &d.RepeatedToken)
				do.finish()
			}
			c.DegenerateOutputs = &d
		}
	}
	o.finish()
	return c
}

// engineView reads a trial's additive server view and notes.
func (r *reader) engineView(o *object, t *Trial) {
	if v, p := o.optional("server"); v != nil {
		if so := r.asObject(p, v); so != nil {
			sv := &ServerView{Source: so.str("source")}
			latency := func(key string) *ServerLatency {
				v, p := so.optional(key)
				if v == nil {
					return nil
				}
				lo := r.asObject(p, v)
				if lo == nil {
					return nil
				}
				l := &ServerLatency{Count: lo.integer("count"), Mean: lo.num("mean"), P50: lo.num("p50"), P95: lo.num("p95")}
				lo.finish()
				return l
			}
			number := func(key string) *float64 {
				v, p := so.optional(key)
				if v == nil {
					return nil
				}
				f := r.num(p, v)
				return &f
			}
			sv.TTFTMs, sv.RequestLatencyMs, sv.QueueTimeMs = latency("ttft_ms"), latency("request_latency_ms"), latency("queue_time_ms")
			sv.PeakRunningRequests, sv.PeakQueuedRequests = number("peak_running_requests"), number("peak_queued_requests")
			sv.PeakKVCacheUsage, sv.PrefixCacheHitTokens = number("peak_kv_cache_usage"), number("prefix_cache_hit_tokens")
			so.finish()
			t.Server = sv
		}
	}
	t.Notes = o.optionalStrings("notes")
}

// accelerators reads a trial's additive accelerator telemetry.
func (r *reader) accelerators(o *object) *AcceleratorTelemetry {
	if o == nil {
		return nil
	}
	a := &AcceleratorTelemetry{WindowS: o.num("window_s"), Scrapes: o.integer("scrapes"), OutputTokens: o.integer("output_tokens")}
	a.Total = r.acceleratorFigures(o.child("total"))
	if items, p := o.array("devices"); p != "" {
		a.Devices = []AcceleratorDevice{}
		for i, it := range items {
			do := r.asObject(joinIndex(p, i), it)
			if do == nil {
				continue
			}
			d := AcceleratorDevice{Endpoint: do.integer("endpoint"), Exporter: do.str("exporter"), Device: do.str("device")}
			d.AcceleratorFigures = r.acceleratorFigures(do)
			a.Devices = append(a.Devices, d)
		}
	}
	a.Warnings = o.optionalStrings("warnings")
	o.finish()
	return a
}

// acceleratorFigures reads the figures of a device or of the total; null is unknown. It
// finishes o.
func (r *reader) acceleratorFigures(o *object) AcceleratorFigures {
	var f AcceleratorFigures
	if o == nil {
		return f
	}
	for _, x := range []struct {
		key string
		dst **float64
	}{{"mean_power_w", &f.MeanPowerW}, {"peak_power_w", &f.PeakPowerW}, {"mean_utilization_percent", &f.MeanUtilizationPercent},
		{"peak_memory_used_bytes", &f.PeakMemoryUsedBytes}, {"energy_j", &f.EnergyJ}, {"joules_per_output_token", &f.JoulesPerOutputToken}} {
		if v, p := o.optional(x.key); v != nil {
			n := r.num(p, v)
			*x.dst = &n
		}
	}
	if v, p := o.optional("energy_source"); v != nil {
		switch f.EnergySource = r.str(p, v); f.EnergySource {
		case EnergyFromCounter, EnergyFromPower, EnergyMixed:
		default:
			r.fail(p, "%q is not one of %s, %s, %s", f.EnergySource, EnergyFromCounter, EnergyFromPower, EnergyMixed)
		}
	}
	o.finish()
	return f
}

// legacyUnknownCachedPercent is what documents written before later_turn_cached_percent was
// optional hold for "the server did not say".
const legacyUnknownCachedPercent = "-1"

// cachedPercent reads a users trial's later_turn_cached_percent: nil when absent, null or the
// legacy -1 (kept as written, so such a document round-trips byte for byte), a share of at
// most 100 otherwise.
func (r *reader) cachedPercent(co *object) *float64 {
	v, p := co.optional("later_turn_cached_percent")
	if v == nil {
		return nil
	}
	if v.kind == kindNumber && v.text == legacyUnknownCachedPercent {
		co.keepAsWritten("later_turn_cached_percent")
		return nil
	}
	f := r.num(p, v)
	if f > 100 {
		r.fail(p, "%s %% is more than the whole prompt; a share of cached tokens is at most 100", v.text)
	}
	return &f
}
