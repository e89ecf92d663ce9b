package capacity

// The proof that each trial ran on a cold prefix cache: per-request cached-token counts, read
// the way each engine reports them, cross-checked by the engine's own prefix-cache counter
// over the measured requests.

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// cacheReporting remembers whether the engine is known to report cached prompt tokens, and
// why. SGLang and vLLM leave usage.prompt_tokens_details out when nothing was cached
// (engine.CachedTokensOmittedAtZero), so a cold request carries no field: it reads as 0 once
// the engine is known to report, and as unknown before.
type cacheReporting struct {
	mu     sync.Mutex
	reason string // empty: not known to report
}

func (c *cacheReporting) known() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reason
}

func (c *cacheReporting) learn(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reason == "" {
		c.reason = reason
	}
}

// cacheProbeText is sent twice at the start of a run: long enough that the second request
// finds at least one whole vLLM KV block (16 tokens) in the cache, so an engine that reports
// cached tokens must say so for it.
var cacheProbeText = "llmserve cache report probe: " + strings.Repeat("amber basalt cobalt dune ember fjord granite harbor ", 8)

// learnCacheReporting finds out, before any trial, whether a missing cached-token field will
// mean 0: the server says it runs with reporting on (SGLang --enable-cache-report in its
// server info), or a repeated probe prompt comes back with the field. Engines that always
// report (llama.cpp) and unknown ones need no probe: there a missing field stays unknown.
func (s *session) learnCacheReporting(ctx context.Context) {
	if !engine.CachedTokensOmittedAtZero(s.engine) {
		return
	}
	if s.info.ReportsCachedTokens {
		s.cacheReport.learn("the server runs with --enable-cache-report (server_info enable_cache_report)")
		return
	}
	for range 2 {
		r := s.client.Do(ctx, cacheProbeText, 1)
		if r.CachedTokens != nil {
			s.cacheReport.learn("the engine reported cached tokens for a repeated probe prompt at the start of the run")
			return
		}
	}
}

// sawCacheReports learns from a trial's requests, warmups included, that the engine reports
// cached tokens.
func (s *session) sawCacheReports(recs []load.RequestResult) {
	if !engine.CachedTokensOmittedAtZero(s.engine) {
		return
	}
	for _, r := range recs {
		if r.CachedTokens != nil {
			s.cacheReport.learn("the engine reported cached tokens for other requests of this run")
			return
		}
	}
}

