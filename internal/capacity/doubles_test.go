package capacity

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// The benchmark against each engine's protocol double with cache_flush = "auto": it must
// identify the engine, flush (or disable the cache) by that engine's method before every
// trial, read the engine's metrics, and prove each trial's cache cold.
func TestRunAgainstEngineDoubles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		protocol simengine.Protocol
		opts     simengine.Options
		policy   string // what aiperf.cache_policy must say
		flushes  bool   // the double counts real flushes
		// serverLatency: the engine exports latency histograms (llama.cpp does not).
		serverLatency bool
	}{
		{simengine.SGLang04, simengine.Options{Version: "0.4.9"}, "(/flush_cache)", true, true},
		{simengine.SGLang, simengine.Options{Version: "0.5.10", AdminAPIKey: "sk-admin-test"}, "(/flush_cache)", true, true},
		{simengine.VLLM, simengine.Options{Version: "0.11.0", DevMode: true}, "(/reset_prefix_cache)", true, true},
		{simengine.LlamaCpp, simengine.Options{Version: "b6500-abc1234"}, "cache_prompt: false", false, false},
	}
	for _, tc := range tests {
		t.Run(string(tc.protocol), func(t *testing.T) {
			t.Parallel()
			opts := tc.opts
			opts.Protocol = tc.protocol
			eng := twoSlotEngine(t, opts)
			srv := httptest.NewServer(eng)
			defer srv.Close()
			cfg := testConfig(srv.URL)
			cfg.AdminAPIKey = opts.AdminAPIKey
			doc, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			w := doc.Workloads[0]
			if w.MaximumPassingConcurrency == nil || *w.MaximumPassingConcurrency != 2 {
				t.Errorf("maximum passing concurrency %v, want 2", w.MaximumPassingConcurrency)
			}
			p := doc.AIPerf.CachePolicy
			if !strings.Contains(p, tc.policy) || !strings.Contains(p, `cache_flush = "auto"`) || !strings.Contains(p, engineName(tc.protocol)) {
				t.Errorf("cache policy %q does not say that auto picked %s's method (%s)", p, tc.protocol, tc.policy)
			}
			st := eng.Stats()
			if tc.flushes && st.Flushes < int64(len(w.Trials())) {
				t.Errorf("%d flushes for %d confirmation trials", st.Flushes, len(w.Trials()))
			}
			// A 400 from SGLang (a request still finishing as the flush arrived) is retried;
			// a flush answered but not done must never happen.
			if st.FlushesIgnored != 0 {
				t.Errorf("%d flushes answered but not done: a flush was sent while the server was busy", st.FlushesIgnored)
			}
			if st.DeprecatedCalls != 0 {
				t.Errorf("%d calls to deprecated aliases; the canonical paths exist", st.DeprecatedCalls)
			}
			for _, tr := range w.Trials() {
				c := tr.Trial.Correctness
				if c.CachedPromptTokens == nil || !c.CachedPromptTokens.Known {
					t.Errorf("trial %s/%d: cached prompt tokens %+v, want a reported count", tr.Side, tr.Trial.Trial, c.CachedPromptTokens)
				}
				// vLLM leaves prompt_tokens_details out at 0 and rounds hits to whole 16-token
				// blocks, so its cold requests carry no field: read as 0, and the trial says so.
				notes := tr.Trial.Notes
				if tc.protocol == simengine.VLLM {
					if len(notes) != 1 || !strings.Contains(notes[0], "count as 0 cached prompt tokens") {
						t.Errorf("trial %s/%d: notes %q, want one saying the omitted fields count as 0", tr.Side, tr.Trial.Trial, notes)
					}
					notes = nil
				}
				if c.RequestsCachedBeyondSharedPrefix != 0 || len(notes) != 0 {
					t.Errorf("trial %s/%d: %d requests beyond the shared prefix, notes %q", tr.Side, tr.Trial.Trial, c.RequestsCachedBeyondSharedPrefix, notes)
				}
				sv := tr.Trial.Server
				if sv == nil || sv.PeakRunningRequests == nil {
					t.Fatalf("trial %s/%d: no server view: %+v", tr.Side, tr.Trial.Trial, sv)
				}
				// Two slots: the server never runs more than two at once.
				if *sv.PeakRunningRequests > 2 {
					t.Errorf("peak running %g on a two-slot server", *sv.PeakRunningRequests)
				}
				if tc.serverLatency != (sv.TTFTMs != nil) {
					t.Errorf("server TTFT %+v, want present=%v", sv.TTFTMs, tc.serverLatency)
				}
				if sv.TTFTMs != nil && sv.TTFTMs.Count < 8 {
					t.Errorf("server saw %d TTFTs, want at least the 8 measured requests", sv.TTFTMs.Count)
				}
			}
			if md := results.Markdown(doc); !strings.Contains(md, "Server-side view") {
				t.Error("Markdown report has no server-side view")
			}
		})
	}
}

