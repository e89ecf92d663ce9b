package metrics

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// at is t0 plus ms milliseconds.
func at(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }

// req is a successful measured request; timestamps in ms after t0.
type req struct {
	prompt                  string
	sent, first, last, done float64
	second                  float64 // second content chunk; 0: none
	osl, promptTokens       int
	chunks, bytes           int
	hash                    uint64
	finish                  string
}

func (q req) record(index int) load.RequestResult {
	finish := q.finish
	if finish == "" {
		finish = "length"
	}
	var second time.Time
	if q.second > 0 {
		second = at(q.second)
	}
	return load.RequestResult{
		Index: index, Prompt: q.prompt, RequestedOutputTokens: 20,
		Sent: at(q.sent), FirstContent: at(q.first), LastContent: at(q.last), Done: at(q.done),
		SecondContent: second,
		ContentChunks: q.chunks, ContentBytes: q.bytes, OutputHash: q.hash,
		UsageReported: true, PromptTokens: q.promptTokens, CompletionTokens: q.osl,
		FinishReason: finish, HTTPStatus: 200,
	}
}

func warmup(index int, prompt string) load.RequestResult {
	r := req{prompt: prompt, sent: -500, first: -400, last: -100, done: -90, osl: 20, chunks: 20, bytes: 99, hash: 99}.record(index)
	r.Warmup = true
	return r
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestSummarize(t *testing.T) {
	t.Parallel()
	records := []load.RequestResult{
		warmup(0, "w1"),
		warmup(1, "w2"),
		// TTFT 100, latency 1100, ITL (1100−100)/(11−1) = 100 ms → 10 tok/s.
		req{prompt: "a", sent: 0, first: 100, second: 150, last: 1100, done: 1110, osl: 11, promptTokens: 50, chunks: 11, bytes: 40, hash: 1}.record(2),
		// TTFT 200, latency 1200, ITL 1000/20 = 50 ms → 20 tok/s.
		req{prompt: "b", sent: 10, first: 210, second: 260, last: 1210, done: 1220, osl: 21, promptTokens: 52, chunks: 20, bytes: 80, hash: 2}.record(3),
		// Speculative decoding: 6 tokens in 2 chunks. ITL stays per token: 400/5 = 80 ms →
		// 12.5 tok/s, not 400/1 per chunk. Same output as the one before (hash 2).
		req{prompt: "c", sent: 20, first: 320, second: 720, last: 720, done: 730, osl: 6, promptTokens: 49, chunks: 2, bytes: 30, hash: 2}.record(4),
		// Reasoning-first stream: the load package set FirstContent at the first
		// reasoning_content chunk; one token only, so no ITL. Its response ends last (3030
		// ms), which does not stretch the duration: that ends at the last content chunk.
		req{prompt: "d", sent: 30, first: 430, last: 430, done: 3030, osl: 1, promptTokens: 51, chunks: 1, bytes: 5, hash: 3, finish: "stop"}.record(5),
	}
	got, err := Summarize(records, 20)
	if err != nil {
		t.Fatal(err)
	}
	// Duration 0 → 1210 ms (b's last content chunk); Σ OSL = 11+21+6+1 = 39.
	want := results.Trial{
		// TTFT [100 200 300 400]: ranks 3q/100, e.g. p50 rank 1.5 → 250; p95 rank 2.85 → 385;
		// std √((150²+50²+50²+150²)/4) = √12500.
		TTFTMs: results.Stats{Avg: 250, Min: 100, Max: 400, Std: math.Sqrt(12500),
			P1: 103, P5: 115, P10: 130, P25: 175, P50: 250, P75: 325, P90: 370, P95: 385, P99: 397},
		// latency sorted [400 700 1100 1200]: p50 → 900; p95 → 1200−0.15·100; p99 → 1200−0.03·100;
		// mean 850, std √((450²+150²+250²+350²)/4) = √102500.
		RequestLatencyMs: results.Stats{Avg: 850, Min: 400, Max: 1200, Std: math.Sqrt(102500),
			P1: 409, P5: 445, P10: 490, P25: 625, P50: 900, P75: 1125, P90: 1170, P95: 1185, P99: 1197},
		// ITL sorted [50 80 100]: ranks 2q/100; p50 → 80; p95 rank 1.9 → 98; p99 rank 1.98 → 99.6.
		ITLMs: results.Stats{Avg: 230.0 / 3, Min: 50, Max: 100, Std: math.Sqrt((math.Pow(50-230.0/3, 2) + math.Pow(80-230.0/3, 2) + math.Pow(100-230.0/3, 2)) / 3),
			P1: 50.6, P5: 53, P10: 56, P25: 65, P50: 80, P75: 90, P90: 96, P95: 98, P99: 99.6},
		OutputThroughputTPS: 39 / 1.21,
		// per user [10 20 12.5]: avg 42.5/3; sorted [10 12.5 20] p50 12.5, p95 rank 1.9 → 19.25.
		PerUserOutputThroughputTPS: results.Stats{Avg: 42.5 / 3, Min: 10, Max: 20,
			Std: math.Sqrt((math.Pow(10-42.5/3, 2) + math.Pow(20-42.5/3, 2) + math.Pow(12.5-42.5/3, 2)) / 3),
			P1:  10.05, P5: 10.25, P10: 10.5, P25: 11.25, P50: 12.5, P75: 16.25, P90: 18.5, P95: 19.25, P99: 19.85},
		// TTST [50 50 400] (d streamed one chunk): p75 rank 1.5 → 225, p99 rank 1.98 → 393.
		TTSTMs: &results.Stats{Avg: 500.0 / 3, Min: 50, Max: 400,
			Std: math.Sqrt((2*math.Pow(50-500.0/3, 2) + math.Pow(400-500.0/3, 2)) / 3),
			P1:  50, P5: 50, P10: 50, P25: 50, P50: 50, P75: 225, P90: 330, P95: 365, P99: 393},
		// Inter-chunk: a 1000/10 = 100, b 1000/19, c 400/1; sorted [1000/19 100 400].
		InterChunkLatencyMs: &results.Stats{Avg: (100 + 1000.0/19 + 400) / 3, Min: 1000.0 / 19, Max: 400,
			Std: math.Sqrt((math.Pow(100-(500+1000.0/19)/3, 2) + math.Pow(1000.0/19-(500+1000.0/19)/3, 2) + math.Pow(400-(500+1000.0/19)/3, 2)) / 3),
			P1:  1000.0/19 + 0.02*(100-1000.0/19), P5: 1000.0/19 + 0.1*(100-1000.0/19), P10: 1000.0/19 + 0.2*(100-1000.0/19),
			P25: 1000.0/19 + 0.5*(100-1000.0/19), P50: 100, P75: 250, P90: 340, P95: 370, P99: 394},
		RequestThroughputRPS:   4 / 1.21,
		BenchmarkDurationS:     1.21,
		ServerPromptTokens:     results.MinMax{Min: 49, Max: 52},
		ServerCompletionTokens: results.MinMax{Min: 1, Max: 21},
		Correctness: results.Correctness{
			WarmupRecords: 2, UniqueWarmupPrompts: 2, WarmupProfilePromptOverlap: 0,
			ProfilingRecords: 4, HTTP200: 4, UniquePrompts: 4,
			UniqueOutputs:         3,               // hashes 1, 2, 2, 3
			GeneratedChunks:       11 + 20 + 2 + 1, // measured only, not the warmups' 20 each
			GeneratedUTF8Bytes:    40 + 80 + 30 + 5,
			CompletionTokensTotal: 39,
			FinishReasonLength:    3,
			// requested 20: tolerance min(1, 50) = 1; 11, 6 and 1 are off by more, 21 is not.
			OutputLengthMismatches: 3,
		},
	}
	assertTrial(t, got, want)
}

func TestSummarizeFailures(t *testing.T) {
	t.Parallel()
	serverError := load.RequestResult{Index: 1, Prompt: "e500", RequestedOutputTokens: 20, Sent: at(5), Done: at(9000), HTTPStatus: 500, Err: "HTTP 500"}
	brokenStream := req{prompt: "broken", sent: 10, first: 50, last: 60, done: 61, osl: 0, chunks: 3, bytes: 9, hash: 7}.record(2)
	brokenStream.UsageReported, brokenStream.Err = false, "unexpected EOF"
	cancelled := req{prompt: "cancel", sent: 15, first: 30, last: 40, done: 45, chunks: 2, bytes: 4, hash: 8}.record(3)
	cancelled.UsageReported, cancelled.Cancelled = false, true
	empty := req{prompt: "empty", sent: 20, done: 25, osl: 0, hash: 9}.record(4)
	empty.FirstContent, empty.LastContent = time.Time{}, time.Time{}
	records := []load.RequestResult{
		req{prompt: "ok1", sent: 0, first: 100, last: 2100, done: 2100, osl: 21, promptTokens: 30, chunks: 21, bytes: 50, hash: 1}.record(0),
		serverError, brokenStream, cancelled, empty,
		req{prompt: "ok2", sent: 20, first: 320, last: 1320, done: 1330, osl: 11, promptTokens: 31, chunks: 11, bytes: 25, hash: 2}.record(5),
	}
	got, err := Summarize(records, 20)
	if err != nil {
		t.Fatal(err)
	}
	// Latency metrics over the two successes only: TTFT [100 300], latency [2100 1300],
	// ITL [100 100]. Duration runs over the successes only (AIPerf's valid requests), 0 →
	// 2100 ms: the 500 that ended at 9000 ms does not stretch it. With two values,
	// the q-th percentile is low + (high − low)·q/100 and the std half their distance.
	want := results.Trial{
		TTFTMs: results.Stats{Avg: 200, Min: 100, Max: 300, Std: 100,
			P1: 102, P5: 110, P10: 120, P25: 150, P50: 200, P75: 250, P90: 280, P95: 290, P99: 298},
		RequestLatencyMs: results.Stats{Avg: 1700, Min: 1300, Max: 2100, Std: 400,
			P1: 1308, P5: 1340, P10: 1380, P25: 1500, P50: 1700, P75: 1900, P90: 2020, P95: 2060, P99: 2092},
		ITLMs:                      constStats(100),
		OutputThroughputTPS:        32 / 2.1,
		PerUserOutputThroughputTPS: constStats(10),
		RequestThroughputRPS:       2 / 2.1,
		BenchmarkDurationS:         2.1,
		ServerPromptTokens:         results.MinMax{Min: 30, Max: 31},
		ServerCompletionTokens:     results.MinMax{Min: 11, Max: 21},
		Correctness: results.Correctness{
			ProfilingRecords: 6,
			HTTP200:          5, // all but the 500; a 200 whose stream failed still got a 200
			UniquePrompts:    6,
			UniqueOutputs:    2,
			GeneratedChunks:  21 + 11, GeneratedUTF8Bytes: 50 + 25, CompletionTokensTotal: 32,
			FinishReasonLength: 2,
			Errors:             3, // the 500, the broken stream, the 200 without content
			Cancelled:          true,
			// 11 is 9 off 20 (tolerance 1); 21 is 1 off.
			OutputLengthMismatches: 1,
		},
	}
	assertTrial(t, got, want)
}

func TestSummarizeNoSuccess(t *testing.T) {
	t.Parallel()
	records := []load.RequestResult{
		{Index: 0, Prompt: "x", Sent: at(0), Done: at(1000), Err: "connection refused"},
		{Index: 1, Prompt: "y", Sent: at(10), Done: at(500), HTTPStatus: 401, Err: "HTTP 401"},
	}
	got, err := Summarize(records, 20)
	if !errors.Is(err, ErrNoSuccessfulRequests) {
		t.Fatalf("err = %v, want ErrNoSuccessfulRequests", err)
	}
	// No valid request, so no duration (AIPerf has none either) and no throughput.
	want := results.Trial{
		Correctness: results.Correctness{ProfilingRecords: 2, UniquePrompts: 2, Errors: 2},
	}
	assertTrial(t, got, want)
}

func TestSummarizeNoUsage(t *testing.T) {
	t.Parallel()
	r := req{prompt: "a", sent: 0, first: 100, last: 200, done: 200, osl: 5, chunks: 5, bytes: 5, hash: 1}.record(0)
	r.UsageReported, r.CompletionTokens = false, 0
	got, err := Summarize([]load.RequestResult{r}, 5)
	if !errors.Is(err, ErrNoUsage) {
		t.Fatalf("err = %v, want ErrNoUsage", err)
	}
	// Timing metrics survive; token-based ones are unknown, not zero-OSL mismatches.
	if got.TTFTMs.P50 != 100 || got.ITLMs.P50 != 0 || got.Correctness.OutputLengthMismatches != 0 || got.OutputThroughputTPS != 0 {
		t.Errorf("got %+v", got)
	}
}

func TestSummarizeOverlapAndDuplicatePrompts(t *testing.T) {
	t.Parallel()
	records := []load.RequestResult{
		warmup(0, "a"), warmup(1, "b"), warmup(2, "b"),
		req{prompt: "b", sent: 0, first: 1, last: 2, done: 3, osl: 20, hash: 1}.record(3),
		req{prompt: "c", sent: 0, first: 1, last: 2, done: 3, osl: 20, hash: 1}.record(4),
		req{prompt: "c", sent: 0, first: 1, last: 2, done: 3, osl: 20, hash: 1}.record(5),
	}
	got, _ := Summarize(records, 20)
	c := got.Correctness
	// warmups {a, b}, measured {b, c}: b is in both.
	if c.WarmupRecords != 3 || c.UniqueWarmupPrompts != 2 || c.ProfilingRecords != 3 ||
		c.UniquePrompts != 2 || c.WarmupProfilePromptOverlap != 1 || c.UniqueOutputs != 1 {
		t.Errorf("correctness = %+v", c)
	}
}

func TestOutputLengthMismatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		osl, requested int
		want           bool
	}{
		{"exact", 512, 512, false},
		{"512: 5% = 25.6 allows 25 short", 487, 512, false},
		{"512: 26 short is too many", 486, 512, true},
		{"512: 25 long", 537, 512, false},
		{"512: 26 long", 538, 512, true},
		{"1000: 5% = 50 = the cap, 50 allowed", 950, 1000, false},
		{"1000: 51 is too many", 949, 1000, true},
		{"2048: the cap of 50 wins over 102.4", 1998, 2048, false},
		{"2048: 51 short is too many", 1997, 2048, true},
		{"2048: 51 long is too many", 2099, 2048, true},
		{"20: tolerance 1", 19, 20, false},
		{"20: 2 off", 18, 20, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := OutputLengthMismatch(tc.osl, tc.requested); got != tc.want {
				t.Errorf("OutputLengthMismatch(%d, %d) = %t, want %t", tc.osl, tc.requested, got, tc.want)
			}
		})
	}
}

