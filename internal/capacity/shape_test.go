package capacity

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/prompt"
)

// Workload shapes: lengths drawn from a seeded normal spread, clipped at 1, the same for the
// same stream; a shared prefix that starts every prompt, the rest unique.
func TestWorkloadPrompts(t *testing.T) {
	t.Parallel()
	s := &session{cfg: Config{Seed: 7}, prompts: &prompt.Generator{Seed: 7}}
	w := Workload{Label: "chat", InputTokens: 400, OutputTokens: 100, InputTokensStddev: 60, OutputTokensStddev: 30, SharedPrefixTokens: 120}
	ctx := context.Background()
	got, err := s.workloadPrompts(ctx, w, "chat c=4 probe t=1 measured", 400)
	if err != nil {
		t.Fatal(err)
	}
	prompts, outs := got.texts, got.maxTokens
	if len(prompts) != 400 || len(outs) != 400 {
		t.Fatalf("%d prompts, %d output lengths", len(prompts), len(outs))
	}
	prefix := prompts[0][:strings.Index(prompts[0], "\n\n")+2]
	if len(prefix) < 200 {
		t.Fatalf("prefix %q is too short for 120 tokens", prefix)
	}
	seen := map[string]bool{}
	for _, p := range prompts {
		if !strings.HasPrefix(p, prefix) {
			t.Fatal("a prompt does not start with the shared prefix")
		}
		seen[strings.TrimPrefix(p, prefix)] = true
	}
	if len(seen) != len(prompts) {
		t.Fatalf("%d distinct prompt bodies of %d", len(seen), len(prompts))
	}
	// 400 draws of N(100, 30): the sample mean is within 100 ± 3·30/√400 = ±4.5, the
	// standard deviation within a few of 30, and nothing below 1.
	mean, sd := meanStd(outs)
	if math.Abs(mean-100) > 4.5 || math.Abs(sd-30) > 4 || slices.Min(outs) < 1 {
		t.Fatalf("output lengths mean %.1f sd %.1f min %d", mean, sd, slices.Min(outs))
	}
	again, _ := s.workloadPrompts(ctx, w, "chat c=4 probe t=1 measured", 400)
	if !slices.Equal(outs, again.maxTokens) || !slices.Equal(prompts, again.texts) {
		t.Error("the same stream must draw the same lengths and prompts")
	}
	other, _ := s.workloadPrompts(ctx, w, "chat c=4 probe t=1 warmup", 400)
	if slices.Equal(outs, other.maxTokens) {
		t.Error("another stream must draw other lengths")
	}
	// Clipping: a spread as wide as a tiny mean clips at 1.
	tiny, _ := s.workloadPrompts(ctx, Workload{Label: "t", InputTokens: 2, OutputTokens: 2, OutputTokensStddev: 2}, "tiny", 200)
	if slices.Min(tiny.maxTokens) != 1 {
		t.Errorf("no draw clipped at 1: min %d", slices.Min(tiny.maxTokens))
	}
	// Fixed lengths and no prefix: one call, no per-request lengths.
	plain, err := s.workloadPrompts(ctx, Workload{Label: "p", InputTokens: 50, OutputTokens: 8}, "plain", 3)
	if err != nil || len(plain.texts) != 3 || plain.maxTokens != nil {
		t.Fatalf("plain workload: %d prompts, lengths %v, %v", len(plain.texts), plain.maxTokens, err)
	}
}

func meanStd(v []int) (float64, float64) {
	sum := 0.0
	for _, x := range v {
		sum += float64(x)
	}
	m := sum / float64(len(v))
	ss := 0.0
	for _, x := range v {
		ss += (float64(x) - m) * (float64(x) - m)
	}
	return m, math.Sqrt(ss / float64(len(v)))
}