func engineName(p simengine.Protocol) string {
	if strings.HasPrefix(string(p), "sglang") {
		return "sglang"
	}
	return string(p)
}

// A flush the server refuses fails the trial, clearly, within the idle bound.
func TestRunFailsOnRefusedFlush(t *testing.T) {
	t.Parallel()
	for _, p := range []simengine.Protocol{simengine.SGLang04, simengine.SGLang} {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			eng := twoSlotEngine(t, simengine.Options{Protocol: p, FlushFault: simengine.FlushRefused})
			srv := httptest.NewServer(eng)
			defer srv.Close()
			cfg := testConfig(srv.URL)
			cfg.IdleTimeout = 300 * time.Millisecond
			_, err := Run(context.Background(), cfg)
			if !errors.Is(err, engine.ErrFlushFailed) || !strings.Contains(err.Error(), "refused") {
				t.Fatalf("err = %v, want the refused flush", err)
			}
		})
	}
	t.Run("sglang admin key missing", func(t *testing.T) {
		t.Parallel()
		eng := twoSlotEngine(t, simengine.Options{Protocol: simengine.SGLang, AdminAPIKey: "sk-admin-test"})
		srv := httptest.NewServer(eng)
		defer srv.Close()
		_, err := Run(context.Background(), testConfig(srv.URL))
		if err == nil || !strings.Contains(err.Error(), "admin_api_key") {
			t.Fatalf("err = %v, want it to name admin_api_key", err)
		}
	})
	t.Run("vllm without dev mode", func(t *testing.T) {
		t.Parallel()
		eng := twoSlotEngine(t, simengine.Options{Protocol: simengine.VLLM})
		srv := httptest.NewServer(eng)
		defer srv.Close()
		_, err := Run(context.Background(), testConfig(srv.URL))
		if !errors.Is(err, engine.ErrFlushFailed) || !strings.Contains(err.Error(), "VLLM_SERVER_DEV_MODE=1") {
			t.Fatalf("err = %v, want the dev-mode explanation", err)
		}
	})
}

// A flush the server answers as done but ignores is caught by the cached-token proof: the
// same seed sends the same prompts again, which a cold cache would not know. The first run
// finds nothing (its prompts are new); the second must carry notes and a warning.
func TestRunCatchesIgnoredFlush(t *testing.T) {
	t.Parallel()
	for _, p := range []simengine.Protocol{simengine.SGLang, simengine.VLLM} {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			for _, fault := range []simengine.FlushFault{"", simengine.FlushIgnored} {
				eng := twoSlotEngine(t, simengine.Options{Protocol: p, DevMode: true, FlushFault: fault})
				srv := httptest.NewServer(eng)
				cfg := testConfig(srv.URL)
				var warm []string
				for run := 1; run <= 2; run++ {
					doc, err := Run(context.Background(), cfg)
					if err != nil {
						srv.Close()
						t.Fatal(err)
					}
					warm = WarmCacheTrials(doc)
					if run == 1 && len(warm) != 0 {
						t.Errorf("fault %q, first run: %q on prompts never sent before", fault, warm)
					}
				}
				srv.Close()
				if fault == "" && len(warm) != 0 {
					t.Errorf("working flush, second run: %q", warm)
				}
				if fault == simengine.FlushIgnored && len(warm) == 0 {
					t.Error("ignored flush not caught: the second run reported no warm-cache trials")
				}
			}
		})
	}
}

