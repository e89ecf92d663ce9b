package results

import (
	"strings"
	"testing"
)

// The Markdown report says what the apply's warnings say about how a number was made: where
// the load ran, the engine warm-up, levels whose trials disagreed beyond their size (in the
// workload's own unit: users here) and the load generator's host load.
func TestMarkdownSaysWhereAndHowTheLoadRan(t *testing.T) {
	t.Parallel()
	d, _ := usersDocument(t)
	d.AIPerf.Version = "terraform-provider-llmserve 0.1.0"
	d.AIPerf.EngineWarmupRequests = 16
	d.Runner = &Runner{Kind: "docker", Host: "unix:///var/run/docker.sock", Network: "container:0123456789ab"}
	w := &d.Workloads[0]
	w.TrialDisagreements = []TrialDisagreement{{Concurrency: 4, Objective: "p95 time_to_first_token", Low: 1200, High: 2400, LowTrial: 1, HighTrial: 2, LowUpper: 1300, HighLower: 2300, Requests: 32}}
	for i := range w.AllTrials {
		w.AllTrials[i].Host = &HostLoad{CPUs: 2, LoadAvg1mStart: 0.8 + float64(i), LoadAvg1mEnd: 1.1 + float64(i), BusyPercent: 40 + float64(i)}
	}
	md := Markdown(d)
	for _, want := range []string{
		"| Engine warm-up | 16 requests before each workload's first trial |",
		"| Load ran | docker runner on `unix:///var/run/docker.sock`, network `container:0123456789ab` |",
		"- at 4 users, p95 time\\_to\\_first\\_token: 1200 in trial 1 but 2400 in trial 2 (+100 %)",
		"Load generator's host over",
		"1-minute load average 0.80–",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	d.Runner = nil
	if md := Markdown(d); !strings.Contains(md, "| Load ran | in the Terraform process |") {
		t.Errorf("a local run does not say where its load ran:\n%s", md)
	}
}
