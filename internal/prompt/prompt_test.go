package prompt

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// wordCounter counts like a word-level tokenizer: 1.3 tokens a word (rounded over the whole
// text) plus one per punctuation mark.
type wordCounter struct{ calls atomic.Int64 }

func (c *wordCounter) CountTokens(_ context.Context, text string) (int, error) {
	c.calls.Add(1)
	return int(math.Round(1.3*float64(len(strings.Fields(text))))) + strings.Count(text, ",") + strings.Count(text, "."), nil
}

// charCounter counts one token per four characters, like a byte-level BPE on average.
type charCounter struct{ calls atomic.Int64 }

func (c *charCounter) CountTokens(_ context.Context, text string) (int, error) {
	c.calls.Add(1)
	return len(text) / 4, nil
}

type countingCounter interface {
	TokenCounter
	count() int
}

func (c *wordCounter) count() int { return int(c.calls.Load()) }
func (c *charCounter) count() int { return int(c.calls.Load()) }

func TestPromptsTokenize(t *testing.T) {
	tests := []struct {
		name    string
		counter func() countingCounter
		target  int
		// the fakes' granularity allows an exact hit for nearly every prompt
		minExact int
	}{
		{"word counter 2K", func() countingCounter { return &wordCounter{} }, 2048, 60},
		{"word counter 200", func() countingCounter { return &wordCounter{} }, 200, 60},
		// len/4 moves in steps of four characters; some brackets admit no ending that lands
		// exactly within the call budget, and those stay within ±1.
		{"char counter 2K", func() countingCounter { return &charCounter{} }, 2048, 56},
		{"char counter 8K", func() countingCounter { return &charCounter{} }, 8192, 56},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			counter := tc.counter()
			g := &Generator{Seed: 42, Counter: counter}
			const n = 64
			prompts, cal, err := g.Prompts(context.Background(), "measured", n, tc.target)
			if err != nil {
				t.Fatal(err)
			}
			if len(prompts) != n || cal.Method != MethodTokenize || cal.TargetTokens != tc.target {
				t.Fatalf("%d prompts, calibration %+v", len(prompts), cal)
			}
			exact, maxErr := 0, 0
			for _, p := range prompts {
				c, _ := counter.CountTokens(context.Background(), p)
				if c == tc.target {
					exact++
				}
				maxErr = max(maxErr, abs(c-tc.target))
			}
			if exact < tc.minExact || maxErr > 1 {
				t.Errorf("%d of %d exact, worst off by %d; want ≥ %d exact and the rest within ±1", exact, n, maxErr, tc.minExact)
			}
			if cal.Exact != exact || cal.MaxErrorTokens != maxErr && exact != n {
				t.Errorf("calibration says %d exact, worst %d; recount says %d, %d", cal.Exact, cal.MaxErrorTokens, exact, maxErr)
			}
			// Bounded: never more than MaxCallsPerPrompt each, and few on average once the
			// rate is learnt (measured: 2.1 to 3.3 a prompt with these fakes).
			if calls := counter.count() - n; calls != cal.Calls || calls > 4*n {
				t.Errorf("%d counter calls (calibration says %d) for %d prompts", calls, cal.Calls, n)
			}
			assertUnique(t, prompts)
			t.Logf("%+v", cal)
		})
	}
}

func TestPromptsCallsBounded(t *testing.T) {
	// A counter that never settles: its answer does not depend on the text at all.
	stubborn := counterFunc(func(string) (int, error) { return 7, nil })
	g := &Generator{Seed: 1, Counter: stubborn, MaxCallsPerPrompt: 4}
	var counted atomic.Int64 // prompts are fitted concurrently
	g.Counter = counterFunc(func(s string) (int, error) { counted.Add(1); return stubborn(s) })
	prompts, cal, err := g.Prompts(context.Background(), "s", 10, 500)
	calls := int(counted.Load())
	if err != nil {
		t.Fatal(err)
	}
	if calls > 40 || cal.Calls != calls || len(prompts) != 10 || cal.Exact != 0 || cal.MaxErrorTokens != 493 {
		t.Errorf("%d calls, calibration %+v", calls, cal)
	}
}

type counterFunc func(string) (int, error)

func (f counterFunc) CountTokens(_ context.Context, text string) (int, error) { return f(text) }