// Early SGLang 0.4.x answers every flush 200 "Cache flushed" and does nothing while busy;
// here the double ignores every flush that way, and its responses carry no cached-token
// field (no --enable-cache-report). Only the engine's prefix-cache counter over the measured
// requests can tell, and it must: the second run with the same seed resends the same prompts,
// so a cache that was not flushed serves them, and the run warns as for a warm per-request
// count. With the flush working, the counter finds nothing beyond the shared prefix.
func TestRunCatchesNoOpFlushByCounter(t *testing.T) {
	t.Parallel()
	for _, fault := range []simengine.FlushFault{"", simengine.FlushIgnored} {
		t.Run("fault="+string(fault), func(t *testing.T) {
			t.Parallel()
			eng := twoSlotEngine(t, simengine.Options{Protocol: simengine.SGLang04Early, Version: "0.4.0", NoCacheReport: true, FlushFault: fault})
			srv := httptest.NewServer(eng)
			defer srv.Close()
			cfg := testConfig(srv.URL)
			var doc *results.Document
			for range 2 {
				var err error
				if doc, err = Run(context.Background(), cfg); err != nil {
					t.Fatal(err)
				}
			}
			warm := WarmCacheTrials(doc)
			for _, tr := range doc.Workloads[0].Trials() {
				c := tr.Trial.Correctness.CachedPromptTokens
				if c == nil || !c.Known || !strings.Contains(strings.Join(tr.Trial.Notes, " "), "counter over the measured requests") {
					t.Errorf("trial %s/%d: cached %+v, notes %q; want the counter's count over the measured requests", tr.Side, tr.Trial.Trial, c, tr.Trial.Notes)
				}
			}
			switch {
			case fault == "" && len(warm) != 0:
				t.Errorf("working flush: %q", warm)
			case fault == simengine.FlushIgnored && len(warm) == 0:
				t.Error("a flush answered but not honoured was not caught by the prefix-cache counter")
			case fault == simengine.FlushIgnored && !strings.Contains(strings.Join(doc.Workloads[0].Trials()[0].Trial.Notes, " "), "answered but not honoured"):
				t.Errorf("notes %q do not say the flush was not honoured", doc.Workloads[0].Trials()[0].Trial.Notes)
			}
		})
	}
}

// Where the server reports no cached tokens and no prefix-cache counter, the count is null
// with a note, never 0.
func TestRunCachedTokensUnknownIsNull(t *testing.T) {
	t.Parallel()
	eng := twoSlotEngine(t, simengine.Options{Protocol: simengine.SGLang04, NoCacheReport: true, NoMetrics: true})
	srv := httptest.NewServer(eng)
	defer srv.Close()
	doc, err := Run(context.Background(), testConfig(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range doc.Workloads[0].Trials() {
		c := tr.Trial.Correctness.CachedPromptTokens
		if c == nil || c.Known {
			t.Errorf("trial %s/%d: cached prompt tokens %+v, want null", tr.Side, tr.Trial.Trial, c)
		}
		// Without metrics 0.4.x has no idle signal either: the trial says it was not verified.
		if n := tr.Trial.Notes; len(n) != 2 || !strings.Contains(n[0], "no idle signal") || !strings.Contains(n[1], "cannot prove") {
			t.Errorf("trial %s/%d: notes %q, want the unverified idle wait and that the cache cannot be proven cold", tr.Side, tr.Trial.Trial, n)
		}
	}
	out, err := results.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"cached_prompt_tokens": null`) {
		t.Error("unknown cached tokens not written as null")
	}
}

// One 503 on each control call (identification, flush, calibration, metrics) does not abort
// the benchmark: control calls are retried with backoff; measured requests never are.
func TestRunSurvivesTransientControlFailures(t *testing.T) {
	t.Parallel()
	eng := twoSlotEngine(t, simengine.Options{Protocol: simengine.SGLang})
	failed := map[string]bool{}
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		first := !failed[r.URL.Path]
		failed[r.URL.Path] = true
		mu.Unlock()
		switch r.URL.Path {
		case "/server_info", "/flush_cache", "/tokenize", "/metrics", "/v1/loads":
			if first {
				http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
				return
			}
		}
		eng.ServeHTTP(w, r)
	}))
	defer srv.Close()
	doc, err := Run(context.Background(), testConfig(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Workloads) != 1 || doc.Workloads[0].MaximumPassingConcurrency == nil {
		t.Fatalf("no boundary after transient failures: %+v", doc.Workloads)
	}
}
