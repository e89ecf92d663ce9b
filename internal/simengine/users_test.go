package simengine

import (
	"math"
	"testing"
	"time"
)

// One slot, a turn of 100 tokens at 1 ms and 9 output tokens at 100 ms: S = 1 s; think 3 s
// constant, so N* = 1 × (1 + 3) / 1 = 4 users. Users start 1 s apart; after their first
// conversation every turn finds its history cached (prefill 100 ms) and, at 4 users, never
// waits; at 5 users the cycle is 5 s and every turn waits 5 − 4 = 1 s.
func TestCachedTurnsByHand(t *testing.T) {
	e := CachedTurns{Slots: 1, PrefillPerToken: time.Millisecond, DecodePerToken: 100 * time.Millisecond}
	shape := Conversations{Turns: 3, SystemTokens: 50, InputTokens: 100, OutputTokens: 9}
	if s := e.ServiceTime(shape); s != time.Second {
		t.Fatalf("service %s, want 1s", s)
	}
	if n := e.SaturationUsers(shape, 3*time.Second); n != 4 {
		t.Fatalf("N* %g, want 4", n)
	}
	run := func(users int) []TurnTiming {
		out, err := e.Run(UsersRun{Users: users, Shape: shape, Turns: 60,
			Start: func(u int) time.Duration { return time.Duration(u) * time.Second },
			Think: func(int, int) time.Duration { return 3 * time.Second }})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	four := run(4)
	first := four[0]
	// The very first turn prefills the system prompt too: 150 tokens.
	if first.PromptTokens != 150 || first.CachedTokens != 0 || first.FirstToken-first.Arrival != 150*time.Millisecond {
		t.Errorf("first turn %+v", first)
	}
	for _, tt := range four[20:] {
		wantCached := 50 + (tt.Turn-1)*109
		if tt.PromptTokens != 50+(tt.Turn-1)*109+100 || tt.CachedTokens != wantCached {
			t.Errorf("turn %+v: want %d cached of %d", tt, wantCached, 50+(tt.Turn-1)*109+100)
		}
		if ttft := tt.FirstToken - tt.Arrival; ttft != 100*time.Millisecond {
			t.Errorf("4 users, turn %+v: TTFT %s, want 100ms (no wait)", tt, ttft)
		}
	}
	for _, tt := range run(5)[30:] {
		if ttft := tt.FirstToken - tt.Arrival; ttft != 1100*time.Millisecond {
			t.Errorf("5 users, turn %+v: TTFT %s, want 1.1s", tt, ttft)
		}
	}
}

// Engset by hand: one slot, two users, β = S / Z = 1/3: an arriving turn finds the other
// user's turn in the slot with probability β / (1 + β) = 1/4.
func TestBusyOnArrivalByHand(t *testing.T) {
	e := CachedTurns{Slots: 1, PrefillPerToken: time.Millisecond, DecodePerToken: 100 * time.Millisecond}
	shape := Conversations{Turns: 1, InputTokens: 100, OutputTokens: 9}
	if p := e.BusyOnArrival(shape, 3*time.Second, 2); math.Abs(p-0.25) > 1e-12 {
		t.Errorf("busy on arrival %g, want 0.25", p)
	}
	if p := e.BusyOnArrival(shape, 3*time.Second, 1); p != 0 {
		t.Errorf("one user found the slot busy: %g", p)
	}
	if n := e.EngsetUsers(shape, 3*time.Second, 0.25, 100); n != 2 {
		t.Errorf("Engset users %d, want 2", n)
	}
}
