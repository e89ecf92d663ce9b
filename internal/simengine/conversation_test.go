package simengine

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
)

// conversationRun holds one user in conversations of three 200-word turns against a
// llama.cpp-like server, with or without CachedPrefill, and returns the measured turns.
func conversationRun(t *testing.T, cachedPrefill bool) []load.RequestResult {
	t.Helper()
	eng, err := NewServer(Options{
		Model:    Model{Slots: 1, PrefillPerToken: time.Millisecond, DecodeStep: 10 * time.Millisecond},
		Protocol: LlamaCpp, ModelName: "m", TimeScale: 0.2, CachedPrefill: cachedPrefill,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	client, err := load.NewClient(load.ClientConfig{BaseURL: srv.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := load.RunUsers(context.Background(), client, load.UsersSpec{
		Users: 1, Measured: 6, Think: load.Think{Distribution: load.ThinkConstant},
		Next: func(u, n int) load.Conversation {
			c := load.Conversation{System: "be brief"}
			for k := range 3 {
				c.Turns = append(c.Turns, load.Turn{Message: fmt.Sprintf("c%d t%d ", n, k) + strings.Repeat(fmt.Sprintf("w%d%d ", n, k), 199), MaxTokens: 4})
			}
			return c
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.Measured()
}

// With CachedPrefill a later turn finds its whole history cached (everything but its new
// message and the role lines around it) and prefills only that: its TTFT stays at one
// message's prefill while, without it, every turn prefills its whole history (about 200,
// 400, 600 tokens at 1 ms a token). The cached counts are the server's own (usage and
// timings.cache_n).
func TestCachedPrefillServesTheHistory(t *testing.T) {
	on := conversationRun(t, true)
	off := conversationRun(t, false)
	ttft := func(r load.RequestResult) time.Duration { return r.FirstContent.Sub(r.Sent) }
	for i, r := range on {
		if !r.OK() || r.CachedTokens == nil || r.ServerTimings == nil {
			t.Fatalf("turn %d: %+v", i, r)
		}
		uncached := r.PromptTokens - *r.CachedTokens
		switch {
		case r.Turn == 1 && *r.CachedTokens > 8:
			t.Errorf("first turn found %d tokens cached: only the template and system prompt are shared", *r.CachedTokens)
		case r.Turn > 1 && uncached > 200+11+4:
			t.Errorf("turn %d: %d of %d prompt tokens uncached; want the new message (200) and its role lines", r.Turn, uncached, r.PromptTokens)
		}
		if r.ServerTimings.PromptN != uncached {
			t.Errorf("timings.prompt_n %d, want %d", r.ServerTimings.PromptN, uncached)
		}
	}
	var sumOn, sumOff time.Duration
	for i := range on {
		if on[i].Turn == 3 {
			sumOn += ttft(on[i])
			sumOff += ttft(off[i])
		}
	}
	// Third turns: about 200 vs 600 prefilled tokens (40 vs 120 ms at this time scale).
	if sumOn*2 > sumOff {
		t.Errorf("third turns' TTFT %s with the cache against %s without: want well under half", sumOn, sumOff)
	}
	t.Logf("third turns' TTFT: %s with cached prefill, %s without", sumOn, sumOff)
}
