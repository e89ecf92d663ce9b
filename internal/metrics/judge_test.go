package metrics

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

var ttftP50 = results.SLO{Metric: results.MetricTTFT, Percentile: 50, ThresholdMs: 100}

// closedRecords is n measured requests with a TTFT of ttft ms, after one warmup.
func closedRecords(n int, ttft float64) []load.RequestResult {
	out := []load.RequestResult{warmup(0, "w")}
	for i := range n {
		out = append(out, record(i, ttft, 2*ttft, 20))
	}
	return out
}

// A closed-loop trial: judged over its measured requests, cut short as the benchmark cuts a
// probe short, and with no verdict from finished requests when it was waited out.
func TestJudgeClosedLoop(t *testing.T) {
	t.Parallel()
	slos := []results.SLO{ttftP50}
	j, err := Judge(TrialRun{Records: closedRecords(10, 50), SLOs: slos, RequestedOSL: 20, Confirmation: true})
	if err != nil {
		t.Fatal(err)
	}
	if !j.Pass || j.Closeness != 0.5 || j.Failed != 0 || j.Degenerate || len(j.Trial.SLOs) != 1 || !j.Trial.SLOs[0].Met ||
		j.Trial.GoodputPercent == nil || *j.Trial.GoodputPercent != 100 || j.Trial.OpenLoop != nil || j.Trial.Correctness.ProfilingRecords != 10 {
		t.Errorf("full trial: %+v", j)
	}

	// Stopped by a failed request: it failed for that reason and claims no objective value.
	recs := closedRecords(10, 50)
	recs[3].HTTPStatus, recs[3].Failure, recs[3].Err = 500, load.FailHTTPStatus, "boom"
	recs[10].Cancelled, recs[10].FirstContent, recs[10].LastContent, recs[10].Done = true, time.Time{}, time.Time{}, time.Time{}
	j, err = Judge(TrialRun{Records: recs, SLOs: slos, RequestedOSL: 20, Stopped: true})
	if err != nil || j.Pass || j.Failed != 1 || j.Closeness != 0 || j.Trial.SLOs != nil || j.Trial.GoodputPercent == nil {
		t.Errorf("stopped by a failure: %+v, %v", j, err)
	}

	// Missed, stopped: closeness at least 1 whatever the finished requests say.
	j, err = Judge(TrialRun{Records: closedRecords(10, 150), SLOs: []results.SLO{{Metric: results.MetricTTFT, Percentile: 50, ThresholdMs: 100}}, RequestedOSL: 20, Stopped: true})
	if err != nil || j.Pass || j.Closeness < 1 || j.Failed != 0 {
		t.Errorf("stopped missing probe: %+v, %v", j, err)
	}

	// Waited out: no verdict from finished requests, so no SLO results and no goodput.
	j, err = Judge(TrialRun{Records: closedRecords(10, 50), SLOs: slos, RequestedOSL: 20, Stopped: true, WaitedOut: true})
	if err != nil || j.Pass || j.Trial.SLOs != nil || j.Trial.GoodputPercent != nil || j.Closeness != 1 {
		t.Errorf("waited out: %+v, %v", j, err)
	}
}

// openTrial is openRecords with the usage a summary needs.
func openTrial(slowdown time.Duration) []load.RequestResult {
	recs := openRecords(slowdown, nil)
	for i := range recs {
		recs[i].UsageReported, recs[i].PromptTokens, recs[i].CompletionTokens, recs[i].RequestedOutputTokens = true, 8, 20, 20
	}
	return recs
}

