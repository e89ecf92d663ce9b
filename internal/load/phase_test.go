package load

import (
	"context"
	"strings"
	"testing"
)

// BeforeMeasured runs once, after every warmup has been sent and answered and before any
// measured prompt is sent, so counters read there split the two phases.
func TestRunTrialBeforeMeasured(t *testing.T) {
	t.Parallel()
	fs := &failingStreamer{sends: map[string]int{}}
	var calls int
	var atCall map[string]int
	spec := TrialSpec{Concurrency: 3, Warmup: prompts("w", 4), Measured: prompts("m", 5), OutputTokens: 1,
		BeforeMeasured: func() {
			calls++
			fs.mu.Lock()
			atCall = map[string]int{}
			for p, n := range fs.sends {
				atCall[p] = n
			}
			fs.mu.Unlock()
		}}
	if _, err := RunTrial(context.Background(), fs, spec); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("BeforeMeasured called %d times, want 1", calls)
	}
	warm, measured := 0, 0
	for p := range atCall {
		if strings.HasPrefix(p, "w") {
			warm++
		} else {
			measured++
		}
	}
	if warm != 4 || measured != 0 {
		t.Errorf("at BeforeMeasured %d warmups and %d measured prompts had been sent, want 4 and 0", warm, measured)
	}
}
