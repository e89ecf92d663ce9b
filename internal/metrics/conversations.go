package metrics

import (
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// Conversations is what a users trial (load.RunUsers) measured of its conversations' turns:
// first-turn and later-turn TTFT apart, the requests in flight, the longest context reached,
// how much of the later turns the cache served, and the warm-cache proof.
//
// The proof: a turn may find in the cache at most what its own conversation already sent and
// received, since conversations are unique. For a later turn that is the previous turn's
// prompt and output tokens as the server counted them (the history it sends back is exactly
// that, re-encoded, so it can match no more); for a first turn it is what every conversation
// starts with: its prompt tokens beyond its own new message (own tokens), and at least
// shared (the chat template and the system prompt), the cold-cache check's rule. A measured turn whose
// server-reported cached tokens exceed that is counted in TurnsCachedBeyondHistory. A turn
// whose cached tokens or whose previous turn's usage the server did not report is not judged.
//
// records are the trial's requests as load.RunUsers returns them (warmups first) or as a
// records file gives them back: the measured window runs from the first measured request's
// sending to the last one's end, as RunUsers sets it, so a recompute gives the same figures.
func Conversations(records []load.RequestResult, own, shared int) results.ConversationTrial {
	res := load.TrialResult{Requests: records}
	for i, r := range res.Measured() {
		if i == 0 || r.Sent.Before(res.MeasuredStart) {
			res.MeasuredStart = r.Sent
		}
		if r.Done.After(res.MeasuredEnd) {
			res.MeasuredEnd = r.Done
		}
	}
	type key struct{ conversation, turn int }
	byTurn := map[key]load.RequestResult{}
	for _, r := range res.Requests {
		if r.Conversation > 0 {
			byTurn[key{r.Conversation, r.Turn}] = r
		}
	}
	var c results.ConversationTrial
	var first, later []float64
	cached, prompt, reported := 0, 0, false
	for _, r := range res.Measured() {
		c.MeasuredTurns++
		if r.Turn == 1 {
			c.FirstTurns++
		}
		if Succeeded(r) {
			if r.Turn == 1 {
				first = append(first, TTFTMs(r))
			} else {
				later = append(later, TTFTMs(r))
			}
		}
		if r.UsageReported {
			c.ContextTokensMax = max(c.ContextTokensMax, r.PromptTokens+r.CompletionTokens)
		}
		if r.CachedTokens == nil {
			continue
		}
		if r.Turn > 1 && r.UsageReported {
			reported = true
			cached += *r.CachedTokens
			prompt += r.PromptTokens
		}
		allowed := shared
		if r.UsageReported {
			allowed = max(shared, r.PromptTokens-own)
		}
		if r.Turn > 1 {
			prev, ok := byTurn[key{r.Conversation, r.Turn - 1}]
			if !ok || !prev.UsageReported {
				continue
			}
			allowed = max(shared, prev.PromptTokens+prev.CompletionTokens)
		}
		if *r.CachedTokens > allowed {
			c.TurnsCachedBeyondHistory++
		}
	}
	if len(first) > 0 {
		c.FirstTurnTTFTP50Ms, c.FirstTurnTTFTP95Ms = mustPercentile(first, 50), mustPercentile(first, 95)
	}
	if len(later) > 0 {
		c.LaterTurnTTFTP50Ms, c.LaterTurnTTFTP95Ms = mustPercentile(later, 50), mustPercentile(later, 95)
	}
	if reported && prompt > 0 {
		p := 100 * float64(cached) / float64(prompt)
		c.LaterTurnCachedPercent = &p
	}
	c.InFlightMean, c.InFlightPeak = res.InFlight()
	return c
}
