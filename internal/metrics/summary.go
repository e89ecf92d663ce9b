package metrics

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// ErrNoSuccessfulRequests means no measured request of the trial succeeded, so it has no
// latency metrics; the counters of the returned trial still say what went wrong.
var ErrNoSuccessfulRequests = errors.New("no measured request succeeded")

// ErrNoUsage means successful requests arrived without a usage object, so their token counts
// (OSL, ITL, output throughput) are unknown: the server must honour
// stream_options.include_usage for the measurement to mean anything.
var ErrNoUsage = errors.New("server sent no usage for successful requests")

// UniquenessScope is how Totals says its unique_* counters were counted: per trial, then
// summed, not deduplicated across trials (each trial flushes the cache and draws new prompts).
const UniquenessScope = "within_each_trial"

// Succeeded reports whether a measured request counts towards the latency metrics: it
// completed with HTTP 200, no stream error, was not cancelled, and streamed some content.
// A 200 that never streamed content has no TTFT; its user got nothing, so it is an error.
func Succeeded(r load.RequestResult) bool {
	return r.OK() && !r.FirstContent.IsZero() && !r.LastContent.IsZero()
}

// failed reports whether a measured request is counted in "errors": it did not succeed and
// was not stopped by the runner. Cancellation is the runner's doing, not the server's, so it
// is reported through the separate "cancelled" flag instead.
func failed(r load.RequestResult) bool { return !r.Cancelled && !Succeeded(r) }

// ms converts a duration to float milliseconds without losing the nanoseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// TTFTMs is the time from sending the request to its first non-empty content chunk (content,
// reasoning_content or text, as the load package records it).
func TTFTMs(r load.RequestResult) float64 { return ms(r.FirstContent.Sub(r.Sent)) }

// RequestLatencyMs is the time from sending the request to its last content chunk.
func RequestLatencyMs(r load.RequestResult) float64 { return ms(r.LastContent.Sub(r.Sent)) }

// TTSTMs is the time from the first to the second content chunk (AIPerf's time to second
// token). ok is false when the request streamed a single content chunk.
func TTSTMs(r load.RequestResult) (float64, bool) {
	if r.SecondContent.IsZero() || r.FirstContent.IsZero() {
		return 0, false
	}
	return ms(r.SecondContent.Sub(r.FirstContent)), true
}

// InterChunkMs is a request's raw stream cadence: (last − first content chunk) / (content
// chunks − 1), whatever the chunks carried. ok is false with fewer than two content chunks.
func InterChunkMs(r load.RequestResult) (float64, bool) {
	if r.ContentChunks < 2 || r.FirstContent.IsZero() {
		return 0, false
	}
	return ms(r.LastContent.Sub(r.FirstContent)) / float64(r.ContentChunks-1), true
}

// ITLMs is the token-normalised inter-token latency (latency − TTFT)/(OSL − 1), with OSL the
// server's usage.completion_tokens. Normalising by tokens rather than chunks keeps it right
// when one chunk carries several tokens (speculative decoding). ok is false when the request
// has no ITL: no usage, or fewer than two output tokens.
func ITLMs(r load.RequestResult) (itl float64, ok bool) {
	if !r.UsageReported || r.CompletionTokens < 2 {
		return 0, false
	}
	return ms(r.LastContent.Sub(r.FirstContent)) / float64(r.CompletionTokens-1), true
}

// OutputLengthMismatch reports whether osl is further from requested than AIPerf tolerates:
// |OSL − requested| > min(5 % of requested, 50).
func OutputLengthMismatch(osl, requested int) bool {
	tolerance := math.Min(0.05*float64(requested), 50)
	return math.Abs(float64(osl-requested)) > tolerance
}