func TestSummarizeFallsBackToRecordedRequest(t *testing.T) {
	t.Parallel()
	r := req{prompt: "a", sent: 0, first: 1, last: 2, done: 3, osl: 18}.record(0) // RequestedOutputTokens 20
	got, _ := Summarize([]load.RequestResult{r}, 0)
	if got.Correctness.OutputLengthMismatches != 1 {
		t.Errorf("mismatches = %v, want 1 (18 vs the record's 20, tolerance 1)", got.Correctness.OutputLengthMismatches)
	}
}

// TestSummarizeReferenceShape rebuilds the throughput arithmetic of the reference file's
// first 2K / 512 trial: 64 requests of 512 tokens over 128.362401601 s.
func TestSummarizeReferenceShape(t *testing.T) {
	t.Parallel()
	const durationNs = 128362401601
	var records []load.RequestResult
	for i := range 64 {
		r := req{prompt: string(rune('A' + i)), sent: float64(i), first: float64(i) + 4000, last: float64(i) + 20000, done: float64(i) + 20001, osl: 512, promptTokens: 2099 + i%4, hash: uint64(i)}.record(i)
		r.RequestedOutputTokens = 512
		records = append(records, r)
	}
	// The last request ends the duration: shift it so its last content chunk is there.
	last := &records[63]
	shift := t0.Add(durationNs).Sub(last.LastContent)
	last.Sent, last.FirstContent, last.LastContent, last.Done = last.Sent.Add(shift), last.FirstContent.Add(shift), last.LastContent.Add(shift), last.Done.Add(shift)
	got, err := Summarize(records, 512)
	if err != nil {
		t.Fatal(err)
	}
	// The reference: output_throughput_tps 255.27724311247786, request_throughput_rps
	// 0.4985883654540583 (its duration prints as 128.36240160100002; hence the tolerance).
	if !near(got.OutputThroughputTPS, 255.27724311247786) || !near(got.RequestThroughputRPS, 0.4985883654540583) ||
		!near(got.BenchmarkDurationS, 128.362401601) {
		t.Errorf("throughputs %v %v duration %v", got.OutputThroughputTPS, got.RequestThroughputRPS, got.BenchmarkDurationS)
	}
	if got.ServerPromptTokens != (results.MinMax{Min: 2099, Max: 2102}) || got.ServerCompletionTokens != (results.MinMax{Min: 512, Max: 512}) {
		t.Errorf("token ranges %+v %+v", got.ServerPromptTokens, got.ServerCompletionTokens)
	}
	// ITL = 16000/511 ms for all; per-user = 511/16 tok/s.
	if !near(got.ITLMs.P95, 16000.0/511) || !near(got.PerUserOutputThroughputTPS.P50, 511.0/16) {
		t.Errorf("itl %v per-user %v", got.ITLMs, got.PerUserOutputThroughputTPS)
	}
	if c := got.Correctness; c.CompletionTokensTotal != 32768 || c.FinishReasonLength != 64 || c.UniqueOutputs != 64 || c.OutputLengthMismatches != 0 {
		t.Errorf("correctness %+v", c)
	}
}

