package capacity

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// The users axis end to end against a simulated SGLang whose prefix cache serves each
// conversation's history (simengine CachedPrefill): one slot; a later turn prefills its 64
// new tokens and the role lines around them (about 80 tokens at 1 ms) and decodes 8 tokens
// at 20 ms, so S ≈ 240 ms; constant think time Z = 720 ms. N* = (S + Z) / S = 4 users
// hold the slot without waiting, a fifth waits; p95 TTFT under 150 ms (a turn's prefill
// and about 70 ms of waiting) passes up to N* and fails above it, within one level.
func TestRunUsersFindsSaturation(t *testing.T) {
	t.Parallel()
	eng, err := simengine.NewServer(simengine.Options{
		Model:    simengine.Model{Slots: 1, PrefillPerToken: time.Millisecond, DecodeStep: 20 * time.Millisecond},
		Protocol: simengine.SGLang, ModelName: "sim", CachedPrefill: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.Workloads = []Workload{{Label: "chat 64 / 8", InputTokens: 64, OutputTokens: 8, Conversation: &Conversation{
		Turns: 3, SystemPromptTokens: 32, WarmupConversations: 1, Think: load.Think{Distribution: load.ThinkConstant, Mean: 720 * time.Millisecond}}}}
	cfg.MinConcurrency, cfg.MaxConcurrency, cfg.MeasuredRequests = 1, 8, 12
	cfg.RecordsDirectory = t.TempDir() // recomputed from below
	doc, journal := runRecorded(t, cfg)
	w := doc.Workloads[0]
	if w.MaximumPassingConcurrency != nil || w.MaximumPassingUsers == nil || *w.MaximumPassingUsers < 3 || *w.MaximumPassingUsers > 5 {
		t.Fatalf("maximum passing users %v (concurrency %v), want 4 ± 1", w.MaximumPassingUsers, w.MaximumPassingConcurrency)
	}
	if w.FirstFailingUsers == nil || *w.FirstFailingUsers != *w.MaximumPassingUsers+1 {
		t.Errorf("first failing users %v", w.FirstFailingUsers)
	}
	if !strings.Contains(doc.AIPerf.ArrivalPattern, "users") {
		t.Errorf("arrival pattern %q", doc.AIPerf.ArrivalPattern)
	}
	for _, tr := range w.AllTrials {
		c := tr.Conversations
		if tr.Users < 1 || tr.Concurrency != 0 || c == nil {
			t.Fatalf("trial %+v lacks its users or conversations", tr)
		}
		if tr.Kind == "confirmation" && (c.MeasuredTurns != 12 || c.LaterTurnCachedPercent == nil || *c.LaterTurnCachedPercent < 50 || c.TurnsCachedBeyondHistory != 0 || c.InFlightPeak < 1) {
			t.Errorf("users %d: conversations %+v", tr.Users, *c)
		}
	}
	t.Logf("maximum passing users %d, first failing %d", *w.MaximumPassingUsers, *w.FirstFailingUsers)

	// Every trial recomputes from its records file through the one judge, conversations
	// figures included, and the headline holds against the recomputed trials.
	v, err := records.Verify(doc, cfg.RecordsDirectory)
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() || len(v.Trials) != len(w.AllTrials) {
		t.Errorf("verification: %d trials of %d, differences %q, contradictions %+v", len(v.Trials), len(w.AllTrials), v.Differences, v.Contradictions)
	}
	// Resumed from its journal, the search runs nothing again and finds the same boundary.
	cfg.History, cfg.Progress = journal, func(e JournalEntry) { t.Errorf("trial run again: %+v", e) }
	doc2, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if w2 := doc2.Workloads[0]; w2.MaximumPassingUsers == nil || *w2.MaximumPassingUsers != *w.MaximumPassingUsers {
		t.Errorf("resumed: maximum passing users %v, want %d", w2.MaximumPassingUsers, *w.MaximumPassingUsers)
	}
	for _, tr := range w.PassingTrials {
		t.Logf("passing %d users: first turns p95 %.0f ms, later turns p95 %.0f ms, %.0f %% of later prompts cached", tr.Users,
			tr.Conversations.FirstTurnTTFTP95Ms, tr.Conversations.LaterTurnTTFTP95Ms, *tr.Conversations.LaterTurnCachedPercent)
	}

	// Against a baseline one level up (its sides moved one user up), the run measures the
	// baseline's first failing users level for the comparison, counted in users.
	mp, ff := *w.MaximumPassingUsers+1, *w.FirstFailingUsers+1
	base := *doc
	bw := w
	bw.AllTrials, bw.MaximumPassingUsers, bw.FirstFailingUsers = nil, &mp, &ff
	bw.PassingTrials, bw.FailingTrials = atUsers(w.PassingTrials, mp), atUsers(w.FailingTrials, ff)
	base.Workloads = []results.Workload{bw}
	var added []JournalEntry
	cfg.Baseline, cfg.ComparisonBudget = &Document{&base}, 0
	cfg.Progress = func(e JournalEntry) { added = append(added, e) }
	doc3, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != cfg.ConfirmationTrials || added[0].Kind != kindComparison || added[0].Concurrency != ff {
		t.Fatalf("trials measured for the comparison %+v, want %d at %d users", added, cfg.ConfirmationTrials, ff)
	}
	for _, tr := range doc3.Workloads[0].AllTrials {
		if tr.ForComparison > 0 && (tr.Users != ff || tr.Concurrency != 0 || tr.Conversations == nil) {
			t.Errorf("a comparison trial %+v, want it at %d users", tr, ff)
		}
	}
}

func atUsers(ts []results.Trial, users int) []results.Trial {
	out := make([]results.Trial, len(ts))
	for i, t := range ts {
		t.Users = users
		out[i] = t
	}
	return out
}

// Conversations are refused where they cannot run, naming the attribute and the fix.
func TestValidateConversations(t *testing.T) {
	t.Parallel()
	conv := func() *Conversation {
		return &Conversation{Turns: 3, WarmupConversations: 1, Think: load.Think{Distribution: load.ThinkExponential, Mean: time.Second}}
	}
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"completions API", func(c *Config) { c.API = APICompletions }, "api: Conversations need the chat API"},
		{"mixed", func(c *Config) {
			c.Workloads = append(c.Workloads, Workload{Label: "single", InputTokens: 64, OutputTokens: 8})
		}, "workloads: Conversations mixed with single requests"},
		{"think without a distribution", func(c *Config) { c.Workloads[0].Conversation.Think = load.Think{Mean: time.Second} }, "workloads[0].conversation.think_time"},
		{"no turns", func(c *Config) { c.Workloads[0].Conversation.Turns = 0 }, "workloads[0].conversation.turns"},
		{"no warmup", func(c *Config) { c.Workloads[0].Conversation.WarmupConversations = 0 }, "workloads[0].conversation.warmup_conversations"},
		{"spread", func(c *Config) { c.Workloads[0].InputTokensStddev = 8 }, "workloads[0].conversation: Conversations have fixed lengths"},
		{"llama.cpp flush", func(c *Config) { c.CacheFlush = "llamacpp" }, `trial.cache_flush: Conversations need the prefix cache: trial.cache_flush = "llamacpp" turns llama.cpp's prompt cache off on every request, which is how its cache is flushed, and a conversation needs that cache`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig("http://127.0.0.1:1")
			cfg.Workloads[0].Conversation = conv()
			tc.edit(&cfg)
			var got []string
			for _, p := range cfg.Validate() {
				got = append(got, p.Path.String()+": "+p.Summary+": "+p.Detail)
			}
			if !strings.Contains(strings.Join(got, "\n"), tc.want) {
				t.Errorf("problems %q, want %q", got, tc.want)
			}
		})
	}
	ok := testConfig("http://127.0.0.1:1")
	ok.StallTimeout, ok.RequestTimeout = time.Minute, time.Minute
	ok.Workloads[0].Conversation = conv()
	if ps := ok.Validate(); len(ps) != 0 {
		t.Errorf("a valid conversation workload: %v", ps)
	}
}

