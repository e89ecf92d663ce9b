package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func readReference(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func parseReference(t testing.TB) *Document {
	t.Helper()
	d, err := Parse(readReference(t))
	if err != nil {
		t.Fatalf("Parse(reference): %v", err)
	}
	return d
}

// decodeAny decodes with float64 numbers, so 2099.0 and 2099 compare equal as JSON does.
func decodeAny(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	return v
}

func TestParseReferenceValues(t *testing.T) {
	t.Parallel()
	d := parseReference(t)
	type boundary struct {
		label             string
		isl, osl          int
		passing, failing  int
		nPassing, nFailed int
	}
	want := []boundary{
		{"2K / 512", 2048, 512, 11, 12, 3, 3},
		{"8K / 1K", 8192, 1024, 7, 8, 3, 3},
		{"16K / 2K", 16384, 2048, 5, 6, 3, 3},
	}
	if len(d.Workloads) != len(want) {
		t.Fatalf("got %d workloads, want %d", len(d.Workloads), len(want))
	}
	for i, w := range want {
		got := d.Workloads[i]
		if got.Label != w.label || got.ConfiguredISL != w.isl || got.ConfiguredOSL != w.osl ||
			got.MaximumPassingConcurrency == nil || *got.MaximumPassingConcurrency != w.passing ||
			got.FirstFailingConcurrency == nil || *got.FirstFailingConcurrency != w.failing ||
			len(got.PassingTrials) != w.nPassing || len(got.FailingTrials) != w.nFailed {
			t.Errorf("workload %d = %+v, want %+v", i, got, w)
		}
	}
	// Spot values copied from the file by hand: full float precision must survive.
	if got := d.Workloads[0].PassingTrials[0].TTFTMs.P99; got != 11215.331829699991 {
		t.Errorf("ttft p99 = %v", got)
	}
	if got := d.Workloads[0].ServerPromptTokens; got != (MinMax{Min: 2099, Max: 2102}) {
		t.Errorf("server_prompt_tokens = %v", got)
	}
	if d.SLO == nil || *d.SLO != (SLO{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: 10000, Comparison: "strictly_less_than", AllConfirmationTrialsMustPass: true}) {
		t.Errorf("slo = %+v", d.SLO)
	}
	if d.Experiment.SpeculativeMode == nil || *d.Experiment.SpeculativeMode != (SpeculativeMode{Algorithm: "EAGLE/MTP", Steps: 7, TopK: 1, DraftTokens: 8}) {
		t.Errorf("speculative_mode = %+v", d.Experiment.SpeculativeMode)
	}
	if d.CorrectnessTotal.UniquenessScope != "within_each_trial" || d.CorrectnessTotal.GeneratedUTF8Bytes != 5281875 {
		t.Errorf("correctness_total = %+v", d.CorrectnessTotal)
	}
}

func TestRoundTripReference(t *testing.T) {
	t.Parallel()
	in := readReference(t)
	d := parseReference(t)
	out, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(decodeAny(t, in), decodeAny(t, out)) {
		t.Fatalf("round trip changed the document:\n%s", out)
	}
	// Written twice, the bytes must not drift.
	d2, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	out2, err := Marshal(d2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, out2) {
		t.Fatal("second round trip changed the bytes")
	}
}

// TestRoundTripUnknownKeys adds keys this version does not know at every level, including
// nulls and number literals float64 cannot hold, and checks they come back literally.
func TestRoundTripUnknownKeys(t *testing.T) {
	t.Parallel()
	in := readReference(t)
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	m["generator"] = map[string]any{"name": "aiperf", "args": []any{"--x", json.Number("1")}}
	m["note"] = nil
	m["experiment"].(map[string]any)["gpu_clock_mhz"] = json.Number("2400.000000000000000001")
	w1 := m["workloads"].([]any)[1].(map[string]any)
	w1["comment"] = "re-run after driver update"
	tr := w1["failing_trials"].([]any)[2].(map[string]any)
	tr["concurrency"] = nil // a known optional key as null must stay null
	tr["ttft_ms"].(map[string]any)["p999"] = json.Number("12345.678901234567890")
	m["correctness_total"].(map[string]any)["retries"] = json.Number("0")
	in, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}

	d, err := Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	for _, p := range []struct {
		data []byte
		v    *any
	}{{in, &a}, {out, &b}} {
		dec := json.NewDecoder(bytes.NewReader(p.data))
		dec.UseNumber()
		if err := dec.Decode(p.v); err != nil {
			t.Fatal(err)
		}
	}
	// Known numbers may change spelling (2099.0 -> 2099); unknown ones must not.
	for _, lit := range []string{`"gpu_clock_mhz": 2400.000000000000000001`, `"p999": 12345.678901234567890`, `"concurrency": null`, `"note": null`, `"comment": "re-run after driver update"`, `"retries": 0`, `"args": [`} {
		if !bytes.Contains(out, []byte(lit)) {
			t.Errorf("output lacks %s", lit)
		}
	}
	if !reflect.DeepEqual(decodeAny(t, in), decodeAny(t, out)) {
		t.Fatalf("round trip changed the document:\n%s", out)
	}
}