func TestTotals(t *testing.T) {
	t.Parallel()
	a := results.Trial{Correctness: results.Correctness{
		WarmupRecords: 8, UniqueWarmupPrompts: 8, WarmupProfilePromptOverlap: 0, ProfilingRecords: 64, HTTP200: 64,
		UniquePrompts: 64, UniqueOutputs: 63, GeneratedChunks: 8851, GeneratedUTF8Bytes: 131782,
		CompletionTokensTotal: 32768, FinishReasonLength: 64, Errors: 0, OutputLengthMismatches: 1,
	}}
	b := results.Trial{Correctness: results.Correctness{
		WarmupRecords: 8, UniqueWarmupPrompts: 7, WarmupProfilePromptOverlap: 1, ProfilingRecords: 64, HTTP200: 62,
		UniquePrompts: 64, UniqueOutputs: 64, GeneratedChunks: 8453, GeneratedUTF8Bytes: 133801,
		CompletionTokensTotal: 32000, FinishReasonLength: 60, Errors: 2, Cancelled: true, OutputLengthMismatches: 2,
	}}
	want := results.Correctness{
		WarmupRecords: 16, UniqueWarmupPrompts: 15, WarmupProfilePromptOverlap: 1, ProfilingRecords: 128, HTTP200: 126,
		UniquePrompts: 128, UniqueOutputs: 127, GeneratedChunks: 17304, GeneratedUTF8Bytes: 265583,
		CompletionTokensTotal: 64768, FinishReasonLength: 124, Errors: 2, Cancelled: true, OutputLengthMismatches: 3,
		UniquenessScope: "within_each_trial",
	}
	if got := Totals(a, b); got != want {
		t.Errorf("Totals =\n%+v\nwant\n%+v", got, want)
	}
	if got := Totals(); got != (results.Correctness{UniquenessScope: "within_each_trial"}) {
		t.Errorf("Totals() = %+v", got)
	}
}