// An open-loop trial passes only when it kept up as well, with its open_loop figures; one
// cut short never passes and judges no guard; one whose client fell behind its schedule is
// not judged at all.
func TestJudgeOpenLoop(t *testing.T) {
	t.Parallel()
	slos := []results.SLO{ttftP50}
	open := &OpenLoopRun{Arrival: load.ArrivalConstant, Rate: 10}
	j, err := Judge(TrialRun{Records: openTrial(0), SLOs: slos, Confirmation: true, OpenLoop: open})
	if err != nil {
		t.Fatal(err)
	}
	o := j.Trial.OpenLoop
	if !j.Pass || o == nil || !o.KeptUp || o.Missed != nil || o.Arrival != load.ArrivalConstant || o.OfferedRate != 10 || o.AchievedRate != 10 ||
		o.InFlightMean != 3 || o.BacklogAllowance != 2 || !j.KeepUp.BacklogJudged || j.Closeness != 0.5 {
		t.Errorf("kept up: %+v open_loop %+v", j, o)
	}

	// Latency met, the rate not kept: a fail, at closeness 1.
	j, err = Judge(TrialRun{Records: openTrial(20 * time.Millisecond), SLOs: slos, Confirmation: true, OpenLoop: open})
	if err != nil {
		t.Fatal(err)
	}
	if o := j.Trial.OpenLoop; j.Pass || j.Closeness != 1 || o.KeptUp || !slices.Equal(o.Missed, []string{MissedCompletionRate, MissedBacklog}) || !j.Trial.SLOs[0].Met {
		t.Errorf("not kept up: %+v open_loop %+v", j, o)
	}

	// Cut short: no pass, no guard judged, kept_up false; the same records closed-loop pass.
	j, err = Judge(TrialRun{Records: openTrial(20 * time.Millisecond), SLOs: slos, Stopped: true, OpenLoop: open})
	if err != nil {
		t.Fatal(err)
	}
	if o := j.Trial.OpenLoop; j.Pass || o.KeptUp || o.Missed != nil || j.KeepUp.Missed != nil || j.Closeness != 0.5 {
		t.Errorf("cut short: %+v open_loop %+v", j, o)
	}
	if j, err := Judge(TrialRun{Records: openTrial(20 * time.Millisecond), SLOs: slos, Stopped: true}); err != nil || !j.Pass || j.Trial.OpenLoop != nil {
		t.Errorf("the same records closed-loop: %+v, %v", j, err)
	}

	// Every send 100 ms late at 10 requests/s: judged like any trial, with the lateness
	// reported; the benchmark marks such a trial client-bound (ClientTrial), and a recompute
	// of its records file must not refuse it.
	late := openTrial(0)
	for i := range late {
		late[i].Dispatched = late[i].Due.Add(100 * time.Millisecond)
	}
	for _, stopped := range []bool{false, true} {
		if j, err := Judge(TrialRun{Records: late, SLOs: slos, Confirmation: !stopped, Stopped: stopped, OpenLoop: open}); err != nil || j.Trial.OpenLoop.SendLatenessP99Ms != 100 {
			t.Errorf("late client, cut short %t: %+v, %v", stopped, j, err)
		}
	}
}

// Most outputs degenerate fail the trial as failed requests do: no pass, closeness 0, the
// degenerate outputs counted as failed.
func TestJudgeDegenerateOutputs(t *testing.T) {
	t.Parallel()
	var recs []load.RequestResult
	for i := range 4 {
		recs = append(recs, answered(i, fmt.Sprint("prompt ", i), strings.Repeat("a", 40)))
	}
	recs = append(recs, answered(4, "prompt 4", loop(4)))
	j, err := Judge(TrialRun{Records: recs, SLOs: []results.SLO{ttftP50}, RequestedOSL: 20, Confirmation: true})
	if err != nil {
		t.Fatal(err)
	}
	if !j.Degenerate || j.Pass || j.Closeness != 0 || j.Failed != 4 || !j.Trial.SLOs[0].Met {
		t.Errorf("degenerate: %+v", j)
	}
}

// A confirmation's metrics are reported, so they must compute; a probe's need not, and a
// trial none of whose requests succeeded is kept with its errors.
func TestJudgeConfirmationMetricsMustCompute(t *testing.T) {
	t.Parallel()
	noUsage := closedRecords(4, 50)
	for i := range noUsage {
		noUsage[i].UsageReported = false
	}
	slos := []results.SLO{ttftP50}
	if _, err := Judge(TrialRun{Records: noUsage, SLOs: slos, RequestedOSL: 20, Confirmation: true}); !errors.Is(err, ErrNoUsage) {
		t.Errorf("confirmation without usage: %v", err)
	}
	if j, err := Judge(TrialRun{Records: noUsage, SLOs: slos, RequestedOSL: 20}); err != nil || j.Trial.Correctness.ProfilingRecords != 4 {
		t.Errorf("probe without usage: %+v, %v", j, err)
	}
	failedAll := closedRecords(4, 50)
	for i := 1; i < len(failedAll); i++ {
		failedAll[i].HTTPStatus, failedAll[i].Failure, failedAll[i].Err = 503, load.FailHTTPStatus, "overloaded"
	}
	j, err := Judge(TrialRun{Records: failedAll, SLOs: slos, RequestedOSL: 20, Confirmation: true})
	if err != nil || j.Pass || j.Failed != 4 || j.Trial.Correctness.Errors != 4 || len(j.Trial.ErrorSummary) == 0 {
		t.Errorf("every request failed: %+v, %v", j, err)
	}
}