// Summarize computes one trial's metrics and correctness counters from its requests' results
// (warmups and measured requests together; RequestResult.Warmup tells them apart).
// requestedOSL is the max_tokens the trial asked for, used for output-length mismatches;
// when it is ≤ 0 each result's RequestedOutputTokens is used instead.
//
// Which requests count where (AIPerf computes its metrics over valid requests only):
//   - TTFT, request latency, ITL, per-user throughput, token min/max, output throughput's
//     Σ OSL and every output counter (unique_outputs, generated_chunks, generated_utf8_bytes,
//     completion_tokens_total, finish_reason_length, output_length_mismatches): successful
//     measured requests only (see Succeeded). A failed stream's partial output says nothing
//     about the server's normal behaviour.
//   - degenerate_outputs: measured requests that finished with HTTP 200 and no error
//     (JudgeOutputs), an empty one included although it is no success; absent when there
//     was none whose output is known.
//   - profiling_records, unique_prompts, http_200 (a 200 status was received, even if the
//     stream failed later), errors (not successful and not cancelled), cancelled (any
//     measured or warmup request cancelled): every measured request.
//   - duration: AIPerf's benchmark_duration, its maximum response timestamp (request
//     start plus request latency) minus its minimum request timestamp, both over valid
//     requests: here the earliest Sent to the latest LastContent of the successful
//     measured requests. Both ends are in a records file (sent_ns, last_token_ns), so the
//     duration and the throughputs over it recompute bit for bit. Failed and cancelled
//     requests do not stretch it, as they do not in AIPerf; nor do the trailing usage
//     chunk and [DONE], as request latency ends at the last content chunk. It starts when
//     the first request's connection was ready (Sent), where AIPerf starts before
//     connecting: the same difference as TTFT's (connection_setup_ms).
//   - output and request throughput: Σ OSL and successful requests / duration.
//
// Trial and Concurrency are left for the caller. The returned trial is filled even when the
// error is non-nil; the error (ErrNoSuccessfulRequests, ErrNoUsage, wrapped with counts) says
// why some of its numbers are missing.
func Summarize(records []load.RequestResult, requestedOSL int) (results.Trial, error) {
	var (
		t                    results.Trial
		c                    = &t.Correctness
		ttft, latency, itl   []float64
		perUser, ttst, icl   []float64
		setup                []float64
		warmupPrompts        = map[string]bool{}
		measuredPrompts      = map[string]bool{}
		outputs              = map[uint64]bool{}
		first, last          time.Time
		outputTokens         int
		successes, withUsage int
		promptMin, promptMax = math.Inf(1), math.Inf(-1)
		complMin, complMax   = math.Inf(1), math.Inf(-1)
	)
	for _, r := range records {
		if r.Cancelled {
			c.Cancelled = true
		}
		if r.Warmup {
			c.WarmupRecords++
			warmupPrompts[r.Prompt] = true
			continue
		}
		c.ProfilingRecords++
		measuredPrompts[r.Prompt] = true
		if r.HTTPStatus == 200 {
			c.HTTP200++
		}
		if failed(r) {
			c.Errors++
		}
		if !Succeeded(r) {
			continue
		}
		successes++
		if first.IsZero() || r.Sent.Before(first) {
			first = r.Sent
		}
		if r.LastContent.After(last) {
			last = r.LastContent
		}
		ttft = append(ttft, TTFTMs(r))
		latency = append(latency, RequestLatencyMs(r))
		if v, ok := TTSTMs(r); ok {
			ttst = append(ttst, v)
		}
		if v, ok := InterChunkMs(r); ok {
			icl = append(icl, v)
		}
		setup = append(setup, ms(r.Connect+r.TLSHandshake))
		outputs[r.OutputHash] = true
		c.GeneratedChunks += r.ContentChunks
		c.GeneratedUTF8Bytes += r.ContentBytes
		if r.FinishReason == "length" {
			c.FinishReasonLength++
		}
		if !r.UsageReported {
			continue
		}
		withUsage++
		outputTokens += r.CompletionTokens
		c.CompletionTokensTotal += r.CompletionTokens
		promptMin = math.Min(promptMin, float64(r.PromptTokens))
		promptMax = math.Max(promptMax, float64(r.PromptTokens))
		complMin = math.Min(complMin, float64(r.CompletionTokens))
		complMax = math.Max(complMax, float64(r.CompletionTokens))
		requested := requestedOSL
		if requested <= 0 {
			requested = r.RequestedOutputTokens
		}
		if OutputLengthMismatch(r.CompletionTokens, requested) {
			c.OutputLengthMismatches++
		}
		if v, ok := ITLMs(r); ok {
			itl = append(itl, v)
			// An ITL of zero (every token in one chunk) has no finite rate; JSON cannot
			// carry +Inf, so such a request is left out of the per-user throughput only.
			if v > 0 {
				perUser = append(perUser, 1000/v)
			}
		}
	}
	c.UniqueWarmupPrompts = len(warmupPrompts)
	c.UniquePrompts = len(measuredPrompts)
	c.UniqueOutputs = len(outputs)
	if degenerateOutputs, _ := JudgeOutputs(records); degenerateOutputs.Checked > 0 {
		c.DegenerateOutputs = &degenerateOutputs
	}
	for p := range warmupPrompts {
		if measuredPrompts[p] {
			c.WarmupProfilePromptOverlap++
		}
	}

	if !first.IsZero() && last.After(first) {
		t.BenchmarkDurationS = last.Sub(first).Seconds()
		t.OutputThroughputTPS = float64(outputTokens) / t.BenchmarkDurationS
		t.RequestThroughputRPS = float64(successes) / t.BenchmarkDurationS
	}
	t.TTFTMs = Stats(ttft)
	t.RequestLatencyMs = Stats(latency)
	t.ITLMs = Stats(itl)
	t.PerUserOutputThroughputTPS = Stats(perUser)
	ttstStats, iclStats, setupStats := Stats(ttst), Stats(icl), Stats(setup)
	t.TTSTMs, t.InterChunkLatencyMs, t.ConnectionSetupMs = &ttstStats, &iclStats, &setupStats
	if withUsage > 0 {
		t.ServerPromptTokens = results.MinMax{Min: promptMin, Max: promptMax}
		t.ServerCompletionTokens = results.MinMax{Min: complMin, Max: complMax}
	}

	t.ErrorSummary = ErrorSummary(records, requestedOSL)

	var errs []error
	if successes == 0 {
		errs = append(errs, fmt.Errorf("%d measured requests, %d errors, cancelled=%t: %w",
			c.ProfilingRecords, c.Errors, c.Cancelled, ErrNoSuccessfulRequests))
	}
	if successes > withUsage {
		errs = append(errs, fmt.Errorf("%d of %d successful measured requests: %w",
			successes-withUsage, successes, ErrNoUsage))
	}
	return t, errors.Join(errs...)
}