// cached_prompt_tokens sums while every trial knows it; one trial whose server could not
// tell (null) or that does not record it makes the total null, never a smaller number.
func TestTotalsCachedPromptTokens(t *testing.T) {
	t.Parallel()
	known := func(n int) *results.CacheCount { return &results.CacheCount{Tokens: n, Known: true} }
	trial := func(c *results.CacheCount, beyond int) results.Trial {
		return results.Trial{Correctness: results.Correctness{CachedPromptTokens: c, RequestsCachedBeyondSharedPrefix: beyond}}
	}
	cases := []struct {
		name       string
		trials     []results.Trial
		want       *results.CacheCount // nil: absent
		wantJSON   string
		wantBeyond int
	}{
		{"all known", []results.Trial{trial(known(120), 1), trial(known(0), 0), trial(known(37), 2)}, known(157), "157", 3},
		{"one null", []results.Trial{trial(known(120), 1), trial(&results.CacheCount{}, 0), trial(known(37), 0)}, &results.CacheCount{}, "null", 1},
		{"one not recorded", []results.Trial{trial(known(120), 0), trial(nil, 0)}, &results.CacheCount{}, "null", 0},
		{"none recorded", []results.Trial{trial(nil, 0), trial(nil, 0)}, nil, "", 0},
		{"all zero is known zero", []results.Trial{trial(known(0), 0), trial(known(0), 0)}, known(0), "0", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Totals(tc.trials...)
			if (got.CachedPromptTokens == nil) != (tc.want == nil) || (tc.want != nil && *got.CachedPromptTokens != *tc.want) {
				t.Fatalf("cached_prompt_tokens = %+v, want %+v", got.CachedPromptTokens, tc.want)
			}
			if got.RequestsCachedBeyondSharedPrefix != tc.wantBeyond {
				t.Errorf("requests_cached_beyond_shared_prefix = %d, want %d", got.RequestsCachedBeyondSharedPrefix, tc.wantBeyond)
			}
			raw, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			if v, ok := m["cached_prompt_tokens"]; string(v) != tc.wantJSON || ok != (tc.wantJSON != "") {
				t.Errorf("correctness_total JSON has cached_prompt_tokens %s (present %v), want %q", v, ok, tc.wantJSON)
			}
		})
	}
}