func intp(i int) *int { return &i }

// TestMarshalFromScratchHasReferenceShape builds a document in code, as the benchmark
// resource does, and checks it has every key of the reference with the same JSON types.
func TestMarshalFromScratchHasReferenceShape(t *testing.T) {
	t.Parallel()
	// Every statistic is written for a Stats built in code: they must be in order.
	st := func(base float64) Stats {
		return Stats{Avg: base + 1, Min: base, Max: base + 2, P1: base, P5: base, P10: base, P25: base + 0.5, P50: base + 1, P75: base + 1.5, P90: base + 2, P95: base + 2, P99: base + 2}
	}
	trial := func(n, c int) Trial {
		return Trial{
			TTFTMs:                     st(1),
			RequestLatencyMs:           st(4),
			ITLMs:                      st(7),
			OutputThroughputTPS:        10,
			PerUserOutputThroughputTPS: st(11),
			RequestThroughputRPS:       14,
			BenchmarkDurationS:         15,
			ServerPromptTokens:         MinMax{Min: 16, Max: 17},
			ServerCompletionTokens:     MinMax{Min: 18, Max: 18},
			Correctness:                Correctness{ProfilingRecords: 64},
			Trial:                      n,
			Concurrency:                c,
		}
	}
	failing := trial(1, 4)
	failing.TTFTMs = st(20000) // over the threshold: the failing side fails
	d := &Document{
		Experiment: Experiment{ImageTag: "img", PhysicalTokenPool: intp(1), SpeculativeMode: &SpeculativeMode{Algorithm: "EAGLE"}},
		SLOs:       []SLO{{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: 10000}},
		Workloads: []Workload{{
			Label: "2K / 512", ConfiguredISL: 2048, ConfiguredOSL: 512,
			MaximumPassingConcurrency: intp(3), FirstFailingConcurrency: intp(4),
			PassingTrials: []Trial{trial(1, 3)}, FailingTrials: []Trial{failing},
		}},
	}
	out, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	ref := decodeAny(t, readReference(t)).(map[string]any)
	// Objectives are a list now: the reference's single slo block is the shape of each
	// entry, less the rule every list states implicitly.
	refSLO := ref["slo"].(map[string]any)
	delete(refSLO, "all_confirmation_trials_must_pass")
	ref["slos"] = []any{refSLO}
	delete(ref, "slo")
	var problems []string
	shapeDiff("", ref, decodeAny(t, out), &problems)
	if len(problems) > 0 {
		t.Fatalf("written document differs in shape from the reference:\n%s\n%s", strings.Join(problems, "\n"), out)
	}
	if _, err := Parse(out); err != nil {
		t.Fatalf("Parse(Marshal(doc)): %v", err)
	}
}

