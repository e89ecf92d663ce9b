package capacity

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

func TestEngineWarmupLevels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		maxRunning int
		want       []int
	}{
		{0, []int{1, 2, 4, 8}}, // the server did not say
		{1, []int{1}},
		{2, []int{1, 2}},
		{12, []int{1, 2, 4, 8, 12}},
		{16, []int{1, 2, 4, 8, 16}},
		{256, []int{1, 2, 4, 8, 16, 32, 64}},
	} {
		if got := engineWarmupLevels(tc.maxRunning); !slices.Equal(got, tc.want) {
			t.Errorf("engineWarmupLevels(%d) = %v, want %v", tc.maxRunning, got, tc.want)
		}
	}
}

// An engine that builds a kernel the first time it meets each prefill shape (simengine
// LazyPipelines: 400 ms a shape, where a compiled prefill takes a few ms) fails its first
// trial at concurrency 1 on a fresh server and is given no capacity, as llama.cpp on Vulkan
// was on an H200; with the engine warm-up it is measured in its steady state and holds
// concurrency 1. The prompts' lengths spread (input_tokens_stddev) so that the trial meets
// shapes its own single warmup did not. The server says it runs one request at a time, so
// the warm-up runs at concurrency 1 only.
func TestEngineWarmupMeasuresTheSteadyState(t *testing.T) {
	t.Parallel()
	run := func(warmup int) (maxPassing *int, notes []string) {
		eng, err := simengine.NewServer(simengine.Options{ModelName: "sim", LazyPipelines: 400 * time.Millisecond,
			Model: simengine.Model{Slots: 1, PrefillPerToken: 100 * time.Microsecond, DecodeStep: 5 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(eng)
		defer srv.Close()
		cfg := testConfig(srv.URL)
		cfg.Workloads[0].InputTokensStddev = 8
		cfg.MinConcurrency, cfg.MaxConcurrency, cfg.ConfirmationTrials = 1, 1, 2
		cfg.EngineWarmupRequests = warmup
		doc, _ := runRecorded(t, cfg)
		w := doc.Workloads[0]
		return w.MaximumPassingConcurrency, w.Notes
	}
	cold, coldNotes := run(0)
	if cold != nil {
		t.Errorf("without the warm-up the fresh engine held concurrency %d: the test's lazy kernels no longer fail a first trial", *cold)
	}
	if slices.ContainsFunc(coldNotes, func(n string) bool { return strings.HasPrefix(n, "engine warm-up") }) {
		t.Errorf("a run without the warm-up notes one: %q", coldNotes)
	}
	warm, notes := run(32)
	if warm == nil || *warm != 1 {
		t.Fatalf("with the warm-up: maximum passing %v, want 1; notes %q", warm, notes)
	}
	i := slices.IndexFunc(notes, func(n string) bool {
		return strings.HasPrefix(n, "engine warm-up before the first trial: 32 requests at each concurrency 1 (32 in all")
	})
	if i < 0 {
		t.Errorf("no engine warm-up note in %q", notes)
	}
}

// A replayed trace has no synthetic prompts to warm the engine with: refused at its attribute.
func TestEngineWarmupRefusesATrace(t *testing.T) {
	t.Parallel()
	cfg := replayConfig("http://127.0.0.1:1", constantTrace(t, 20, 200))
	cfg.StallTimeout, cfg.RequestTimeout = time.Minute, time.Minute
	if probs := cfg.Validate(); len(probs) != 0 {
		t.Fatalf("the replay configuration is not valid to begin with: %+v", probs)
	}
	cfg.EngineWarmupRequests = 4
	probs := cfg.Validate()
	if len(probs) != 1 || probs[0].Path.String() != "trial.engine_warmup_requests" || !strings.Contains(probs[0].Detail, "must be 0 when a workload replays a trace") ||
		!strings.Contains(probs[0].Detail, "workloads[0]") {
		t.Errorf("problems %+v, want one at trial.engine_warmup_requests naming workloads[0]", probs)
	}
}

// Left out, the warm-up is on for a server the provider launched on Vulkan or an Intel GPU
// (its experiment says so) and off otherwise, and off for a replay, which it cannot warm.
func TestDefaultEngineWarmupRequests(t *testing.T) {
	t.Parallel()
	synthetic := []Workload{{Label: "2K / 64", InputTokens: 2048, OutputTokens: 64}}
	replay := []Workload{{Label: "trace", TraceFile: "/traces/t.jsonl"}}
	for _, tc := range []struct {
		name      string
		exp       *results.Experiment
		workloads []Workload
		want      int
	}{
		{"vulkan", &results.Experiment{Accelerator: "vulkan"}, synthetic, 16},
		{"xpu", &results.Experiment{Accelerator: "xpu"}, synthetic, 16},
		{"cuda", &results.Experiment{Accelerator: "cuda"}, synthetic, 0},
		{"cpu", &results.Experiment{Accelerator: "cpu"}, synthetic, 0},
		{"an experiment from before the accelerator was recorded", &results.Experiment{Hardware: "vulkan"}, synthetic, 0},
		{"no experiment: an endpoint the provider did not launch", nil, synthetic, 0},
		{"vulkan replaying a trace", &results.Experiment{Accelerator: "vulkan"}, append(slices.Clone(synthetic), replay...), 0},
	} {
		if got := DefaultEngineWarmupRequests(Config{Experiment: tc.exp, Workloads: tc.workloads}); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
