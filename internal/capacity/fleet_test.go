package capacity

import (
	"context"
	"errors"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// peers is a fleet of generators in this process.
type peers []Peer

func (p peers) Peers(context.Context) ([]Peer, error) { return p, nil }

func workers(cfg Config, n int) peers {
	out := make(peers, n)
	for i := range out {
		out[i] = NewWorker(cfg)
	}
	return out
}

// A search spread over three generators finds the boundary one finds (the simulated engine's
// two slots: 2 passes, 3 fails): each trial's concurrency split over the pods and recorded,
// every pod's requests merged into the one trial (its records say which pod sent each),
// the pods started within a few milliseconds of each other, and every trial recomputes
// from its records file bit for bit through the one judge (llmserve-recompute -check).
func TestFleetFindsTheBoundaryOneGeneratorFinds(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(twoSlotEngine(t, simengine.Options{}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.MaxConcurrency, cfg.MeasuredRequests = 8, 12
	cfg.Pods, cfg.Fleet = 3, workers(cfg, 2)
	cfg.RecordsDirectory = t.TempDir()
	doc, journal := runRecorded(t, cfg)
	w := doc.Workloads[0]
	if w.MaximumPassingConcurrency == nil || *w.MaximumPassingConcurrency != 2 || w.FirstFailingConcurrency == nil || *w.FirstFailingConcurrency != 3 {
		t.Fatalf("boundary %v / %v, want 2 / 3", w.MaximumPassingConcurrency, w.FirstFailingConcurrency)
	}
	for _, tr := range w.AllTrials {
		pt := tr.Pods
		if pt == nil || pt.Pods != 3 || len(pt.Shares) != 3 {
			t.Fatalf("trial at %d: pods %+v", tr.Concurrency, pt)
		}
		var conc []int
		measured := 0
		for _, s := range pt.Shares {
			conc = append(conc, s.Concurrency)
			measured += s.MeasuredRequests
		}
		if !slices.Equal(conc, evenSplit(tr.Concurrency, 3)) || measured != 12 {
			t.Errorf("trial at %d: shares %+v", tr.Concurrency, pt.Shares)
		}
		if tr.Client == nil || tr.Client.CPU == nil {
			t.Errorf("trial at %d: no client CPU figures", tr.Concurrency)
		}
		if pt.StartSkewMs > 25 {
			t.Errorf("trial at %d: start skew %.3f ms between generators in one process", tr.Concurrency, pt.StartSkewMs)
		}
		if !tr.StoppedEarly && tr.Correctness.ProfilingRecords != 12 {
			t.Errorf("trial at %d: %d measured records, want every pod's 12", tr.Concurrency, tr.Correctness.ProfilingRecords)
		}
		lines, _, err := records.Read(cfg.RecordsDirectory + "/" + tr.RecordsFile)
		if err != nil {
			t.Fatal(err)
		}
		byPod := map[int]int{}
		for _, l := range lines {
			if l.Pod == nil {
				t.Fatalf("%s: a line without its pod", tr.RecordsFile)
			}
			if l.Kind == records.KindMeasured {
				byPod[*l.Pod]++
			}
		}
		for p, s := range pt.Shares {
			if byPod[p] > s.MeasuredRequests || !tr.StoppedEarly && byPod[p] != s.MeasuredRequests {
				t.Errorf("trial at %d: pod %d recorded %d measured requests of its %d", tr.Concurrency, p, byPod[p], s.MeasuredRequests)
			}
		}
	}
	if len(journal) != len(w.AllTrials) {
		t.Errorf("journal %d trials, document %d", len(journal), len(w.AllTrials))
	}
	back := roundTrip(t, doc)
	v, err := records.Verify(back, cfg.RecordsDirectory)
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() || len(v.Trials) != len(w.AllTrials) {
		t.Errorf("verification: %d trials of %d, differences %q, contradictions %+v", len(v.Trials), len(w.AllTrials), v.Differences, v.Contradictions)
	}
}

// The open-loop axis over two generators: the trial's schedule dealt between them, their
// records merged with each request's due time kept, so the judge's schedule guards read the
// whole trial; recomputed from the records, every trial matches.
func TestFleetOpenLoop(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(twoSlotEngine(t, simengine.Options{}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.OpenLoop = &OpenLoop{Arrival: load.Arrival{Pattern: load.ArrivalPoisson}, MinRate: 3, MaxRate: 12, Tolerance: 0.25}
	cfg.WarmupRequests, cfg.MeasuredRequests, cfg.ConfirmationTrials = 4, 32, 1
	cfg.Pods, cfg.Fleet = 2, workers(cfg, 1)
	cfg.RecordsDirectory = t.TempDir()
	doc, _ := runRecorded(t, cfg)
	w := doc.Workloads[0]
	for _, tr := range w.AllTrials {
		if tr.Pods == nil || tr.Pods.Pods != 2 || tr.OpenLoop == nil {
			t.Fatalf("trial at %.3g/s: pods %+v", tr.RequestRate, tr.Pods)
		}
		if s := tr.Pods.Shares; s[0].MeasuredRequests+s[1].MeasuredRequests != 32 || s[0].MeasuredRequests == 0 || s[1].MeasuredRequests == 0 {
			t.Errorf("trial at %.3g/s: shares %+v", tr.RequestRate, s)
		}
	}
	v, err := records.Verify(roundTrip(t, doc), cfg.RecordsDirectory)
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() {
		t.Errorf("differences %q, contradictions %+v", v.Differences, v.Contradictions)
	}
}

// Percentiles of a merged trial are over every request of every pod, never an average of
// the pods' own: pod 0 holds fast requests, pod 1 slow ones; the merged p95 is the p95 of
// all 40 TTFTs (numpy's linear interpolation), which neither pod's p95 nor their mean is.
func TestMergeIsExactNotAveraged(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	shares := []Share{
		{Closed: &ClosedShare{Concurrency: 1, Measured: texts("m", 20)}, measured: indexes([2]int{0, 20})},
		{Closed: &ClosedShare{Concurrency: 1, Measured: texts("m", 20)[:0]}, measured: indexes([2]int{20, 40})},
	}
	shares[1].Closed.Measured = texts("n", 20)
	rec := func(pod, i int, ttft time.Duration, clock time.Duration) load.RequestResult {
		sent := base.Add(time.Duration(i) * time.Second).Add(clock)
		return load.RequestResult{Index: i, Prompt: "p", Sent: sent, Headers: sent, FirstContent: sent.Add(ttft), SecondContent: sent.Add(ttft + time.Millisecond),
			LastContent: sent.Add(ttft + 10*time.Millisecond), Done: sent.Add(ttft + 10*time.Millisecond), HTTPStatus: 200, UsageReported: true, CompletionTokens: 8, PromptTokens: 10}
	}
	res := make([]ShareResult, 2)
	var all []float64
	for i := range 20 {
		fast := time.Duration(10+i) * time.Millisecond
		slow := time.Duration(200+10*i) * time.Millisecond
		res[0].Requests = append(res[0].Requests, rec(0, i, fast, 0))
		// Pod 1's clock runs 3 s ahead of pod 0's: the merge takes it back.
		res[1].Requests = append(res[1].Requests, rec(1, i, slow, 3*time.Second))
		all = append(all, float64(fast)/1e6, float64(slow)/1e6)
	}
	merged := merge(shares, res, []time.Duration{0, 3 * time.Second}, 0)
	if len(merged.Requests) != 40 || merged.Requests[25].Pod != 1 || merged.Requests[25].Index != 25 || !merged.Requests[25].Sent.Equal(base.Add(5*time.Second)) {
		t.Fatalf("merged %d requests; the 26th: pod %d index %d sent %v", len(merged.Requests), merged.Requests[25].Pod, merged.Requests[25].Index, merged.Requests[25].Sent)
	}
	j, err := metrics.Judge(metrics.TrialRun{Records: merged.Requests, RequestedOSL: 8, SLOs: []results.SLO{{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: 1000}}})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(all)
	rank := 0.95 * float64(len(all)-1)
	lo := int(rank)
	want := all[lo] + (rank-float64(lo))*(all[lo+1]-all[lo])
	if got := j.Trial.TTFTMs.P95; got != want {
		t.Errorf("merged p95 TTFT %v ms, want %v over all 40 requests", got, want)
	}
	if p0, p1 := 28.05, 380.5; j.Trial.TTFTMs.P95 == (p0+p1)/2 {
		t.Error("the merged p95 is the pods' average")
	}
}

// flaky is a peer whose first trial's result is lost, as when its runner pod restarts in
// the middle of a trial.
type flaky struct {
	*Worker
	lost atomic.Int32
}

func (f *flaky) Result(ctx context.Context, id string) (ShareResult, error) {
	if f.lost.Add(1) == 1 {
		_ = f.Worker.Stop(ctx, id)
		return ShareResult{}, errors.New("connection reset by peer")
	}
	return f.Worker.Result(ctx, id)
}

// A generator lost in a trial loses that trial only: it is sent again, said in the progress
// lines, and the run finds its boundary with every trial whole.
func TestFleetPodLostLosesOneTrial(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(twoSlotEngine(t, simengine.Options{}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.MaxConcurrency = 4
	f := &flaky{Worker: NewWorker(cfg)}
	cfg.Pods, cfg.Fleet = 2, peers{f}
	var lines []string
	cfg.ProgressLine = func(s string) { lines = append(lines, s) }
	doc, journal := runRecorded(t, cfg)
	w := doc.Workloads[0]
	if w.MaximumPassingConcurrency == nil || *w.MaximumPassingConcurrency != 2 {
		t.Fatalf("maximum passing %v, want 2", w.MaximumPassingConcurrency)
	}
	again := 0
	for _, l := range lines {
		if containsAll(l, "runner pod 1 was lost during the trial", "connection reset by peer", "sending the trial again (attempt 2 of 3)") {
			again++
		}
	}
	if again != 1 || f.lost.Load() < 2 {
		t.Errorf("%d lines say the trial is sent again (want 1), results asked %d times:\n%q", again, f.lost.Load(), lines)
	}
	if len(journal) != len(w.AllTrials) {
		t.Errorf("journal %d, trials %d", len(journal), len(w.AllTrials))
	}
}

// A pod that never comes back stops the run after fleetAttempts, naming the pod.
func TestFleetPodGoneStopsTheRun(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(twoSlotEngine(t, simengine.Options{}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.Pods, cfg.Fleet = 2, peers{gone{}}
	_, err := Run(context.Background(), cfg)
	var lost *PeerLostError
	if !errors.As(err, &lost) || lost.Pod != 1 {
		t.Fatalf("err = %v, want the lost pod 1", err)
	}
}

type gone struct{}

func (gone) Prepare(context.Context, string, Share) (time.Time, error) {
	return time.Time{}, errors.New("dial tcp 10.244.0.7:9400: connect: connection refused")
}
func (gone) Release(context.Context, string, time.Time) error    { return nil }
func (gone) Result(context.Context, string) (ShareResult, error) { return ShareResult{}, nil }
func (gone) Stop(context.Context, string) error                  { return nil }

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// A users trial over two generators: the users split between them, every conversation
// numbered once in the merged trial, its turns on one generator, and every trial recomputed
// from its records.
func TestFleetUsers(t *testing.T) {
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
	cfg.ConcurrencyLevels, cfg.MeasuredRequests, cfg.ConfirmationTrials = []int{3, 5}, 12, 1
	cfg.Pods, cfg.Fleet = 2, workers(cfg, 1)
	cfg.RecordsDirectory = t.TempDir()
	doc, _ := runRecorded(t, cfg)
	for _, tr := range doc.Workloads[0].AllTrials {
		if tr.Pods == nil || tr.Pods.Shares[0].Users+tr.Pods.Shares[1].Users != tr.Users || tr.Conversations == nil || tr.Conversations.MeasuredTurns != 12 {
			t.Fatalf("users %d: pods %+v, conversations %+v", tr.Users, tr.Pods, tr.Conversations)
		}
		lines, _, err := records.Read(cfg.RecordsDirectory + "/" + tr.RecordsFile)
		if err != nil {
			t.Fatal(err)
		}
		podOf, users := map[int]int{}, map[int]bool{}
		for _, l := range lines {
			if p, ok := podOf[l.Conversation]; ok && p != *l.Pod {
				t.Errorf("users %d: conversation %d on pods %d and %d", tr.Users, l.Conversation, p, *l.Pod)
			}
			podOf[l.Conversation] = *l.Pod
			users[l.User] = true
		}
		if len(users) != tr.Users {
			t.Errorf("users %d: %d users in the records", tr.Users, len(users))
		}
	}
	v, err := records.Verify(roundTrip(t, doc), cfg.RecordsDirectory)
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() {
		t.Errorf("differences %q, contradictions %+v", v.Differences, v.Contradictions)
	}
}

// Every instant of a record is moved onto pod 0's clock by the merge, a field added later
// included: the list is the struct's own.
func TestMergeShiftsEveryInstant(t *testing.T) {
	want := []string{"Due", "Dispatched", "Sent", "Headers", "FirstContent", "SecondContent", "LastContent", "Done"}
	var got []string
	rt := reflect.TypeFor[load.RequestResult]()
	for _, i := range recordTimes {
		got = append(got, rt.Field(i).Name)
	}
	for _, name := range want {
		if !slices.Contains(got, name) {
			t.Errorf("the merge does not move %s (it moves %v)", name, got)
		}
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := load.RequestResult{Sent: base, Done: base.Add(time.Second)}
	shiftTimes(&rec, func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return t.Add(-time.Minute)
	})
	if !rec.Sent.Equal(base.Add(-time.Minute)) || !rec.Done.Equal(base.Add(-59*time.Second)) || !rec.FirstContent.IsZero() {
		t.Errorf("shifted %v %v %v", rec.Sent, rec.Done, rec.FirstContent)
	}
}

// A trial is as client-bound as its most starved pod: of the pods' CPU figures the client
// check reads the one nearest its limits, a throttled worker's over an idle pod 0's.
func TestBusiestPodIsTheClient(t *testing.T) {
	idle := &results.ClientCPU{Source: results.CPUFromProcess, AvailableCPUs: 4, UsedCPUs: 0.4, BusyPercent: 10, BusyLimitPercent: 90}
	busy := &results.ClientCPU{Source: results.CPUFromProcess, AvailableCPUs: 1, UsedCPUs: 0.8, BusyPercent: 80, BusyLimitPercent: 90}
	throttled := &results.ClientCPU{Source: results.CPUFromCgroupV1, AvailableCPUs: 0.1, UsedCPUs: 0.05, BusyPercent: 50, BusyLimitPercent: 90,
		Throttling: &results.CPUThrottling{ThrottledPercent: 35, LimitPercent: 10}}
	if got := busiest(idle, []*results.ClientCPU{busy, throttled, nil}); got != throttled {
		t.Errorf("busiest = %+v, want the throttled pod's", got)
	}
	if got := busiest(busy, []*results.ClientCPU{idle, nil}); got != busy {
		t.Errorf("busiest = %+v, want pod 0's own", got)
	}
	if got := busiest(nil, []*results.ClientCPU{nil, idle}); got != idle {
		t.Errorf("busiest = %+v, want the one pod that could be read", got)
	}
}
