package metrics

import (
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// The figures of a users trial, by hand, on cached-token counts as real llama.cpp reported
// them (a 413-token shared system prompt; each later turn found the previous prompt cached).
// Conversation 1 is warmup; conversation 2 is measured: its first turn found the system
// prompt (413 ≤ 413 allowed), its second the first turn's 603 prompt tokens (≤ 603 + 16),
// its third 818 + 16 + 1 tokens: one more than its history holds, a cross-conversation hit.
// Conversation 3's first turn found 600 tokens though only 610 − 190 own tokens are shared.
func TestConversations(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	n := func(v int) *int { return &v }
	turn := func(conv, k, prompt, cached, sent, ttft, done int, warm bool) load.RequestResult {
		return load.RequestResult{Warmup: warm, Conversation: conv, Turn: k, HTTPStatus: 200, UsageReported: true,
			PromptTokens: prompt, CompletionTokens: 16, CachedTokens: n(cached),
			Sent: at(sent), FirstContent: at(sent + ttft), LastContent: at(done), Done: at(done)}
	}
	res := load.TrialResult{
		Requests: []load.RequestResult{
			turn(1, 1, 603, 0, 0, 900, 1000, true),
			turn(1, 2, 818, 603, 1500, 300, 2000, true),
			turn(2, 1, 603, 413, 2000, 400, 3000, false),
			turn(2, 2, 818, 603, 3000, 200, 4000, false),
			turn(2, 3, 1040, 835, 4000, 100, 5000, false),
			turn(3, 1, 610, 600, 4000, 600, 6000, false),
		},
		MeasuredStart: at(2000), MeasuredEnd: at(6000),
	}
	got := Conversations(res.Requests, 190, 413)
	want := results.ConversationTrial{
		MeasuredTurns: 4, FirstTurns: 2,
		FirstTurnTTFTP50Ms: 500, FirstTurnTTFTP95Ms: 590, // 400 and 600: numpy linear
		LaterTurnTTFTP50Ms: 150, LaterTurnTTFTP95Ms: 195, // 200 and 100
		// 2-3 s one request, 3-4 s one, 4-5 s two, 5-6 s one: mean 5/4, peak 2.
		InFlightMean: 1.25, InFlightPeak: 2,
		ContextTokensMax:         1056,
		LaterTurnCachedPercent:   ptr(100 * float64(603+835) / float64(818+1040)),
		TurnsCachedBeyondHistory: 2,
	}
	if got.LaterTurnCachedPercent == nil || *got.LaterTurnCachedPercent != *want.LaterTurnCachedPercent {
		t.Errorf("later turns cached %v, want %v", got.LaterTurnCachedPercent, *want.LaterTurnCachedPercent)
	}
	got.LaterTurnCachedPercent, want.LaterTurnCachedPercent = nil, nil
	if got != want {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	// A server that does not report cached tokens: unknown, not 0, and nothing judged.
	for i := range res.Requests {
		res.Requests[i].CachedTokens = nil
	}
	if got := Conversations(res.Requests, 190, 413); got.LaterTurnCachedPercent != nil || got.TurnsCachedBeyondHistory != 0 {
		t.Errorf("without cached tokens: %+v", got)
	}
}

func ptr[T any](v T) *T { return &v }
