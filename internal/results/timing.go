package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// TrialTiming says where a trial's wall-clock went, in seconds, from the moment the search
// asked for it to the moment its verdict was known: the steps before the first measured
// request are time the server spends generating nothing (warmups aside), which on a server
// where one trial takes minutes would otherwise go unseen. Additive in schema v1.
type TrialTiming struct {
	// IdleWaitS is the wait for the server to finish earlier work (a stopped probe's
	// cancelled requests) before the trial starts.
	IdleWaitS float64 `json:"idle_wait_s"`
	// CacheFlushS is the prefix-cache flush itself (0 with cache_flush = "none").
	CacheFlushS float64 `json:"cache_flush_s"`
	// PromptPreparationS is fitting the prompts to their token lengths (tokenize calls or
	// usage probes). It overlaps the idle wait and flush, so it is not added to them:
	// PreparationWaitS is what the trial still waited for the prompts once the flush was done.
	PromptPreparationS float64 `json:"prompt_preparation_s"`
	PreparationWaitS   float64 `json:"preparation_wait_s"`
	// ServerScrapeS is the engine-metrics scrapes before and after the trial.
	ServerScrapeS float64 `json:"server_scrape_s"`
	// WarmupS and MeasuredS are the load itself: the warmup requests, then the measured ones.
	WarmupS   float64 `json:"warmup_s"`
	MeasuredS float64 `json:"measured_s"`
	// SummaryS is computing the metrics and verdict and writing the records file.
	SummaryS float64 `json:"summary_s"`
	// TotalS is the whole trial, end to end.
	TotalS float64 `json:"total_s"`
}

// Idle is the part of the trial in which the server generated nothing for it: everything
// but the warmup and measured load.
func (t TrialTiming) Idle() float64 { return max(0, t.TotalS-t.WarmupS-t.MeasuredS) }

// UnmarshalJSON reads a count or null (unknown), the two forms MarshalJSON writes, so a
// trial round-trips through encoding/json (the progress journal) as it does through the
// document codec.
func (c *CacheCount) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*c = CacheCount{}
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("cached_prompt_tokens: %w", err)
	}
	v, err := strconv.Atoi(n.String())
	if err != nil || v < 0 {
		return fmt.Errorf("cached_prompt_tokens: %s is not a count of tokens", b)
	}
	*c = CacheCount{Tokens: v, Known: true}
	return nil
}
