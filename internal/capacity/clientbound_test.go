package capacity

import (
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// starvedAfter reads the CPU of a client under a 3 % quota that stops it for 80 % of every
// trial's load from its (keep+1)-th trial on, and never before: each trial reads twice,
// as its load starts and as it ends. It counts the trials it saw.
type starvedAfter struct {
	keep int

	mu         sync.Mutex
	readings   int
	start      time.Time
	throttled  time.Duration
	periods, n uint64
}

func (s *starvedAfter) read() cpuSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readings++
	now := time.Now()
	if s.readings%2 == 1 {
		s.start = now
	} else if trial := s.readings / 2; trial > s.keep {
		load := now.Sub(s.start)
		s.throttled += load * 8 / 10
		p := uint64(load / (100 * time.Millisecond))
		s.periods, s.n = s.periods+p+1, s.n+p+1
	}
	return cpuSample{at: now, usedOK: true, cpus: 2,
		cgroup: cgroupCPU{version: results.CPUFromCgroupV1, dir: "/sys/fs/cgroup/cpu/ci", quota: 0.03, periods: s.periods, throttled: s.n, throttledTime: s.throttled}}
}

func (s *starvedAfter) trials() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readings / 2
}

// A client starved from the third trial on: that trial, run once more, is client-bound
// again, so the search stops there; the trials below it passed, but the document reports no
// capacity, says why, and warns with the fix for where the load ran. A resumed run with the
// client unstarved measures that trial again and finds the boundary.
func TestClientBoundStopsTheSearch(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(twoSlotEngine(t, simengine.Options{}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	starved := &starvedAfter{keep: 2}
	cfg.sampleCPU, cfg.RecordsDirectory = starved.read, t.TempDir()
	var lines []string
	cfg.ProgressLine = func(l string) { lines = append(lines, l) }
	doc, journal := runRecorded(t, cfg)
	w := doc.Workloads[0]
	if !w.ClientBound || w.MaximumPassingConcurrency != nil || w.FirstFailingConcurrency != nil || w.SearchBound() != results.BoundNone {
		t.Fatalf("client_bound %t, boundary %v / %v: want client-bound, no capacity", w.ClientBound, w.MaximumPassingConcurrency, w.FirstFailingConcurrency)
	}
	var verdicts []string
	for _, tr := range w.AllTrials {
		verdicts = append(verdicts, tr.Verdict)
	}
	if !slices.Equal(verdicts, []string{"pass", "pass", "client_bound"}) {
		t.Fatalf("verdicts %q", verdicts)
	}
	last := w.AllTrials[2]
	if c := last.Client; c == nil || !slices.Equal(c.BoundBy, []string{results.ClientCPUThrottled}) || c.CPU.Source != results.CPUFromCgroupV1 ||
		c.CPU.Throttling.ThrottledPercent < 79 || c.CPU.AvailableCPUs != 0.03 {
		t.Fatalf("client block %+v", c)
	}
	for _, tr := range w.AllTrials[:2] {
		if tr.Client == nil || tr.Client.Bound || tr.Client.CPU.Throttling.ThrottledPeriods != 0 {
			t.Fatalf("an unstarved trial's client block %+v", tr.Client)
		}
	}
	// The first client-bound trial ran once more; only the second is journaled and kept.
	if n := starved.trials(); n != 4 || len(journal) != 3 || journal[2].Verdict != results.VerdictClientBound {
		t.Fatalf("%d trials run, journal of %d, last %+v", n, len(journal), journal[len(journal)-1])
	}
	if !slices.ContainsFunc(lines, func(l string) bool {
		return strings.Contains(l, "the trial runs again: the load generator was the bottleneck at concurrency 3")
	}) {
		t.Errorf("no line says the trial ran again: %q", lines)
	}
	note := "the load generator was the bottleneck at concurrency 3 (confirmation 1): its CPU quota of 0.03 CPUs stopped it for 8"
	if !slices.ContainsFunc(w.Notes, func(n string) bool { return strings.HasPrefix(n, note) }) {
		t.Errorf("notes %q lack %q", w.Notes, note)
	}
	// A reader derives the same, and the records recompute it.
	back := roundTrip(t, doc)
	if !back.Workloads[0].ClientBound {
		t.Error("client_bound lost in the round trip")
	}
	if _, err := records.Verify(back, cfg.RecordsDirectory); err != nil {
		t.Errorf("records do not verify: %v", err)
	}

	// The apply warns, naming the fix for where the load ran.
	for _, tc := range []struct {
		where *results.Runner
		fix   string
	}{
		{nil, "The load ran in the Terraform process (the provider): give that process more CPU"},
		{&results.Runner{Kind: "docker", Host: "unix:///var/run/docker.sock"}, "The load ran in the Docker runner container on unix:///var/run/docker.sock"},
		{&results.Runner{Kind: "kubernetes"}, "raise runner.kubernetes.pods"},
	} {
		d := *doc
		d.Runner = tc.where
		ws := cfg.ResultWarnings(&d)
		i := slices.IndexFunc(ws, func(p problem.Problem) bool {
			return strings.HasPrefix(p.Summary, "The load generator, not the server, was the bottleneck")
		})
		if i < 0 || !strings.Contains(ws[i].Detail, tc.fix) || !strings.Contains(ws[i].Detail, "at concurrency 3: its CPU quota") ||
			!strings.Contains(ws[i].Detail, "maximum passing level is null") {
			t.Errorf("where %+v: warnings %+v", tc.where, ws)
		}
	}

	// Resumed with the client unstarved, the client-bound trial is measured again.
	cfg.History, cfg.sampleCPU, cfg.ProgressLine = journal, (&starvedAfter{keep: 100}).read, nil
	doc, _ = runRecorded(t, cfg)
	if w := doc.Workloads[0]; w.ClientBound || w.MaximumPassingConcurrency == nil || *w.MaximumPassingConcurrency != 2 {
		t.Fatalf("resumed: client_bound %t, maximum passing %v", w.ClientBound, w.MaximumPassingConcurrency)
	}
}

// An open-loop search starved from its first trial reports no rate: the schedule's client
// measured itself.
func TestClientBoundOpenLoop(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(twoSlotEngine(t, simengine.Options{}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.WarmupRequests, cfg.MeasuredRequests, cfg.ConfirmationTrials = 1, 8, 1
	cfg.OpenLoop = &OpenLoop{Arrival: load.Arrival{Pattern: load.ArrivalConstant}, MinRate: 3, MaxRate: 12, Tolerance: 0.25}
	cfg.sampleCPU = (&starvedAfter{keep: 0}).read
	doc, journal := runRecorded(t, cfg)
	w := doc.Workloads[0]
	if !w.ClientBound || w.MaximumPassingRequestRate != nil || w.FirstFailingRequestRate != nil || len(w.AllTrials) != 1 ||
		w.AllTrials[0].Verdict != results.VerdictClientBound || w.AllTrials[0].RequestRate == 0 || w.AllTrials[0].Client.ScheduleLimitMs == 0 {
		t.Fatalf("workload %+v", w)
	}
	if len(journal) != 1 || journal[0].Rate == 0 {
		t.Fatalf("journal %+v", journal)
	}
	roundTrip(t, doc)
}