func assertTrial(t *testing.T, got, want results.Trial) {
	t.Helper()
	stats := func(name string, got, want results.Stats) {
		g, w := statValues(got), statValues(want)
		for i, k := range results.StatKeys {
			if !near(g[i], w[i]) {
				t.Errorf("%s %s = %.17g, want %.17g", name, k, g[i], w[i])
			}
		}
	}
	stats("ttft", got.TTFTMs, want.TTFTMs)
	stats("latency", got.RequestLatencyMs, want.RequestLatencyMs)
	stats("itl", got.ITLMs, want.ITLMs)
	stats("per-user", got.PerUserOutputThroughputTPS, want.PerUserOutputThroughputTPS)
	if want.TTSTMs != nil {
		stats("ttst", deref(got.TTSTMs), *want.TTSTMs)
	}
	if want.InterChunkLatencyMs != nil {
		stats("inter-chunk", deref(got.InterChunkLatencyMs), *want.InterChunkLatencyMs)
	}
	floats := []struct {
		name      string
		got, want float64
	}{
		{"output tps", got.OutputThroughputTPS, want.OutputThroughputTPS},
		{"request rps", got.RequestThroughputRPS, want.RequestThroughputRPS},
		{"duration", got.BenchmarkDurationS, want.BenchmarkDurationS},
		{"prompt tokens min", got.ServerPromptTokens.Min, want.ServerPromptTokens.Min}, {"prompt tokens max", got.ServerPromptTokens.Max, want.ServerPromptTokens.Max},
		{"completion tokens min", got.ServerCompletionTokens.Min, want.ServerCompletionTokens.Min}, {"completion tokens max", got.ServerCompletionTokens.Max, want.ServerCompletionTokens.Max},
	}
	for _, f := range floats {
		if !near(f.got, f.want) {
			t.Errorf("%s = %.17g, want %.17g", f.name, f.got, f.want)
		}
	}
	if got.Correctness != want.Correctness {
		t.Errorf("correctness =\n%+v\nwant\n%+v", got.Correctness, want.Correctness)
	}
}

