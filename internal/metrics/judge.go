package metrics

// The one judge of a trial: its records in, its judged result out, the same for the
// benchmark that ran it and for a recompute from its records file.

import (
	"errors"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// TrialRun is a trial as its judge reads it: its records and how the run ended.
type TrialRun struct {
	// Records are the trial's requests in the runner's order, warmups first (a records
	// file's lines, in order, are the same).
	Records []load.RequestResult
	// SLOs are the objectives the trial is judged against.
	SLOs []results.SLO
	// RequestedOSL is the output length mismatches are judged against: the workload's, or 0
	// when each request asked for its own (lengths spread, or a trace's).
	RequestedOSL int
	// Confirmation says the trial's metrics are reported as measured, so they must compute:
	// Judge fails when they do not, unless no measured request succeeded (a trial whose
	// requests failed is kept with its errors). A probe is kept whatever its metrics.
	Confirmation bool
	// Stopped says the runner stopped the trial the moment its verdict was certain (a probe
	// decided early): it is judged cut short.
	Stopped bool
	// WaitedOut says the verdict was not taken from finished requests: a probe decided by
	// requests still waiting. The trial then has no SLO results and no goodput.
	WaitedOut bool
	// OpenLoop is set for a trial driven at a rate (or a trace replayed at a speedup); nil for
	// a closed-loop trial.
	OpenLoop *OpenLoopRun
}

// OpenLoopRun is what an open-loop trial's judge needs beside its records.
type OpenLoopRun struct {
	// Arrival is the trial's arrival pattern as the document names it (constant, poisson,
	// gamma, or trace for a replay).
	Arrival string
	// Rate is the rate the schedule offered, in requests per second (a replay's: the trace's
	// rate at its speedup).
	Rate float64
}

// Judged is a trial's judged result.
type Judged struct {
	// Trial is the trial as the document reports it, as far as its records decide: the
	// metrics (Summarize), the SLO results and goodput, and an open-loop trial's open_loop
	// figures. Its identity (index, concurrency or rate and speedup, kind, verdict, stopped
	// early) and what only the benchmark saw (server, accelerators, replicas, host, timing,
	// records file, notes) are the caller's to fill in.
	Trial results.Trial
	// Pass is the trial's outcome: every objective held, no measured request failed, most
	// outputs were not degenerate, and an open-loop trial kept up with its rate (one cut
	// short never passes: it did not run long enough to show it kept up).
	Pass bool
	// Closeness is how near the trial came to failing (Verdict.Closeness): at least 1 when it
	// missed an objective or did not keep up; 0 for a trial failed by its requests or by
	// degenerate outputs, which measured no objective value.
	Closeness float64
	// Failed counts the measured requests that failed, cancelled ones not counted; when most
	// outputs were degenerate, at least the degenerate ones.
	Failed int
	// Degenerate says most measured outputs were degenerate (results.DegenerateOutputs.Most):
	// the trial fails as one whose requests failed.
	Degenerate bool
	// KeepUp is the open-loop keep-up rule's judgement (DefaultOpenLoopRule); zero for a
	// closed-loop trial. A trial cut short judges no guard: its Missed is empty.
	KeepUp KeepUp
}

// Judge turns a trial's records into its judged result, in the benchmark's order: the
// objectives are evaluated
// over the measured requests (not for a trial WaitedOut); a trial cut short claims no
// objective value when a request failed, and at least closeness 1 when it missed one; an
// open-loop trial must keep up with its rate (DefaultOpenLoopRule); the metrics are
// summarized; most outputs degenerate fail the trial.
//
// The benchmark judges every trial it runs with it, and records.Recompute every trial it
// recomputes from a records file, so the two agree bit for bit by construction.
func Judge(run TrialRun) (Judged, error) {
	var j Judged
	// Whether the client kept its schedule is the benchmark's to say, with everything else
	// the client measured of itself (ClientTrial): a late client makes the trial client-bound.
	var fid load.Fidelity
	if run.OpenLoop != nil {
		fid = load.OpenResult{TrialResult: load.TrialResult{Requests: run.Records}}.Fidelity()
	}
	done := load.TrialResult{Requests: run.Records}.Measured()
	var verdict Verdict
	if !run.WaitedOut {
		var err error
		if verdict, err = Evaluate(run.SLOs, done); err != nil {
			return j, err
		}
	}
	var keep KeepUp
	if run.OpenLoop != nil {
		keep = DefaultOpenLoopRule().KeptUp(run.Records)
		if run.Stopped {
			keep.Missed = nil // a probe cut short judges no guard; its stop says why it failed
		}
	}
	j.Failed = countFailed(done)
	if run.Stopped {
		cutShort(&verdict, j.Failed)
	}
	j.Pass, j.Closeness = verdict.Pass, verdict.Closeness
	if run.OpenLoop != nil {
		j.Pass = j.Pass && keep.Pass() && !run.Stopped
		if !keep.Pass() {
			j.Closeness = max(j.Closeness, 1)
		}
	}
	// Every trial is kept with its metrics. A probe cut short may have no successful
	// request to take them from, nor a trial whose requests all failed; their counters and
	// error summary still say what happened.
	trial, err := Summarize(run.Records, run.RequestedOSL)
	if err != nil && run.Confirmation && !errors.Is(err, ErrNoSuccessfulRequests) {
		return j, err
	}
	if d := trial.Correctness.DegenerateOutputs; d.Most() {
		// The server answered with broken text, and what the trial timed is no capacity: it
		// fails as a trial whose requests failed, its degenerate outputs counted among them.
		j.Degenerate, j.Pass, j.Closeness = true, false, 0
		j.Failed = max(j.Failed, d.Requests)
	}
	trial.SLOs = verdict.Results
	if !run.WaitedOut {
		goodput := verdict.GoodputPercent
		trial.GoodputPercent = &goodput
	}
	if o := run.OpenLoop; o != nil {
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		trial.OpenLoop = &results.OpenLoopTrial{
			Arrival: o.Arrival, OfferedRate: keep.OfferedRate, AchievedRate: fid.OfferedRate,
			CompletionRate: keep.CompletionRate, BacklogGrowth: keep.BacklogGrowth, BacklogAllowance: keep.BacklogAllowance,
			InFlightMean: keep.InFlightMean, SendLatenessP50Ms: ms(fid.LatenessP50), SendLatenessP99Ms: ms(fid.LatenessP99),
			SendLatenessMaxMs: ms(fid.LatenessMax), CapBound: fid.CapBound, KeptUp: keep.Pass() && !run.Stopped, Missed: keep.Missed,
		}
	}
	j.Trial, j.KeepUp = trial, keep
	return j, nil
}

// cutShort is the verdict of a trial stopped early. One stopped by a failed request failed
// for that reason: it measured no objective value, and claims none. One that missed an
// objective knows only that its closeness is at least 1, whatever the few finished requests
// say.
func cutShort(v *Verdict, failed int) {
	switch {
	case failed > 0:
		v.Closeness, v.Results = 0, nil
	case !v.Pass:
		v.Closeness = max(v.Closeness, 1)
	}
}

// countFailed counts the requests that failed, not counting cancelled ones.
func countFailed(records []load.RequestResult) int {
	n := 0
	for _, r := range records {
		if failed(r) {
			n++
		}
	}
	return n
}
