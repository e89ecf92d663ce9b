package simengine

import (
	"testing"
	"time"
)

const ms = time.Millisecond

// quiet is a noise-free model whose timings are easy to compute by hand: prefill 1 ms per prompt
// token, a decode step 10 ms plus perSeq per running request.
func quiet(slots int, perSeq time.Duration) Model {
	return Model{Slots: slots, PrefillPerToken: ms, DecodeStep: 10 * ms, DecodePerSeq: perSeq, Seed: 7}
}

func TestRunTimings(t *testing.T) {
	type req struct{ start, first, end time.Duration }
	tests := []struct {
		name  string
		model Model
		trial Trial
		want  []req
	}{
		{
			// One at a time: prefill 10 ms, then 2 decode steps of 10 ms; the replacement is
			// sent the moment the first one ends.
			name:  "sequential",
			model: quiet(4, 0),
			trial: Trial{Concurrency: 1, Measured: 2, InputTokens: 10, OutputTokens: 3},
			want:  []req{{0, 10 * ms, 30 * ms}, {30 * ms, 40 * ms, 60 * ms}},
		},
		{
			// One slot, two users: the second waits in the queue for the whole first request.
			name:  "queueing",
			model: quiet(1, 0),
			trial: Trial{Concurrency: 2, Measured: 2, InputTokens: 10, OutputTokens: 3},
			want:  []req{{0, 10 * ms, 30 * ms}, {0, 40 * ms, 60 * ms}},
		},
		{
			// Two slots: both prompts prefill as one 20 ms batch; each decode step with two
			// running costs 10 + 2*5 = 20 ms.
			name:  "batched",
			model: quiet(2, 5*ms),
			trial: Trial{Concurrency: 2, Measured: 2, InputTokens: 10, OutputTokens: 3},
			want:  []req{{0, 20 * ms, 60 * ms}, {0, 20 * ms, 60 * ms}},
		},
		{
			// A prefill batch holds at most 10 tokens, so r1 prefills after r0 (10 -> 20) and
			// r0, already decoding, stalls meanwhile: its two decode steps end at 40, not 30.
			name:  "prefill interference",
			model: func() Model { m := quiet(4, 0); m.MaxPrefillTokens = 10; return m }(),
			trial: Trial{Concurrency: 2, Measured: 2, InputTokens: 10, OutputTokens: 3},
			want:  []req{{0, 10 * ms, 40 * ms}, {0, 20 * ms, 40 * ms}},
		},
		{
			// The cap never blocks a lone request larger than itself.
			name:  "prompt above the prefill cap",
			model: func() Model { m := quiet(4, 0); m.MaxPrefillTokens = 5; return m }(),
			trial: Trial{Concurrency: 1, Measured: 1, InputTokens: 10, OutputTokens: 1},
			want:  []req{{0, 10 * ms, 10 * ms}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.model.Run(tt.trial)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d requests, want %d", len(got), len(tt.want))
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Start != w.start || g.FirstToken != w.first || g.End != w.end {
					t.Errorf("request %d: start/first/end = %s/%s/%s, want %s/%s/%s", i, g.Start, g.FirstToken, g.End, w.start, w.first, w.end)
				}
				if g.Warmup != (i < tt.trial.Warmups) || g.Index != i {
					t.Errorf("request %d: index %d warmup %v", i, g.Index, g.Warmup)
				}
			}
		})
	}
}

func TestRequestTimingMetrics(t *testing.T) {
	r := RequestTiming{Start: 5 * ms, FirstToken: 25 * ms, End: 85 * ms, OutputTokens: 4}
	if r.TTFT() != 20*ms || r.Latency() != 80*ms || r.ITL() != 20*ms {
		t.Errorf("TTFT/latency/ITL = %s/%s/%s, want 20ms/80ms/20ms", r.TTFT(), r.Latency(), r.ITL())
	}
	if (RequestTiming{OutputTokens: 1}).ITL() != 0 {
		t.Errorf("ITL of a one-token request must be 0")
	}
}

func TestRunNoiseIsDeterministic(t *testing.T) {
	m := DefaultModel()
	tr := Trial{Concurrency: 8, Warmups: 8, Measured: 64, InputTokens: 1024, OutputTokens: 64, Index: 2}
	a, err := m.Run(tr)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Run(tr)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same (seed, concurrency, index) gave different request %d: %+v vs %+v", i, a[i], b[i])
		}
	}
	tr.Index = 3
	c, err := m.Run(tr)
	if err != nil {
		t.Fatal(err)
	}
	if c[len(c)-1].End == a[len(a)-1].End {
		t.Errorf("another trial index drew the same noise")
	}
	// The noise is a few per cent, not a different engine.
	ratio := float64(c[len(c)-1].End) / float64(a[len(a)-1].End)
	if ratio < 0.8 || ratio > 1.25 {
		t.Errorf("trial-to-trial duration ratio %.3f, want within a few per cent", ratio)
	}
}

func TestRunRejectsInvalidInput(t *testing.T) {
	tests := []struct {
		name  string
		model Model
		trial Trial
	}{
		{"no slots", Model{DecodeStep: ms}, Trial{Concurrency: 1, Measured: 1, InputTokens: 1, OutputTokens: 1}},
		{"zero decode step", Model{Slots: 1}, Trial{Concurrency: 1, Measured: 1, InputTokens: 1, OutputTokens: 1}},
		{"negative noise", Model{Slots: 1, DecodeStep: ms, TrialNoise: -1}, Trial{Concurrency: 1, Measured: 1, InputTokens: 1, OutputTokens: 1}},
		{"zero concurrency", quiet(1, 0), Trial{Measured: 1, InputTokens: 1, OutputTokens: 1}},
		{"zero output", quiet(1, 0), Trial{Concurrency: 1, Measured: 1, InputTokens: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.model.Run(tt.trial); err == nil {
				t.Errorf("Run accepted %+v / %+v", tt.model, tt.trial)
			}
		})
	}
}

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"hello", 1},
		{"Hello, world!", 4},         // 2 words + ',' + '!'
		{"  spaced\tout\nwords ", 3}, // any whitespace separates
		{"...", 3},                   // punctuation only: no word token
		{"don't stop", 3},            // "dont" + "'" + "stop"
	}
	for _, tt := range tests {
		if got := CountTokens(tt.in); got != tt.want {
			t.Errorf("CountTokens(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
	ids := Tokenize("Hello, world!")
	if ids[1] != ',' || ids[3] != '!' || ids[0] < 1000 || ids[2] < 1000 {
		t.Errorf("Tokenize ids = %v, want word ids >= 1000 and punctuation code points", ids)
	}
	for i := range 50 {
		w := outputWord(42, i)
		if CountTokens(w) != 1 {
			t.Fatalf("output word %q is not exactly one token", w)
		}
	}
}