func deref(s *results.Stats) results.Stats {
	if s == nil {
		return results.Stats{}
	}
	return *s
}

// statValues lists a Stats' values in results.StatKeys order.
func statValues(s results.Stats) []float64 {
	return []float64{s.Avg, s.Min, s.Max, s.Std, s.P1, s.P5, s.P10, s.P25, s.P50, s.P75, s.P90, s.P95, s.P99}
}

// constStats is the Stats of values that are all v.
func constStats(v float64) results.Stats {
	return results.Stats{Avg: v, Min: v, Max: v, P1: v, P5: v, P10: v, P25: v, P50: v, P75: v, P90: v, P95: v, P99: v}
}

// Connection set-up (connect + TLS before the request was sent) is reported apart from TTFT
// over the successful measured requests, 0 for a reused connection.
func TestSummarizeConnectionSetup(t *testing.T) {
	t.Parallel()
	a := req{prompt: "a", sent: 0, first: 100, last: 200, done: 210, osl: 3, chunks: 3}.record(0)
	a.Connect, a.TLSHandshake = 2*time.Millisecond, 6*time.Millisecond
	b := req{prompt: "b", sent: 0, first: 120, last: 220, done: 230, osl: 3, chunks: 3}.record(1) // reused connection
	failed := load.RequestResult{Index: 2, Prompt: "c", Sent: at(0), Done: at(5), Connect: time.Second, Err: "reset", HTTPStatus: 0}
	got, _ := Summarize([]load.RequestResult{a, b, failed}, 3)
	// Values [8 0]: mean 4, std 4, p95 = 0 + 0.95·8.
	if s := got.ConnectionSetupMs; s == nil || s.Avg != 4 || s.Max != 8 || s.Min != 0 || s.Std != 4 || !near(s.P95, 7.6) {
		t.Fatalf("connection setup %+v", got.ConnectionSetupMs)
	}
	if got.TTFTMs.Min != 100 {
		t.Errorf("TTFT must not include the set-up: min %v", got.TTFTMs.Min)
	}
}