// A users search bounded by its levels says so in users (it read the concurrency boundary,
// nil on this axis, and panicked).
func TestBoundNoteUsers(t *testing.T) {
	t.Parallel()
	two, three := 2, 3
	cases := []struct {
		w    results.Workload
		want string
	}{
		{results.Workload{MaximumPassingUsers: &two}, "every number of users tried passed, up to 2: capacity is at least 2 users; add a higher level to search.concurrency_levels"},
		{results.Workload{FirstFailingUsers: &three}, "even the fewest users tried, 3, failed: capacity is below 3 users"},
		{results.Workload{MaximumPassingUsers: &two, FirstFailingUsers: &three}, ""},
	}
	for _, c := range cases {
		if got := BoundNote(c.w, true); !strings.HasPrefix(got, c.want) || (c.want == "" && got != "") {
			t.Errorf("BoundNote = %q, want %q", got, c.want)
		}
	}
}

// A conversation whose last turn cannot fit the server's context is refused before any
// trial, naming the attribute and how many turns fit: 32 + 8 × (64 + 8) = 608 tokens
// against a context of 512, where (512 − 32) / 72 = 6 turns fit.
func TestRunUsersRefusesALastTurnPastTheContext(t *testing.T) {
	t.Parallel()
	eng, err := simengine.NewServer(simengine.Options{Model: simengine.TwoSlotModel(), Protocol: simengine.SGLang, ModelName: "sim", ContextLength: 512})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.Workloads = []Workload{{Label: "long", InputTokens: 64, OutputTokens: 8, Conversation: &Conversation{
		Turns: 8, SystemPromptTokens: 32, WarmupConversations: 1, Think: load.Think{Distribution: load.ThinkConstant}}}}
	_, err = Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "set workloads[0].conversation.turns to 6 or fewer") || !strings.Contains(err.Error(), "608 tokens") {
		t.Fatalf("error %v", err)
	}
	if n := eng.Stats().RequestsServed; n > 2 {
		t.Errorf("%d requests served before the refusal", n)
	}
}

// cache_flush = "auto" against llama.cpp picks the flush that turns its prompt cache off,
// which a conversation cannot use: the run refuses before measuring, naming the workload
// once (it was named twice) and the setting that works.
func TestUsersRefuseLlamaCppAutoFlushOnce(t *testing.T) {
	t.Parallel()
	eng, err := simengine.NewServer(simengine.Options{Model: simengine.TwoSlotModel(), Protocol: simengine.LlamaCpp, ModelName: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.Workloads = []Workload{{Label: "chat", InputTokens: 32, OutputTokens: 8, Conversation: &Conversation{
		Turns: 2, SystemPromptTokens: 16, WarmupConversations: 1, Think: load.Think{Distribution: load.ThinkConstant, Mean: 10 * time.Millisecond}}}}
	_, err = Run(context.Background(), cfg)
	if err == nil {
		t.Fatal("a conversation ran with llama.cpp's cache turned off")
	}
	if msg := err.Error(); strings.Count(msg, `workload "chat"`) != 1 || !strings.Contains(msg, `Set trial.cache_flush = "none"`) {
		t.Errorf("error %q: want the workload named once and the fix", msg)
	}
}
