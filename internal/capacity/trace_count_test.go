package capacity

import (
	"strings"
	"testing"
	"time"
)

// Warmups that outnumber a trace leave none measured; the message never counts below zero
// (it said "it leaves -2 measured").
func TestTraceTooShortCountsNoNegative(t *testing.T) {
	t.Parallel()
	cfg := replayConfig("http://127.0.0.1:1", constantTrace(t, 12, 100))
	cfg.WarmupRequests, cfg.StallTimeout, cfg.RequestTimeout = 14, time.Minute, time.Minute
	cfg.LoadTraces()
	found := false
	for _, p := range cfg.Validate() {
		if p.Summary != "Trace too short" {
			continue
		}
		found = true
		if strings.Contains(p.Detail, "-2") || !strings.Contains(p.Detail, "they take the whole trace and more (14 warmups for 12 requests), leaving none measured") {
			t.Errorf("detail %q", p.Detail)
		}
	}
	if !found {
		t.Error("no Trace too short problem")
	}
}