// markMeasured scrapes the engine between the warmups and the measured requests, so the
// prefix-cache counter can be read for the measured requests alone.
func (w *serverWatch) markMeasured(ctx context.Context) {
	if w == nil {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	s, err := w.c.Scrape(sctx)
	cancel()
	if err != nil {
		return
	}
	w.mu.Lock()
	w.measuredBase = &s
	w.mu.Unlock()
}

// measuredHits is the engine's prefix-cache hit counter over the measured requests; nil when
// the engine does not export it or a scrape failed.
func (w *serverWatch) measuredHits() *float64 {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.measuredBase == nil || w.after == nil {
		return nil
	}
	a, okA := w.after.Sum(w.names.PrefixHits)
	b, okB := w.measuredBase.Sum(w.names.PrefixHits)
	if !okA || !okB || a < b {
		return nil
	}
	d := a - b
	return &d
}

// coldCache is what a trial's measured requests may find in a cold cache: nothing but the
// prefix all prompts share.
type coldCache struct {
	ownTokens    int  // each prompt's own input tokens, after the workload's shared prefix
	sharedTokens int  // the least the server may serve from its cache: template overhead and shared prefix
	flushed      bool // the cache was flushed before the trial, so a hit beyond the prefix is a failed flush
	// omittedAsZero says why a response without a cached-token field counts as 0 (the
	// engine is known to report and leaves the field out at 0); empty: it says nothing.
	omittedAsZero string
	// measuredHits is the engine's prefix-cache counter over the measured requests alone;
	// nil when it does not export one.
	measuredHits *float64
}

// checkCache fills the trial's proof that the cache was cold: the cached prompt tokens the
// server reported for the measured requests, and how many requests had more than the prefix
// all prompts share. That prefix is what the server adds to a prompt's own tokens (the chat
// template, a BOS token): prompts are unique from their first word, so nothing beyond it may
// come from the cache. It is usage.prompt_tokens minus the configured input tokens where
// prompts were fitted with the tokenizer, and the measured template overhead where they were
// fitted from usage (then prompt_tokens is the input size).
//
// A response without the field counts as 0 where the engine is known to report (see
// cacheReporting), and the trial says so; otherwise it is unknown. When no response says, the
// engine's prefix-cache counter does; when neither does, the count is null with a note. The
// counter over the measured requests also cross-checks the responses: a flush the server
// answered but did not honour (early SGLang 0.4.x answers 200 without waiting for it) shows
// there as more cached tokens than the shared prefix allows.
func checkCache(t *results.Trial, measured []load.RequestResult, want coldCache) {
	total, reported, omitted, beyond, worst := 0, 0, 0, 0, 0
	allowed := 0.0 // the most the counter may count for the measured requests
	for _, r := range measured {
		shared := want.sharedTokens
		if r.UsageReported {
			shared = max(r.PromptTokens-want.ownTokens, want.sharedTokens, 0)
		}
		allowed += float64(shared)
		cached := 0
		switch {
		case r.CachedTokens != nil:
			cached = *r.CachedTokens
			reported++
		case r.UsageReported && want.omittedAsZero != "":
			omitted++
		default:
			continue
		}
		total += cached
		if cached > shared {
			beyond++
			worst = max(worst, cached-shared)
		}
	}
	hits := want.measuredHits
	switch {
	case reported+omitted > 0:
		t.Correctness.CachedPromptTokens = &results.CacheCount{Tokens: total, Known: true}
		if omitted > 0 {
			t.Notes = append(t.Notes, fmt.Sprintf("%d of %d measured requests carried no prompt_tokens_details and count as 0 cached prompt tokens: "+
				"%s, and it leaves the field out when nothing was cached", omitted, len(measured), want.omittedAsZero))
		}
	case hits != nil:
		t.Correctness.CachedPromptTokens = &results.CacheCount{Tokens: int(*hits), Known: true}
		t.Notes = append(t.Notes, "cached prompt tokens from the engine's prefix-cache counter over the measured requests: the responses did not report them "+
			"(the engine was not shown to report cached tokens on this run, so a missing field is unknown, not 0)")
	case t.Server != nil && t.Server.PrefixCacheHitTokens != nil:
		t.Correctness.CachedPromptTokens = &results.CacheCount{Tokens: int(*t.Server.PrefixCacheHitTokens), Known: true}
		t.Notes = append(t.Notes, "cached prompt tokens from the engine's prefix-cache counter (warmups included): the responses did not report them")
		if want.flushed && *t.Server.PrefixCacheHitTokens > 0 {
			// Without per-request figures the shared prefix cannot be told apart; say so.
			t.Notes = append(t.Notes, fmt.Sprintf("the engine counted %g prompt tokens served from its prefix cache after the flush; some may be the chat template's shared prefix", *t.Server.PrefixCacheHitTokens))
		}
		return
	default:
		t.Correctness.CachedPromptTokens = &results.CacheCount{}
		t.Notes = append(t.Notes, "the server reported no cached prompt tokens (usage.prompt_tokens_details.cached_tokens) and no prefix-cache counter, so this trial cannot prove its cache was cold; "+
			"SGLang needs --enable-cache-report and --enable-metrics, vLLM --enable-prompt-tokens-details")
		return
	}
	// The counter's view: hits beyond what the shared prefix allows came from a cache that
	// should have been cold. Each request adds at most its own tokens beyond the prefix, so
	// the excess proves at least that many requests warm.
	counted := 0
	if hits != nil && *hits > allowed {
		counted = int(math.Ceil((*hits - allowed) / float64(max(want.ownTokens, 1))))
	}
	t.Correctness.RequestsCachedBeyondSharedPrefix = max(beyond, counted)
	if !want.flushed {
		return
	}
	if beyond > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d of %d measured requests were served partly from a cache that should have been cold "+
			"(up to %d prompt tokens beyond the prefix all prompts share): the cache flush did not take effect, so latencies are too low and the capacity too high",
			beyond, len(measured), worst))
	}
	if counted > beyond { // the counter saw what the responses did not
		t.Notes = append(t.Notes, fmt.Sprintf("the engine's prefix-cache counter says %g prompt tokens of the measured requests came from the cache, %g more than the prefix all prompts share allows, "+
			"so at least %d requests were served from a cache that should have been cold: the flush was answered but not honoured (early SGLang 0.4.x answers 200 without waiting for it), "+
			"so latencies are too low and the capacity too high", *hits, *hits-allowed, counted))
	}
}