// shapeDiff reports every path of ref that ours lacks or holds with another JSON type. Each
// item of an array of ours is compared with the reference's first item.
func shapeDiff(path string, ref, ours any, problems *[]string) {
	typeOf := func(v any) string {
		switch v.(type) {
		case map[string]any:
			return "object"
		case []any:
			return "array"
		case string:
			return "string"
		case float64:
			return "number"
		case bool:
			return "boolean"
		default:
			return "null"
		}
	}
	if typeOf(ref) != typeOf(ours) {
		*problems = append(*problems, fmt.Sprintf("%s: reference has %s, ours %s", path, typeOf(ref), typeOf(ours)))
		return
	}
	switch r := ref.(type) {
	case map[string]any:
		o := ours.(map[string]any)
		keys := make([]string, 0, len(r))
		for k := range r {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ov, ok := o[k]
			if !ok {
				*problems = append(*problems, fmt.Sprintf("%s: missing", joinKey(path, k)))
				continue
			}
			shapeDiff(joinKey(path, k), r[k], ov, problems)
		}
	case []any:
		o := ours.([]any)
		if len(r) == 0 {
			return
		}
		if len(o) == 0 {
			*problems = append(*problems, fmt.Sprintf("%s: empty, reference is not", path))
		}
		for i, it := range o {
			shapeDiff(joinIndex(path, i), r[0], it, problems)
		}
	}
}

func TestMarshalDoesNotModifyInput(t *testing.T) {
	t.Parallel()
	d := &Document{Workloads: []Workload{{Label: "a"}}}
	if _, err := Marshal(d); err != nil {
		t.Fatal(err)
	}
	if d.SchemaVersion != 0 || d.Workloads[0].PassingTrials != nil {
		t.Fatalf("Marshal modified its input: %+v", d)
	}
}

