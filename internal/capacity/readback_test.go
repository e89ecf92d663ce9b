package capacity

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/compare"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// Every document the search writes is one the provider reads back: for every axis
// (concurrency, rate, replay, users), against every engine face the truth tests speak (with
// and without a cached-token report, the case that once wrote a -1 every reader refused),
// with passing, failing, stopped and errored trials, the document parses, marshals back
// byte for byte, recomputes from its records, renders as Markdown, SVG, CSV and OpenMetrics,
// and compares with itself without a regression. An unknown figure is absent, never a
// sentinel number.
func TestEveryWrittenDocumentReadsBack(t *testing.T) {
	t.Parallel()
	type face struct {
		name string
		opts simengine.Options
	}
	faces := []face{
		{"generic", simengine.Options{}},
		{"sglang-0.4", simengine.Options{Protocol: simengine.SGLang04}},
		{"sglang", simengine.Options{Protocol: simengine.SGLang}},
		{"sglang without cache report", simengine.Options{Protocol: simengine.SGLang, NoCacheReport: true}},
		{"vllm", simengine.Options{Protocol: simengine.VLLM, DevMode: true}},
		{"vllm without prompt token details", simengine.Options{Protocol: simengine.VLLM, DevMode: true, NoCacheReport: true}},
		{"llamacpp", simengine.Options{Protocol: simengine.LlamaCpp}},
	}
	type shape struct {
		axis  string
		setup func(t *testing.T, cfg *Config)
	}
	shapes := []shape{
		{"concurrency", func(*testing.T, *Config) {}},
		{"rate", func(_ *testing.T, cfg *Config) {
			cfg.OpenLoop = &OpenLoop{Arrival: load.Arrival{Pattern: load.ArrivalPoisson}, MinRate: 4, MaxRate: 16, Tolerance: 0.5}
		}},
		{"replay", func(t *testing.T, cfg *Config) {
			cfg.Workloads = []Workload{{Label: "recorded", TraceFile: constantTrace(t, 12, 150), TraceBlockTokens: 32}}
			cfg.OpenLoop = &OpenLoop{Speedup: true, MinRate: 0.5, MaxRate: 3, Tolerance: 0.5}
		}},
		{"users", func(_ *testing.T, cfg *Config) {
			cfg.Workloads = []Workload{{Label: "chat", InputTokens: 32, OutputTokens: 8, Conversation: &Conversation{
				Turns: 2, SystemPromptTokens: 16, WarmupConversations: 1, Think: load.Think{Distribution: load.ThinkConstant, Mean: 50 * time.Millisecond}}}}
			cfg.CacheFlush = "none" // llama.cpp's flush turns its cache off, which a conversation needs
		}},
	}
	// Objectives that pass low and fail high, one that fails every trial (probes stop early,
	// nothing passes) and an engine whose every answer is degenerate (trials in error).
	type outcome struct {
		name    string
		slo     float64
		fault   simengine.OutputFault
		wantCap bool
	}
	outcomes := []outcome{{"boundary", 150, "", true}, {"nothing passes", 1, "", false}, {"degenerate", 150, simengine.OutputExclamation, false}}
	// The runs mostly wait on the simulated engine's clock, so they run together (eight at a
	// time, beyond -parallel's one per CPU) and are judged one by one after.
	type run struct {
		name     string
		doc      *results.Document
		dir      string
		err      error
		reports  bool
		users    bool
		boundary bool
		outcome  string
	}
	var runs []*run
	var wg sync.WaitGroup
	slots := make(chan struct{}, 8)
	for _, f := range faces {
		for _, s := range shapes {
			for _, o := range outcomes {
				if o.name != "boundary" && f.name != "sglang" && f.name != "vllm without prompt token details" {
					continue // the other outcomes need one face with and one without a cache report
				}
				if s.axis == "users" && f.name == "generic" {
					continue // conversations' cache is modelled only behind a protocol face
				}
				opts := f.opts
				opts.Model, opts.ModelName, opts.OutputFault = simengine.TwoSlotModel(), "sim", o.fault
				opts.CachedPrefill = opts.Protocol != ""
				eng, err := simengine.NewServer(opts)
				if err != nil {
					t.Fatal(err)
				}
				srv := httptest.NewServer(eng)
				defer srv.Close()
				cfg := testConfig(srv.URL)
				cfg.MaxConcurrency, cfg.MeasuredRequests, cfg.ConfirmationTrials = 32, 6, 1
				cfg.SLOs[0].ThresholdMs = o.slo
				cfg.RecordsDirectory = t.TempDir()
				s.setup(t, &cfg)
				if o.fault != "" && cfg.Workloads[0].TraceFile == "" {
					cfg.Workloads[0].OutputTokens = 32 // enough text for the degenerate-output rules to judge
				}
				r := &run{name: fmt.Sprintf("%s/%s/%s", s.axis, f.name, o.name), dir: cfg.RecordsDirectory,
					reports: opts.Protocol == simengine.LlamaCpp || (opts.Protocol != "" && !opts.NoCacheReport),
					users:   s.axis == "users", boundary: o.name == "boundary", outcome: o.name}
				runs = append(runs, r)
				wg.Add(1)
				go func() {
					defer wg.Done()
					slots <- struct{}{}
					defer func() { <-slots }()
					r.doc, r.err = Run(context.Background(), cfg)
				}()
			}
		}
	}
	wg.Wait()
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			// A run that ends in error still returns what it measured, and the provider
			// writes that document too.
			if r.doc == nil {
				t.Fatal(r.err)
			}
			if r.err != nil && r.outcome != "degenerate" {
				t.Fatal(r.err)
			}
			if len(r.doc.Workloads) == 0 {
				// Degenerate output at the first trial ends the run with no workload measured.
				if r.err == nil || !strings.Contains(r.err.Error(), "degenerate") {
					t.Fatalf("no workload, error %v", r.err)
				}
				return
			}
			readsBack(t, r.doc, r.dir)
			verdicts := map[string]int{}
			stopped := 0
			for _, tr := range r.doc.Workloads[0].AllTrials {
				verdicts[tr.Verdict+" "+tr.Kind]++
				if tr.StoppedEarly {
					stopped++
				}
			}
			switch {
			case r.outcome == "nothing passes" && (verdicts["pass probe"]+verdicts["pass confirmation"] > 0):
				t.Errorf("verdicts %v, want only failures", verdicts)
			case r.outcome == "degenerate" && !strings.HasPrefix(r.name, "replay/") && verdicts["error probe"]+verdicts["error confirmation"] == 0:
				t.Errorf("verdicts %v, want trials in error", verdicts)
			}
			t.Logf("verdicts %v, %d stopped early, error %v", verdicts, stopped, r.err)
			if r.users && r.boundary {
				c := r.doc.Workloads[0].AllTrials[0].Conversations
				if c == nil || (c.LaterTurnCachedPercent != nil) != r.reports {
					t.Errorf("cached share %+v for a server that reports cached tokens: %v", c, r.reports)
				}
			}
		})
	}
}

