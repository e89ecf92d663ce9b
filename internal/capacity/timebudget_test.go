package capacity

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
	"github.com/llmserve/terraform-provider-llmserve/internal/trace"
)

// CheckTime against hand-computed floors: what a trial waits on its own pauses, whatever the
// server does, set against timeouts.create.
func TestCheckTime(t *testing.T) {
	t.Parallel()
	users := func(distribution string, mean time.Duration, turns, warmups int) func(*Config) {
		return func(c *Config) {
			c.Workloads[0].Conversation = &Conversation{Turns: turns, WarmupConversations: warmups, Think: load.Think{Distribution: distribution, Mean: mean}}
		}
	}
	for _, tc := range []struct {
		name   string
		edit   func(*Config)
		budget Budget
		want   string // path: summary: detail substring; "" for no problem
		warn   bool
	}{
		{"closed loop: only the server decides", func(*Config) {}, Budget{Limit: time.Second}, "", false},
		// 8 measured turns over at most 5 users: one user sends 2, so
		// 1h × (2 warm-up conversations × 3 turns + 2 − 1) = 7h.
		{"constant think time", users(load.ThinkConstant, time.Hour, 3, 2), Budget{Limit: 6 * time.Hour},
			"workloads[0].conversation.think_time.mean: Trial longer than timeouts.create: workloads[0].conversation.think_time.mean: a passing trial of workload \"64 / 8\" waits at least " +
				"think_time.mean 1h0m0s × (warmup_conversations 2 × turns 3 + ⌈trial.measured_requests 8 / 5 users⌉ − 1) = 7h0m0s on its own pauses, however fast the server answers, " +
				"which is longer than timeouts.create (6h0m0s), and a trial cut short keeps nothing", false},
		{"constant think time inside the limit", users(load.ThinkConstant, time.Hour, 3, 2), Budget{Limit: 8 * time.Hour},
			// 2 trials at least (a boundary confirmed by trial.confirmation_trials = 2) × 7h = 14h.
			"timeouts.create: Run longer than timeouts.create: timeouts.create (8h0m0s) is shorter than the pauses of the fewest trials the search can ask for, however fast the server answers: " +
				"2 × 7h0m0s (\"64 / 8\") = 14h0m0s over 2 trials; set progress_file", true},
		{"constant think time, room for the run", users(load.ThinkConstant, time.Hour, 3, 2), Budget{Limit: 14 * time.Hour}, "", false},
		{"random think time", users(load.ThinkExponential, time.Hour, 3, 2), Budget{Limit: 6 * time.Hour}, "waits on average at least think_time.mean 1h0m0s", true},
		{"detached runner", users(load.ThinkConstant, time.Hour, 3, 2), Budget{Limit: 6 * time.Hour, Detached: true}, "the runner measures on past it", true},
		{"no think time", users(load.ThinkConstant, 0, 3, 2), Budget{Limit: time.Nanosecond}, "", false},
		// (1 warmup + 8 measured − 1) gaps of 1/0.002 s = 4000 s.
		{"constant arrivals", func(c *Config) {
			c.OpenLoop = &OpenLoop{Arrival: load.Arrival{Pattern: load.ArrivalConstant}, MinRate: 0.001, MaxRate: 0.002, Tolerance: 0.05}
		}, Budget{Limit: time.Hour}, "search.rate.max: Trial longer than timeouts.create: search.rate.max: a passing trial of workload \"64 / 8\" waits at least (1 warmups + 8 measured requests − 1) / search.rate.max 0.002 requests/s = 1h6m40s", false},
		{"poisson arrivals", func(c *Config) {
			c.OpenLoop = &OpenLoop{Arrival: load.Arrival{Pattern: load.ArrivalPoisson}, MinRate: 0.001, MaxRate: 0.002, Tolerance: 0.05}
		}, Budget{Limit: time.Hour}, "waits on average at least (1 warmups", true},
		// A trace recorded over 3 h, replayed at most 2× as fast: 1h30m.
		{"replay", func(c *Config) {
			reqs := make([]trace.Request, 10)
			for i := range reqs {
				reqs[i] = trace.Request{Offset: time.Duration(i) * 20 * time.Minute, InputTokens: 16, OutputTokens: 4}
			}
			c.Workloads[0] = Workload{Label: "recorded", TraceFile: "t.jsonl", Trace: &trace.Trace{Requests: reqs}}
			c.OpenLoop = &OpenLoop{Speedup: true, MinRate: 1, MaxRate: 2, Tolerance: 0.05}
		}, Budget{Limit: time.Hour}, "search.speedup.max: Trial longer than timeouts.create: search.speedup.max: a passing trial of workload \"recorded\" waits at least the trace's span 3h0m0s / search.speedup.max 2 = 1h30m0s", false},
		{"think time beyond a Duration", users(load.ThinkConstant, 1<<62, 100, 100), Budget{Limit: time.Hour}, "years on its own pauses", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig("http://127.0.0.1:1")
			tc.edit(&cfg)
			var got []string
			warn := false
			for _, p := range cfg.CheckTime(tc.budget) {
				got = append(got, p.Path.String()+": "+p.Summary+": "+p.Detail)
				warn = p.Warning
			}
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("problems %q, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want) || warn != tc.warn):
				t.Errorf("problems %q (warning %v), want one containing %q (warning %v)", got, warn, tc.want, tc.warn)
			}
		})
	}
}

// A users run out of time says what it was doing: its users were thinking, not "its
// requests ran" (issue 39: a 1000h think time was blamed on the requests).
func TestUsersOutOfTimeSayThinkingUsers(t *testing.T) {
	t.Parallel()
	eng, err := simengine.NewServer(simengine.Options{Model: simengine.Model{Slots: 1, DecodeStep: time.Millisecond}, Protocol: simengine.SGLang, ModelName: "sim", CachedPrefill: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.Workloads = []Workload{{Label: "chat", InputTokens: 16, OutputTokens: 4, Conversation: &Conversation{
		Turns: 2, WarmupConversations: 1, Think: load.Think{Distribution: load.ThinkConstant, Mean: 1000 * time.Hour}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = Resume(ctx, cfg, Files{})
	var stopped *StoppedError
	if !errors.As(err, &stopped) || stopped.Why != StopTimedOut {
		t.Fatalf("err %v, want a timeout", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "while its users held their conversations (thinking users pause their think time before every turn)") || strings.Contains(msg, "requests ran") {
		t.Errorf("message %q does not say its users were thinking", msg)
	}
}
