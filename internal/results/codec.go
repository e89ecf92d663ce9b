package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// PathError is a problem with one value of a document, located by its JSON path
// (for example workloads[1].passing_trials[0].ttft_ms.p95).
type PathError struct {
	Path string
	Msg  string
}

func (e *PathError) Error() string {
	if e.Path == "" {
		return "document: " + e.Msg
	}
	return e.Path + ": " + e.Msg
}

// member is one key of an object that this version of the schema does not know.
type member struct {
	key string
	val *node
}

// extras holds, by the JSON path of the object they sit in, the keys Parse did not map onto
// a struct field, so that Marshal writes them back and newer or hand-annotated documents
// survive a pass through this provider. Positions follow array indices: a caller who
// reorders workloads or trials moves the typed values but not their unknown keys.
type extras map[string][]member

// maxErrors caps how many problems Parse reports, so a document of the wrong kind
// altogether gives a readable message instead of thousands of lines.
const maxErrors = 20

// Parse reads a schema v1 document. Every problem it finds is reported with its JSON path;
// keys it does not know are kept and written back by Marshal.
func Parse(data []byte) (*Document, error) {
	root, err := parseTree(data)
	if err != nil {
		return nil, fmt.Errorf("results document is not valid JSON: %w", err)
	}
	r := &reader{extras: extras{}}
	doc := r.document(root)
	if doc != nil && len(r.errs) == 0 {
		r.check(doc, root)
	}
	if len(r.errs) > 0 {
		if len(r.errs) > maxErrors {
			more := len(r.errs) - maxErrors
			r.errs = append(r.errs[:maxErrors], fmt.Errorf("... and %d more problems", more))
		}
		return nil, fmt.Errorf("invalid results document: %w", errors.Join(r.errs...))
	}
	if len(r.extras) > 0 {
		doc.extras = r.extras
	}
	return doc, nil
}

// Marshal writes d as indented schema v1 JSON, including any unknown keys Parse kept.
// It does not modify d.
func Marshal(d *Document) ([]byte, error) {
	if d == nil {
		return nil, errors.New("cannot write a nil results document")
	}
	out := *d
	switch out.SchemaVersion {
	case 0:
		// A document built in code rarely sets the version; there is only one to write.
		out.SchemaVersion = SchemaVersion
	case SchemaVersion:
	default:
		return nil, fmt.Errorf("cannot write schema_version %d: this provider writes version %d", d.SchemaVersion, SchemaVersion)
	}
	// nil slices would be written as null, which the schema (and Parse) reject.
	out.Workloads = make([]Workload, len(d.Workloads))
	for i, w := range d.Workloads {
		if w.PassingTrials == nil {
			w.PassingTrials = []Trial{}
		}
		if w.FailingTrials == nil {
			w.FailingTrials = []Trial{}
		}
		out.Workloads[i] = w
	}
	var typed bytes.Buffer
	enc := json.NewEncoder(&typed)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&out); err != nil {
		return nil, fmt.Errorf("writing results document: %w", err)
	}
	root, err := parseTree(typed.Bytes())
	if err != nil {
		return nil, fmt.Errorf("writing results document: %w", err)
	}
	d.extras.restore("", root)
	if ct, ok := root.get("correctness_total"); ok {
		if _, has := ct.get("uniqueness_scope"); !has {
			// The reference always states the scope of its totals; the counters a trial
			// records (unique prompts and outputs) are counted within that trial.
			ct.keys = append(ct.keys, "uniqueness_scope")
			ct.vals = append(ct.vals, &node{kind: kindString, text: "within_each_trial"})
		}
	}
	if ws, ok := root.get("workloads"); ok {
		for _, w := range ws.items {
			if ts, ok := w.get("trials"); ok {
				for _, t := range ts.items {
					if _, has := t.get("stopped_early"); t.kind == kindObject && !has {
						// Every entry of a workload's trials says whether it was stopped early.
						t.keys = append(t.keys, "stopped_early")
						t.vals = append(t.vals, &node{kind: kindBool, boolean: false})
					}
				}
			}
		}
	}
	var compact bytes.Buffer
	if err := writeNode(&compact, root); err != nil {
		return nil, fmt.Errorf("writing results document: %w", err)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, compact.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("writing results document: %w", err)
	}
	indented.WriteByte('\n')
	return indented.Bytes(), nil
}