func TestParseNullsAndWholeFloats(t *testing.T) {
	t.Parallel()
	d, err := Parse(mutated(t, func(m map[string]any) {
		obj(m, "workloads", 0)["maximum_passing_concurrency"] = nil
		obj(m, "experiment")["speculative_mode"] = nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if d.Workloads[0].MaximumPassingConcurrency != nil || d.Experiment.SpeculativeMode != nil {
		t.Fatalf("nulls not read as nil: %+v", d.Workloads[0])
	}
	out, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, lit := range []string{`"maximum_passing_concurrency": null`, `"speculative_mode": null`} {
		if !bytes.Contains(out, []byte(lit)) {
			t.Errorf("output lacks %s", lit)
		}
	}
	d, err = Parse([]byte(strings.Replace(string(readReference(t)), `"tensor_parallelism": 4`, `"tensor_parallelism": 4.0`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if d.Experiment.TensorParallelism != 4 {
		t.Errorf("tensor_parallelism = %d, want 4", d.Experiment.TensorParallelism)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(readReference(f))
	f.Add([]byte(`{"schema_version": 1}`))
	f.Add([]byte(`{"schema_version": 1, "experiment": {"speculative_mode": null}, "workloads": [{"passing_trials": [{}]}]}`))
	f.Add([]byte(`[[[[`))
	f.Add([]byte(`{"a":1e999}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data)
		if err != nil {
			return
		}
		// Whatever Parse accepts must write, read back, and write to the same bytes.
		out, err := Marshal(d)
		if err != nil {
			t.Fatalf("Marshal(Parse(data)): %v", err)
		}
		d2, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(Marshal(Parse(data))): %v\n%s", err, out)
		}
		out2, err := Marshal(d2)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, out2) {
			t.Fatalf("writing is not stable:\n%s\n%s", out, out2)
		}
		// Renderings of anything Parse accepts must finish without panicking.
		_, _, _ = Markdown(d), CSV(d), OpenMetrics(d)
		svgIsSafe(t, SVG(d))
	})
}

// Objectives, each trial's objective values, goodput and bound_by survive a round trip, and
// a document with both the legacy slo and slos keeps both.
func TestObjectivesRoundTrip(t *testing.T) {
	t.Parallel()
	goodput := 0.0
	doc := &Document{
		SLOs: []SLO{
			{Metric: MetricTTFT, Percentile: 95, ThresholdMs: 10000, Comparison: StrictlyLessThan},
			{Metric: MetricGoodput, ThresholdMs: 90, Comparison: GreaterThanOrEqual},
		},
		Workloads: []Workload{{
			Label: "a", FirstFailingConcurrency: intp(1), BoundBy: []string{"goodput", "errors"},
			PassingTrials: []Trial{},
			FailingTrials: []Trial{{Trial: 1, Concurrency: 1, GoodputPercent: &goodput, Correctness: Correctness{Errors: 1, ProfilingRecords: 1}, SLOs: []SLOResult{
				{Metric: MetricTTFT, Percentile: 95, Value: 12.5, Met: true},
				{Metric: MetricGoodput, Value: 0, Met: false},
			}}},
		}},
	}
	raw, err := Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"slos": [`, `"bound_by": [`, `"goodput_percent": 0`, `"met": false`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("written document lacks %s:\n%s", want, raw)
		}
	}
	if strings.Contains(string(raw), `"slo":`) {
		t.Errorf("a new document has no legacy slo block:\n%s", raw)
	}
	back, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Marshal(back)
	if err != nil || string(again) != string(raw) {
		t.Fatalf("round trip changed the document (%v):\n%s\nvs\n%s", err, again, raw)
	}
	if got := back.Objectives(); len(got) != 2 || got[1].Percentile != 0 || got[1].Metric != MetricGoodput {
		t.Fatalf("objectives read back as %+v", got)
	}
	if tr := back.Workloads[0].FailingTrials[0]; tr.GoodputPercent == nil || *tr.GoodputPercent != 0 || len(tr.SLOs) != 2 {
		t.Fatalf("trial read back as %+v", tr)
	}
	bad := strings.Replace(string(raw), `"threshold_ms": 90,`, `"percentile": 50, "threshold_ms": 90,`, 1)
	if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "slos[1].percentile: goodput takes no percentile") {
		t.Fatalf("goodput with a percentile: %v", err)
	}
}

// Every trial of a workload, with full statistics, kind, verdict and stopped_early, is
// written and read back unchanged; stopped_early is written even when false.
func TestAllTrialsRoundTrip(t *testing.T) {
	t.Parallel()
	full := Stats{Avg: 1, Min: 0.5, Max: 3, Std: 0.25, P1: 0.5, P5: 0.6, P10: 0.7, P25: 0.8, P50: 1, P75: 1.2, P90: 2, P95: 2.5, P99: 2.9}
	doc := &Document{
		SLOs: []SLO{{Metric: MetricTTFT, Percentile: 95, ThresholdMs: 10, Comparison: StrictlyLessThan}},
		Workloads: []Workload{{Label: "a", MaximumPassingConcurrency: intp(1), FirstFailingConcurrency: intp(2),
			PassingTrials: []Trial{}, FailingTrials: []Trial{},
			AllTrials: []Trial{
				{Trial: 1, Concurrency: 2, Kind: "probe", Verdict: "fail", StoppedEarly: true},
				{Trial: 1, Concurrency: 1, Kind: "confirmation", Verdict: "pass", TTFTMs: full, TTSTMs: &full, InterChunkLatencyMs: &full},
			}}},
	}
	raw, err := Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"stopped_early": false`, `"stopped_early": true`, `"kind": "probe"`, `"verdict": "pass"`,
		`"ttst_ms": {`, `"inter_chunk_latency_ms": {`, `"p10": 0.7`, `"std": 0.25`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("written document lacks %s", want)
		}
	}
	back, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Workloads[0].AllTrials; len(got) != 2 || got[1].TTFTMs != full || *got[1].TTSTMs != full || !got[0].StoppedEarly || got[1].Kind != "confirmation" {
		t.Fatalf("trials read back as %+v", got)
	}
	if again, _ := Marshal(back); string(again) != string(raw) {
		t.Fatalf("second write differs:\n%s\nvs\n%s", again, raw)
	}
	bad := strings.Replace(string(raw), `"kind": "probe"`, `"kind": "warmup"`, 1)
	if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), `workloads[0].trials[0].kind: "warmup" is not one of probe, confirmation`) {
		t.Fatalf("bad kind: %v", err)
	}
}

// An error summary is optional and additive: it round-trips, and a reader that does not know
// it still finds a schema v1 document.
func TestRoundTripErrorSummary(t *testing.T) {
	t.Parallel()
	d := parseReference(t)
	d.Workloads[0].FailingTrials[0].ErrorSummary = []ErrorCount{
		{Kind: "http_status", HTTPStatus: 503, Count: 2, Example: "HTTP 503 from http://h:1/v1/chat/completions: overloaded"},
		{Kind: "stalled", Count: 1, Example: "stalled while streaming (after 3 content chunks): no byte from http://h:1/v1/chat/completions for 5m0s (trial.stall_timeout)"},
	}
	out, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Workloads[0].FailingTrials[0].ErrorSummary; !reflect.DeepEqual(got, d.Workloads[0].FailingTrials[0].ErrorSummary) {
		t.Fatalf("error summary after round trip: %+v", got)
	}
	if back.Workloads[0].PassingTrials[0].ErrorSummary != nil {
		t.Fatal("a trial without failures grew an error summary")
	}
	if bytes.Count(out, []byte(`"error_summary"`)) != 1 {
		t.Fatalf("error_summary written for trials without failures:\n%s", out)
	}

	bad := bytes.Replace(out, []byte(`"count": 2`), []byte(`"count": 0`), 1)
	if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "workloads[0].failing_trials[0].error_summary[0].count: must be at least 1") {
		t.Fatalf("err = %v, want the count refused with its path", err)
	}
}

// A server that reports no KV pool (llama.cpp) is null in the document and "not reported" in
// the Markdown, never a pool of 0 tokens.
func TestUnreportedTokenPoolIsNull(t *testing.T) {
	t.Parallel()
	doc := `{"schema_version":1,"experiment":{"image_tag":"","image_digest":"","model":"m","checkpoint":"","hardware":"","driver":"","kernel":"","tensor_parallelism":1,"context_length":2048,"physical_token_pool":null,"speculative_mode":null},` +
		`"aiperf":{"version":"x","arrival_pattern":"a","streaming":true,"server_token_count":true,"temperature":0,"ignore_eos":true,"warmups_per_trial":0,"measured_requests_per_trial":1,"independent_trials_per_boundary_side":1,"cache_policy":"not flushed"},` +
		`"slo":{"metric":"time_to_first_token","percentile":95,"threshold_ms":1000,"comparison":"strictly_less_than","all_confirmation_trials_must_pass":true},"workloads":[],` +
		`"correctness_total":{"warmup_records":0,"unique_warmup_prompts":0,"warmup_profile_prompt_overlap":0,"profiling_records":0,"http_200":0,"unique_prompts":0,"unique_outputs":0,"generated_chunks":0,"generated_utf8_bytes":0,"completion_tokens_total":0,"finish_reason_length":0,"errors":0,"cancelled":false,"output_length_mismatches":0}}`
	d, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if d.Experiment.PhysicalTokenPool != nil {
		t.Fatalf("pool = %d, want nil", *d.Experiment.PhysicalTokenPool)
	}
	out, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"physical_token_pool": null`) {
		t.Errorf("null pool not written back as null:\n%s", out)
	}
	if md := Markdown(d); !strings.Contains(md, "physical token pool not reported") || strings.Contains(md, "pool 0") {
		t.Errorf("markdown does not say the pool is unknown:\n%s", md)
	}
}
