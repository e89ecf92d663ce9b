package capacity

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// BenchmarkTrialGap measures the dead time between trials: from the last generation response
// of one trial to the first generation request of the next, as the server sees them, with the
// default trial shape (8 warmups and 64 measured requests of 2K-token prompts, fitted by
// tokenize calls, cache flushed) against a loopback SGLang double. It prints each trial's
// timing breakdown from results_json. The goal is a gap of at most 0.5 s.
//
//	go test ./internal/capacity -run '^$' -bench TrialGap -benchtime 1x -v
//
// With LLMSERVE_BENCH_ENDPOINT and LLMSERVE_BENCH_MODEL set (a llama.cpp server, say) the
// same run goes to that server instead, through a recording proxy:
//
//	LLMSERVE_BENCH_ENDPOINT=http://127.0.0.1:18181 LLMSERVE_BENCH_MODEL=tiny LLMSERVE_BENCH_SHAPE=512,4,16 \
//	  go test ./internal/capacity -run '^$' -bench TrialGap -benchtime 1x -v
func BenchmarkTrialGap(b *testing.B) {
	target := os.Getenv("LLMSERVE_BENCH_ENDPOINT")
	model := os.Getenv("LLMSERVE_BENCH_MODEL")
	var upstream http.Handler
	if target == "" {
		// LLMSERVE_BENCH_PROTOCOL picks another double: sglang-0.4, vllm, llamacpp, or generic.
		protocol := simengine.Protocol(cmp.Or(os.Getenv("LLMSERVE_BENCH_PROTOCOL"), string(simengine.SGLang)))
		if protocol == "generic" {
			protocol = ""
		}
		eng, err := simengine.NewServer(simengine.Options{Model: simengine.DefaultModel(), Protocol: protocol, Version: "0.5.10",
			ModelName: "sim", TimeScale: 0.05, DevMode: true})
		if err != nil {
			b.Fatal(err)
		}
		upstream, model = eng, "sim"
	} else {
		upstream = reverseProxy(b, target)
	}
	for b.Loop() {
		gaps, doc := measureGaps(b, upstream, model)
		b.ReportMetric(slices.Max(gaps), "max-gap-s")
		b.ReportMetric(mean(gaps), "mean-gap-s")
		printTimings(b, gaps, doc)
	}
}

// measureGaps runs a four-trial grid and returns the three gaps between its trials.
func measureGaps(b *testing.B, upstream http.Handler, model string) ([]float64, *results.Document) {
	b.Helper()
	var mu sync.Mutex
	type span struct{ start, end time.Time }
	var spans []span
	var marks []time.Time
	var durations []float64 // each trial's own duration_s, in the order they finished
	rec := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/completions") {
			upstream.ServeHTTP(w, r)
			return
		}
		sp := span{start: time.Now()}
		upstream.ServeHTTP(w, r)
		sp.end = time.Now()
		mu.Lock()
		spans = append(spans, sp)
		mu.Unlock()
	})
	srv := httptest.NewServer(rec)
	defer srv.Close()
	cfg := Defaults()
	cfg.Endpoint, cfg.Model, cfg.Seed = srv.URL, model, 1
	cfg.Workloads = []Workload{{Label: "2K / 16", InputTokens: 2048, OutputTokens: 16}}
	// A CPU llama.cpp server takes minutes for the default shape: LLMSERVE_BENCH_SHAPE
	// ("input,warmups,measured") makes the trials smaller; the gap does not depend on it much.
	if shape := os.Getenv("LLMSERVE_BENCH_SHAPE"); shape != "" {
		var in, wu, ms int
		if _, err := fmt.Sscanf(shape, "%d,%d,%d", &in, &wu, &ms); err != nil {
			b.Fatalf("LLMSERVE_BENCH_SHAPE %q: want input,warmups,measured", shape)
		}
		cfg.Workloads[0].InputTokens, cfg.Workloads[0].Label = in, fmt.Sprintf("%d / 16", in)
		cfg.WarmupRequests, cfg.MeasuredRequests = wu, ms
	}
	cfg.SLOs = []results.SLO{{Metric: results.MetricTTFT, Percentile: 95, ThresholdMs: 60_000}}
	cfg.ConcurrencyLevels, cfg.ConfirmationTrials = []int{4, 8}, 2
	if ms, err := strconv.ParseFloat(os.Getenv("LLMSERVE_BENCH_SEARCH_TTFT_MS"), 64); err == nil {
		// The search instead of the grid, probes (stopped early) included.
		cfg.SLOs[0].ThresholdMs, cfg.ConcurrencyLevels, cfg.MaxConcurrency = ms, nil, 16
	}
	cfg.Progress = func(e JournalEntry) {
		mu.Lock()
		marks = append(marks, time.Now())
		durations = append(durations, e.DurationS)
		mu.Unlock()
	}
	cfg.RecordsDirectory = b.TempDir()
	doc, err := Run(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	clientGaps(b, cfg.RecordsDirectory, doc)
	mu.Lock()
	defer mu.Unlock()
	var gaps []float64
	for _, m := range marks[:len(marks)-1] {
		var lastEnd, nextStart time.Time
		for _, sp := range spans {
			// A request that started before the mark belongs to the finished trial; its
			// handler may return after the client already read [DONE] and moved on (a
			// reverse proxy closing the upstream connection), so its end counts at most
			// up to the mark.
			if end := minTime(sp.end, m); sp.start.Before(m) && end.After(lastEnd) {
				lastEnd = end
			}
			if sp.start.After(m) && (nextStart.IsZero() || sp.start.Before(nextStart)) {
				nextStart = sp.start
			}
		}
		gaps = append(gaps, nextStart.Sub(lastEnd).Seconds())
	}
	// Time between trials that no trial's timing covers: from one trial's end (its journal
	// entry) to the start of the next (the next entry less its duration).
	for i := range len(marks) - 1 {
		outside := marks[i+1].Sub(marks[i]).Seconds() - durations[i+1]
		b.Logf("between trials %d and %d, outside both: %.3f s", i+1, i+2, outside)
	}
	return gaps, doc
}