func TestPromptsUsageProbe(t *testing.T) {
	const overhead = 51 // the chat template the fake server adds
	calls := 0
	probe := func(_ context.Context, text string) (int, error) {
		calls++
		return overhead + len(text)/4, nil
	}
	g := &Generator{Seed: 7, Probe: probe}
	for _, target := range []int{2048, 8192} {
		before := calls
		prompts, cal, err := g.Prompts(context.Background(), "measured", 32, target)
		if err != nil {
			t.Fatal(err)
		}
		if cal.Method != MethodUsage || cal.Calls != 3 || calls-before != 3 {
			t.Errorf("target %d: calibration %+v after %d probes", target, cal, calls-before)
		}
		if math.Abs(cal.TemplateOverheadTokens-overhead) > 2 || math.Abs(cal.TokensPerChar-0.25) > 0.001 {
			t.Errorf("target %d: estimated overhead %v, rate %v; want about %d and 0.25", target, cal.TemplateOverheadTokens, cal.TokensPerChar, overhead)
		}
		for _, p := range prompts {
			if got := len(p) / 4; abs(got-target) > 2 {
				t.Errorf("target %d: a prompt of %d own tokens", target, got)
			}
		}
		assertUnique(t, prompts)
	}
	// The fit is kept: more trials of a workload cost no probes.
	before := calls
	if _, cal, err := g.Prompts(context.Background(), "warmup", 8, 2048); err != nil || cal.Calls != 0 || calls != before {
		t.Errorf("second call: %+v %v, %d probes", cal, err, calls-before)
	}
}

func TestPromptsEstimate(t *testing.T) {
	g := &Generator{Seed: 3}
	prompts, cal, err := g.Prompts(context.Background(), "s", 4, 300)
	if err != nil || cal.Method != MethodEstimate || cal.Calls != 0 || len(prompts) != 4 {
		t.Fatalf("%+v %v", cal, err)
	}
	// 300 tokens at 0.3 per character: about 1000 characters.
	for _, p := range prompts {
		if len(p) < 980 || len(p) > 1020 {
			t.Errorf("a prompt of %d characters", len(p))
		}
	}
}

func TestPromptsDeterministicAndDisjoint(t *testing.T) {
	ctx := context.Background()
	gen := func(seed int64, stream string) []string {
		g := &Generator{Seed: seed, Counter: &wordCounter{}}
		p, _, err := g.Prompts(ctx, stream, 64, 512)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := gen(9, "2K / 512 c=12 t=1 measured"), gen(9, "2K / 512 c=12 t=1 measured")
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("prompt %d differs between two runs with one seed", i)
		}
	}
	other := gen(10, "2K / 512 c=12 t=1 measured")
	warm := gen(9, "2K / 512 c=12 t=1 warmup")
	all := append(append(append([]string{}, a...), other...), warm...)
	assertUnique(t, all)
}

func TestPromptsErrors(t *testing.T) {
	boom := errors.New("tokenize: 503")
	g := &Generator{Counter: counterFunc(func(string) (int, error) { return 0, boom })}
	if _, _, err := g.Prompts(context.Background(), "s", 2, 100); !errors.Is(err, boom) {
		t.Errorf("counter error: %v", err)
	}
	g = &Generator{Probe: func(context.Context, string) (int, error) { return 0, boom }}
	if _, _, err := g.Prompts(context.Background(), "s", 2, 100); !errors.Is(err, boom) {
		t.Errorf("probe error: %v", err)
	}
	g = &Generator{Probe: func(context.Context, string) (int, error) { return 40, nil }}
	if _, _, err := g.Prompts(context.Background(), "s", 2, 100); err == nil {
		t.Error("a probe whose count ignores the prompt must be reported")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g = &Generator{Counter: &wordCounter{}}
	if _, _, err := g.Prompts(ctx, "s", 2, 100); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, _, err := g.Prompts(context.Background(), "s", 2, 0); err == nil {
		t.Error("target 0 must be rejected")
	}
}

// assertUnique checks prompts are distinct, start with distinct words (nothing for a prefix
// cache to share), and are plain lowercase ASCII words with spaces and punctuation.
func assertUnique(t *testing.T, prompts []string) {
	t.Helper()
	seen, first := map[string]bool{}, map[string]bool{}
	for i, p := range prompts {
		if seen[p] {
			t.Fatalf("prompt %d repeats an earlier one", i)
		}
		seen[p] = true
		w := strings.Fields(p)[0]
		if first[w] {
			t.Fatalf("prompt %d starts with %q like an earlier one", i, w)
		}
		first[w] = true
		for _, r := range p {
			if !(r >= 'a' && r <= 'z' || r == ' ' || r == ',' || r == '.') {
				t.Fatalf("prompt %d has %q", i, r)
			}
		}
	}
}

// TestPromptsReportTheFailureNotItsCancellations: prompts are fitted concurrently and the
// first failure cancels the rest; the error is that failure, not a cancellation it caused.
func TestPromptsReportTheFailureNotItsCancellations(t *testing.T) {
	down := errors.New("connection refused")
	var calls atomic.Int64
	g := &Generator{Seed: 1, Counter: counterFunc(func(text string) (int, error) {
		if calls.Add(1) < 4 {
			return len(text) / 4, nil // the first prompt learns the rate
		}
		if strings.Contains(text, " ") && calls.Load() == 6 {
			return 0, down
		}
		time.Sleep(20 * time.Millisecond) // the others are still counting when it fails
		return len(text) / 4, nil
	})}
	_, _, err := g.Prompts(context.Background(), "s", 16, 200)
	if !errors.Is(err, down) {
		t.Fatalf("err = %v, want the counter's failure", err)
	}
}