// restore puts the unknown keys back into the written tree at the paths they were read from.
func (x extras) restore(path string, n *node) {
	if len(x) == 0 {
		return
	}
	switch n.kind {
	case kindObject:
		for _, m := range x[path] {
			if _, has := n.get(m.key); !has {
				n.keys = append(n.keys, m.key)
				n.vals = append(n.vals, m.val)
			}
		}
		for i, k := range n.keys {
			x.restore(joinKey(path, k), n.vals[i])
		}
	case kindArray:
		for i, it := range n.items {
			x.restore(joinIndex(path, i), it)
		}
	}
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func joinIndex(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// reader walks the tree into the typed document, collecting every problem it meets.
type reader struct {
	errs   []error
	extras extras
}

func (r *reader) fail(path, format string, args ...any) {
	r.errs = append(r.errs, &PathError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// object is one JSON object being read; it remembers which keys were consumed so the rest
// can be kept as extras.
type object struct {
	r    *reader
	path string
	n    *node
	used map[string]bool
}

// asObject returns nil (and reports why) when n is not an object; all object methods accept
// a nil receiver so that a broken parent still lets siblings be checked.
func (r *reader) asObject(path string, n *node) *object {
	if n.kind != kindObject {
		r.fail(path, "expected object, got %s", n.kind)
		return nil
	}
	return &object{r: r, path: path, n: n, used: map[string]bool{}}
}

// field returns the value of a required key, reporting it when missing.
func (o *object) field(key string) (*node, string) {
	if o == nil {
		return nil, ""
	}
	p := joinKey(o.path, key)
	v, ok := o.n.get(key)
	if !ok {
		o.r.fail(p, "missing required key")
		return nil, p
	}
	o.used[key] = true
	return v, p
}

// optional returns the value of an optional key, or nil when it is absent. A null optional
// key is left to the extras so that it is written back as null.
func (o *object) optional(key string) (*node, string) {
	if o == nil {
		return nil, ""
	}
	v, ok := o.n.get(key)
	if !ok || v.kind == kindNull {
		return nil, ""
	}
	o.used[key] = true
	return v, joinKey(o.path, key)
}

// keepAsWritten hands a present optional key whose value is the Go zero value (which the
// typed writer omits) to the extras, so it is written back exactly as it was read.
func (o *object) keepAsWritten(key string) {
	if o != nil {
		delete(o.used, key)
	}
}

// finish records the keys nobody asked for.
func (o *object) finish() {
	if o == nil {
		return
	}
	var rest []member
	seen := map[string]bool{}
	for _, k := range o.n.keys {
		if o.used[k] || seen[k] {
			continue
		}
		seen[k] = true
		v, _ := o.n.get(k)
		rest = append(rest, member{key: k, val: v})
	}
	if len(rest) > 0 {
		o.r.extras[o.path] = rest
	}
}

func (o *object) child(key string) *object {
	v, p := o.field(key)
	if v == nil {
		return nil
	}
	return o.r.asObject(p, v)
}

func (o *object) str(key string) string {
	v, p := o.field(key)
	return o.r.str(p, v)
}

func (o *object) boolean(key string) bool {
	v, p := o.field(key)
	if v == nil {
		return false
	}
	if v.kind != kindBool {
		o.r.fail(p, "expected boolean, got %s", v.kind)
		return false
	}
	return v.boolean
}

func (o *object) num(key string) float64 {
	v, p := o.field(key)
	return o.r.num(p, v)
}

func (o *object) integer(key string) int {
	v, p := o.field(key)
	return o.r.integer(p, v)
}

// nullableInt reads a required key whose null means "none" (a boundary not found).
func (o *object) nullableInt(key string) *int {
	v, p := o.field(key)
	if v == nil || v.kind == kindNull {
		return nil
	}
	i := o.r.integer(p, v)
	return &i
}

func (o *object) array(key string) ([]*node, string) {
	v, p := o.field(key)
	if v == nil {
		return nil, p
	}
	if v.kind != kindArray {
		o.r.fail(p, "expected array, got %s", v.kind)
		return nil, p
	}
	return v.items, p
}

func (r *reader) str(path string, v *node) string {
	if v == nil {
		return ""
	}
	if v.kind != kindString {
		r.fail(path, "expected string, got %s", v.kind)
		return ""
	}
	return v.text
}

func (r *reader) num(path string, v *node) float64 {
	if v == nil {
		return 0
	}
	if v.kind != kindNumber {
		r.fail(path, "expected number, got %s", v.kind)
		return 0
	}
	f, err := strconv.ParseFloat(v.text, 64)
	if err != nil || math.IsInf(f, 0) {
		r.fail(path, "number %s is out of range", v.text)
		return 0
	}
	return f
}

func (r *reader) integer(path string, v *node) int {
	if v == nil {
		return 0
	}
	if v.kind != kindNumber {
		r.fail(path, "expected integer, got %s", v.kind)
		return 0
	}
	if i, err := strconv.ParseInt(v.text, 10, 0); err == nil {
		return int(i)
	}
	// Python writers emit counts as 8.0; accept any number that is a whole value.
	f, err := strconv.ParseFloat(v.text, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		r.fail(path, "expected integer, got %s", v.text)
		return 0
	}
	return int(f)
}

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
	d.AIPerf = r.protocol(o.child("aiperf"))
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
	o.finish()
	return d
}

func (r *reader) experiment(o *object) Experiment {
	var e Experiment
	if o == nil {
		return e
	}
	e.ImageTag = o.str("image_tag")
	e.ImageDigest = o.str("image_digest")
	e.Model = o.str("model")
	e.Checkpoint = o.str("checkpoint")
	e.Hardware = o.str("hardware")
	e.Driver = o.str("driver")
	e.Kernel = o.str("kernel")
	e.TensorParallelism = o.integer("tensor_parallelism")
	e.ContextLength = o.integer("context_length")
	e.PhysicalTokenPool = o.nullableInt("physical_token_pool")
	if v, p := o.optional("replicas"); v != nil {
		if e.Replicas = r.integer(p, v); e.Replicas == 0 {
			o.keepAsWritten("replicas")
		}
	}
	if v, p := o.field("speculative_mode"); v != nil && v.kind != kindNull {
		if so := r.asObject(p, v); so != nil {
			e.SpeculativeMode = &SpeculativeMode{
				Algorithm:   so.str("algorithm"),
				Steps:       so.integer("steps"),
				TopK:        so.integer("topk"),
				DraftTokens: so.integer("draft_tokens"),
			}
			so.finish()
		}
	}
	o.finish()
	return e
}

func (r *reader) protocol(o *object) Protocol {
	var p Protocol
	if o == nil {
		return p
	}
	p.Version = o.str("version")
	p.ArrivalPattern = o.str("arrival_pattern")
	p.Streaming = o.boolean("streaming")
	p.ServerTokenCount = o.boolean("server_token_count")
	p.Temperature = o.num("temperature")
	p.IgnoreEOS = o.boolean("ignore_eos")
	p.WarmupsPerTrial = o.integer("warmups_per_trial")
	p.MeasuredRequestsPerTrial = o.integer("measured_requests_per_trial")
	p.IndependentTrialsPerBoundarySide = o.integer("independent_trials_per_boundary_side")
	p.CachePolicy = o.str("cache_policy")
	o.finish()
	return p
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
	w.ServerPromptTokens = r.minMax(o.child("server_prompt_tokens"))
	for _, k := range []struct {
		key string
		dst *float64
	}{{"input_tokens_stddev", &w.InputTokensStddev}, {"output_tokens_stddev", &w.OutputTokensStddev}} {
		if v, p := o.optional(k.key); v != nil {
			if *k.dst = r.num(p, v); *k.dst == 0 {
				o.keepAsWritten(k.key)
			}
		}
	}
	if v, p := o.optional("shared_prefix_tokens"); v != nil {
		if w.SharedPrefixTokens = r.integer(p, v); w.SharedPrefixTokens == 0 {
			o.keepAsWritten("shared_prefix_tokens")
		}
	}
	w.MaximumPassingConcurrency = o.nullableInt("maximum_passing_concurrency")
	w.FirstFailingConcurrency = o.nullableInt("first_failing_concurrency")
	w.PassingTrials = r.trials(o, "passing_trials")
	w.FailingTrials = r.trials(o, "failing_trials")
	if v, _ := o.optional("trials"); v != nil {
		if w.AllTrials = r.trials(o, "trials"); len(w.AllTrials) == 0 {
			o.keepAsWritten("trials")
		}
	}
	if v, p := o.optional("bound_by"); v != nil {
		if v.kind != kindArray {
			r.fail(p, "expected array, got %s", v.kind)
		}
		for i, it := range v.items {
			w.BoundBy = append(w.BoundBy, r.str(joinIndex(p, i), it))
		}
		if len(w.BoundBy) == 0 {
			o.keepAsWritten("bound_by")
		}
	}
	if v, p := o.optional("notes"); v != nil {
		if v.kind != kindArray {
			r.fail(p, "expected array, got %s", v.kind)
		}
		for i, it := range v.items {
			w.Notes = append(w.Notes, r.str(joinIndex(p, i), it))
		}
		if len(w.Notes) == 0 {
			o.keepAsWritten("notes")
		}
	}
	o.finish()
	return w
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
	for _, opt := range []struct {
		key string
		dst *string
	}{{"records_file", &t.RecordsFile}, {"records_sha256", &t.RecordsSHA256}} {
		if v, p := o.optional(opt.key); v != nil {
			if *opt.dst = r.str(p, v); *opt.dst == "" {
				o.keepAsWritten(opt.key)
			}
		}
	}
	if v, p := o.optional("verdict"); v != nil {
		switch t.Verdict = r.str(p, v); t.Verdict {
		case "pass", "fail", "error":
		default:
			r.fail(p, "%q is not one of pass, fail, error", t.Verdict)
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
	t.ServerPromptTokens = r.minMax(o.child("server_prompt_tokens"))
	t.ServerCompletionTokens = r.minMax(o.child("server_completion_tokens"))
	t.Correctness = r.correctness(o.child("correctness"))
	t.Trial = o.integer("trial")
	if v, p := o.optional("concurrency"); v != nil {
		if t.Concurrency = r.integer(p, v); t.Concurrency == 0 {
			o.keepAsWritten("concurrency")
		}
	}
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
	o.finish()
	return t
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

func (r *reader) minMax(o *object) MinMax {
	var m MinMax
	if o == nil {
		return m
	}
	m.Min = o.num("min")
	m.Max = o.num("max")
	o.finish()
	return m
}

func (r *reader) correctness(o *object) Correctness {
	var c Correctness
	if o == nil {
		return c
	}
	c.WarmupRecords = o.integer("warmup_records")
	c.UniqueWarmupPrompts = o.integer("unique_warmup_prompts")
	c.WarmupProfilePromptOverlap = o.integer("warmup_profile_prompt_overlap")
	c.ProfilingRecords = o.integer("profiling_records")
	c.HTTP200 = o.integer("http_200")
	c.UniquePrompts = o.integer("unique_prompts")
	c.UniqueOutputs = o.integer("unique_outputs")
	c.GeneratedChunks = o.integer("generated_chunks")
	c.GeneratedUTF8Bytes = o.integer("generated_utf8_bytes")
	c.CompletionTokensTotal = o.integer("completion_tokens_total")
	c.FinishReasonLength = o.integer("finish_reason_length")
	c.Errors = o.integer("errors")
	c.Cancelled = o.boolean("cancelled")
	c.OutputLengthMismatches = o.num("output_length_mismatches")
	if v, p := o.optional("uniqueness_scope"); v != nil {
		if c.UniquenessScope = r.str(p, v); c.UniquenessScope == "" {
			o.keepAsWritten("uniqueness_scope")
		}
	}
	if v, p := o.optional("cached_prompt_tokens"); v != nil {
		c.CachedPromptTokens = &CacheCount{Tokens: r.integer(p, v), Known: true}
	}
	if v, p := o.optional("requests_cached_beyond_shared_prefix"); v != nil {
		if c.RequestsCachedBeyondSharedPrefix = r.integer(p, v); c.RequestsCachedBeyondSharedPrefix == 0 {
			o.keepAsWritten("requests_cached_beyond_shared_prefix")
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
	if v, p := o.optional("notes"); v != nil {
		if v.kind != kindArray {
			r.fail(p, "expected array, got %s", v.kind)
		}
		for i, it := range v.items {
			t.Notes = append(t.Notes, r.str(joinIndex(p, i), it))
		}
		if len(t.Notes) == 0 {
			o.keepAsWritten("notes")
		}
	}
}