// readsBack holds a document to what every reader of results_json does with it.
func readsBack(t *testing.T, doc *results.Document, recordsDir string) {
	t.Helper()
	raw, err := results.Marshal(doc)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	back, err := results.Parse(raw)
	if err != nil {
		t.Fatalf("the run's own document is refused: %v", err)
	}
	again, err := results.Marshal(back)
	if err != nil || !bytes.Equal(raw, again) {
		t.Fatalf("not byte-exact after a read: %v", err)
	}
	if bytes.Contains(raw, []byte(": -1,")) || bytes.Contains(raw, []byte(": -1\n")) {
		t.Errorf("a sentinel -1 in the document")
	}
	var trials int
	for _, w := range back.Workloads {
		trials += len(w.AllTrials)
	}
	if trials == 0 {
		t.Fatal("no trials")
	}
	if v, err := records.Verify(back, recordsDir); err != nil || !v.OK() {
		t.Errorf("recompute: %v %+v", err, v)
	}
	for name, out := range map[string]string{
		"markdown": results.Markdown(back), "svg": results.SVG(back), "csv": results.CSV(back),
		"openmetrics": results.OpenMetrics(back),
	} {
		if len(out) == 0 || strings.Contains(out, "NaN") || strings.Contains(out, "Inf") || strings.Contains(out, "-1 %") {
			t.Errorf("%s rendering: empty, NaN, Inf or a sentinel:\n%.2000s", name, out)
		}
	}
	if rows := strings.Count(results.CSV(back), "\n"); rows != trials+1 {
		t.Errorf("csv: %d rows for %d trials", rows, trials)
	}
	cmp := compare.Compare(back, back, compare.Options{})
	if len(cmp.Refused) > 0 || len(cmp.Regressed()) > 0 {
		t.Errorf("the document against itself: refused %q, regressed %+v", cmp.Refused, cmp.Regressed())
	}
	for _, w := range cmp.Workloads {
		for _, ob := range w.Objectives {
			if math.IsInf(ob.Change, 0) {
				t.Errorf("%s: infinite change against itself", w.Label)
			}
		}
	}
}