// clientGaps prints, from the records files, the client's view of each gap: the last
// request of one trial ending (last token) to the first request of the next being sent.
func clientGaps(b *testing.B, dir string, doc *results.Document) {
	type span struct{ first, last int64 }
	var spans []span
	for _, t := range doc.Workloads[0].AllTrials {
		lines, _, err := records.Read(filepath.Join(dir, filepath.FromSlash(t.RecordsFile)))
		if err != nil {
			b.Fatal(err)
		}
		sp := span{first: math.MaxInt64}
		for _, l := range lines {
			if l.SentNs != nil {
				sp.first = min(sp.first, *l.SentNs)
			}
			if l.LastTokenNs != nil {
				sp.last = max(sp.last, *l.LastTokenNs)
			}
		}
		spans = append(spans, sp)
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.first, b.first) })
	var gaps []float64
	for i := range len(spans) - 1 {
		gaps = append(gaps, float64(spans[i+1].first-spans[i].last)/1e9)
	}
	b.Logf("client-side gaps (s): %.3f", gaps)
}

func printTimings(b *testing.B, gaps []float64, doc *results.Document) {
	b.Helper()
	var lines []string
	lines = append(lines, fmt.Sprintf("gaps between trials (s): %.3f", gaps))
	lines = append(lines, "trial              idle_wait  flush  prompts  prompt_wait  scrape  warmup  measured  summary  total  idle")
	for _, t := range doc.Workloads[0].AllTrials {
		tm := t.Timing
		if tm == nil {
			continue
		}
		lines = append(lines, fmt.Sprintf("c=%-2d %-12s %2d  %9.3f  %5.3f  %7.3f  %11.3f  %6.3f  %6.3f  %8.3f  %7.3f  %5.3f  %4.3f",
			t.Concurrency, t.Kind, t.Trial, tm.IdleWaitS, tm.CacheFlushS, tm.PromptPreparationS, tm.PreparationWaitS,
			tm.ServerScrapeS, tm.WarmupS, tm.MeasuredS, tm.SummaryS, tm.TotalS, tm.Idle())+" "+t.Verdict)
		if cs := t.ConnectionSetupMs; cs != nil && cs.Max > 100 {
			lines = append(lines, fmt.Sprintf("    connection set-up up to %.0f ms", cs.Max))
		}
		for _, e := range t.ErrorSummary {
			lines = append(lines, fmt.Sprintf("    %d × %s: %s", e.Count, e.Kind, e.Example))
		}
	}
	b.Log("\n" + strings.Join(lines, "\n"))
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// reverseProxy forwards to a real server, so its generation requests can be timed.
func reverseProxy(b *testing.B, target string) http.Handler {
	b.Helper()
	u, err := url.Parse(target)
	if err != nil {
		b.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(u)
	p.FlushInterval = -1 // stream every chunk as it comes
	// A fresh connection per request: llama-server drops idle keep-alive connections, and a
	// proxy reusing one answers 502 (EOF) for a request the server never saw.
	p.Transport = &http.Transport{DisableKeepAlives: true}
	return p
}
