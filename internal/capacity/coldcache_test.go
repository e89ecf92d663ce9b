package capacity

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

func TestCheckCache(t *testing.T) {
	t.Parallel()
	n := func(v int) *int { return &v }
	f := func(v float64) *float64 { return &v }
	// Prompts of 100 own tokens plus 11 template tokens: 11 may come from the cache.
	req := func(cached *int) load.RequestResult {
		return load.RequestResult{UsageReported: true, PromptTokens: 111, CachedTokens: cached}
	}
	omitted := req(nil)
	failed := load.RequestResult{} // no usage: says nothing
	tests := []struct {
		name      string
		measured  []load.RequestResult
		want      coldCache
		count     *results.CacheCount
		beyond    int
		noteHas   []string
		noteCount int
	}{
		{"omitted read as 0 where the engine reports",
			[]load.RequestResult{omitted, req(n(3)), omitted, failed},
			coldCache{ownTokens: 100, sharedTokens: 11, flushed: true, omittedAsZero: "the server runs with --enable-cache-report"},
			&results.CacheCount{Tokens: 3, Known: true}, 0,
			[]string{"2 of 4 measured requests carried no prompt_tokens_details and count as 0", "--enable-cache-report"}, 1},
		{"omitted unknown, no counter",
			[]load.RequestResult{omitted, omitted},
			coldCache{ownTokens: 100, sharedTokens: 11, flushed: true},
			&results.CacheCount{}, 0,
			[]string{"cannot prove its cache was cold"}, 1},
		{"omitted unknown, counter over the measured requests",
			[]load.RequestResult{omitted, omitted},
			coldCache{ownTokens: 100, sharedTokens: 11, flushed: true, measuredHits: f(6)},
			&results.CacheCount{Tokens: 6, Known: true}, 0,
			[]string{"counter over the measured requests", "unknown, not 0"}, 1},
		// 2 requests may share 22 tokens; the counter says 172: 150 beyond, at least 2 requests.
		{"counter catches a flush answered but not honoured",
			[]load.RequestResult{omitted, omitted},
			coldCache{ownTokens: 100, sharedTokens: 11, flushed: true, measuredHits: f(172)},
			&results.CacheCount{Tokens: 172, Known: true}, 2,
			[]string{"150 more than the prefix", "at least 2 requests", "answered but not honoured"}, 2},
		// Per-request figures say cold; the counter says otherwise: the counter wins.
		{"counter contradicts the responses",
			[]load.RequestResult{req(n(11)), req(n(11))},
			coldCache{ownTokens: 100, sharedTokens: 11, flushed: true, measuredHits: f(23)},
			&results.CacheCount{Tokens: 22, Known: true}, 1,
			[]string{"at least 1 requests"}, 1},
		{"per-request warm",
			[]load.RequestResult{req(n(90)), omitted},
			coldCache{ownTokens: 100, sharedTokens: 11, flushed: true, omittedAsZero: "r", measuredHits: f(90)},
			&results.CacheCount{Tokens: 90, Known: true}, 1,
			[]string{"1 of 2 measured requests were served partly", "up to 79 prompt tokens"}, 2},
		{"no flush: counted, no warning",
			[]load.RequestResult{req(n(90))},
			coldCache{ownTokens: 100, sharedTokens: 11},
			&results.CacheCount{Tokens: 90, Known: true}, 1, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var tr results.Trial
			checkCache(&tr, tc.measured, tc.want)
			if got := tr.Correctness.CachedPromptTokens; got == nil || *got != *tc.count {
				t.Errorf("cached prompt tokens %+v, want %+v", got, tc.count)
			}
			if got := tr.Correctness.RequestsCachedBeyondSharedPrefix; got != tc.beyond {
				t.Errorf("requests beyond the shared prefix %d, want %d", got, tc.beyond)
			}
			if len(tr.Notes) != tc.noteCount {
				t.Errorf("notes %q, want %d", tr.Notes, tc.noteCount)
			}
			all := strings.Join(tr.Notes, " | ")
			for _, s := range tc.noteHas {
				if !strings.Contains(all, s) {
					t.Errorf("notes %q do not say %q", all, s)
				}
			}
		})
	}
}

// With cache_flush = "none" a trial still waits for the server to finish earlier work: here
// a request that is not the benchmark's decodes with nothing waiting, which current SGLang's
// /v1/loads reports only as num_running_reqs. The run must not start a trial beside it.
func TestRunWaitsForDecodingWithoutFlush(t *testing.T) {
	t.Parallel()
	eng := twoSlotEngine(t, simengine.Options{Protocol: simengine.SGLang, NoMetrics: true})
	srv := httptest.NewServer(eng)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/completions",
		strings.NewReader(`{"model":"sim","prompt":"an earlier trial's request","max_tokens":30000,"ignore_eos":true,"stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	go func() { _, _ = io.Copy(io.Discard, resp.Body) }()
	for deadline := time.Now().Add(5 * time.Second); eng.Stats().InFlight == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the earlier request was never admitted")
		}
	}
	cfg := testConfig(srv.URL)
	cfg.CacheFlush, cfg.IdleTimeout = "none", 300*time.Millisecond
	_, err = Run(context.Background(), cfg)
	if !errors.Is(err, engine.ErrBusy) || !strings.Contains(err.Error(), "1 running and 0 waiting requests (/v1/loads)") {
		t.Fatalf("err = %v, want ErrBusy from /v1/loads with the decoding request", err)
	}
}