// Stats is every statistic of values: mean, extremes, population standard deviation (numpy's
// default ddof=0) and the percentiles with numpy's linear interpolation. All zero when there
// is nothing to measure, which Summarize reports through its error.
func Stats(values []float64) results.Stats {
	if len(values) == 0 {
		return results.Stats{}
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	avg := mean(values)
	ss := 0.0
	for _, v := range values {
		ss += (v - avg) * (v - avg)
	}
	p := func(q float64) float64 { return percentileSorted(sorted, q) }
	return results.Stats{
		Avg: avg, Min: sorted[0], Max: sorted[len(sorted)-1], Std: math.Sqrt(ss / float64(len(values))),
		P1: p(1), P5: p(5), P10: p(10), P25: p(25), P50: p(50), P75: p(75), P90: p(90), P95: p(95), P99: p(99),
	}
}

// mustPercentile is for callers that have already checked values is non-empty and q is a
// constant in range, the only ways Percentile fails.
func mustPercentile(values []float64, q float64) float64 {
	v, _ := Percentile(values, q)
	return v
}

func mean(values []float64) float64 {
	sum := 0.0
	for _, v := range values {
		sum += v
	}
	return sum / float64(len(values))
}

// Totals sums the correctness counters of trials into the document's correctness_total:
// counts add up, cancelled is true if any trial was cancelled, and the unique_* counters are
// sums of per-trial counts (uniqueness_scope "within_each_trial"). cached_prompt_tokens adds
// up only while every trial knows it: one trial whose server could not tell (or that does not
// record it) makes the total null, since a sum over the others would understate it; it stays
// absent when no trial records it, as in documents from before it existed.
func Totals(trials ...results.Trial) results.Correctness {
	total := results.Correctness{UniquenessScope: UniquenessScope}
	cached, cachedKnown, cachedRecorded := 0, true, false
	for _, tr := range trials {
		c := tr.Correctness
		total.WarmupRecords += c.WarmupRecords
		total.UniqueWarmupPrompts += c.UniqueWarmupPrompts
		total.WarmupProfilePromptOverlap += c.WarmupProfilePromptOverlap
		total.ProfilingRecords += c.ProfilingRecords
		total.HTTP200 += c.HTTP200
		total.UniquePrompts += c.UniquePrompts
		total.UniqueOutputs += c.UniqueOutputs
		total.GeneratedChunks += c.GeneratedChunks
		total.GeneratedUTF8Bytes += c.GeneratedUTF8Bytes
		total.CompletionTokensTotal += c.CompletionTokensTotal
		total.FinishReasonLength += c.FinishReasonLength
		total.Errors += c.Errors
		total.Cancelled = total.Cancelled || c.Cancelled
		total.OutputLengthMismatches += c.OutputLengthMismatches
		total.RequestsCachedBeyondSharedPrefix += c.RequestsCachedBeyondSharedPrefix
		if d := c.DegenerateOutputs; d != nil {
			if total.DegenerateOutputs == nil {
				total.DegenerateOutputs = &results.DegenerateOutputs{}
			}
			t := total.DegenerateOutputs
			t.Requests += d.Requests
			t.Checked += d.Checked
			t.Empty += d.Empty
			t.RepeatedCodePoint += d.RepeatedCodePoint
			t.IdenticalAcrossPrompts += d.IdenticalAcrossPrompts
			t.RepeatedToken += d.RepeatedToken
		}
		if cc := c.CachedPromptTokens; cc != nil && cc.Known {
			cached += cc.Tokens
		} else {
			cachedKnown = false
		}
		cachedRecorded = cachedRecorded || c.CachedPromptTokens != nil
	}
	switch {
	case cachedRecorded && cachedKnown:
		total.CachedPromptTokens = &results.CacheCount{Tokens: cached, Known: true}
	case cachedRecorded:
		total.CachedPromptTokens = &results.CacheCount{}
	}
	return total
}
