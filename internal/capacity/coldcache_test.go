package capacity

import (
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

func TestCheckCache(t *testing.T) {
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
