package capacity

// A trial whose load generator was the bottleneck (its client block past a limit:
// metrics.ClientTrial) measured the client, not the server. It is never a side of the
// boundary: the search cannot judge the server at its level, so it stops there, and nothing
// from that level up is reported as a capacity of the server (results.DeriveHeadline).

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// clientBoundError carries a client-bound trial out of the search, which cannot judge it:
// its axis ends the workload's search there (endsClientBound).
type clientBoundError struct {
	trial outcome
	at    trialAt
	where string // "concurrency 3", "2.5 requests/s"
}

func (e *clientBoundError) Error() string {
	return fmt.Sprintf("the load generator was the bottleneck at %s: %s", e.where, clientFigures(e.trial.Detail.Client))
}

// runJudgeable runs the trial at at, and once more when its client was the bottleneck: a
// passing stall of a shared machine costs one trial (a progress line says so) instead of the
// workload's capacity, while a client too slow for the level ends the search there with
// the reason, that trial journaled (the search never sees it; a resumed run measures it
// again) and returned as a *clientBoundError.
func (r *trialRunner) runJudgeable(ctx context.Context, at trialAt) (outcome, error) {
	out, err := r.run(ctx, at)
	if cb := (*clientBoundError)(nil); errors.As(err, &cb) && ctx.Err() == nil {
		r.s.tracker.sayf("%s: the trial runs again: %v", r.w.Label, err)
		out, err = r.run(ctx, at)
	}
	if cb := (*clientBoundError)(nil); errors.As(err, &cb) {
		r.journalUnseen(cb.trial, cb.at)
	}
	return out, err
}

// endsClientBound is the client-bound trial that ended a search with err, appended to the
// trials the search used; ok is false for any other error.
func endsClientBound(err error, used []outcome) ([]outcome, bool) {
	cb := (*clientBoundError)(nil)
	if !errors.As(err, &cb) {
		return nil, false
	}
	return append(used, cb.trial), true
}

// clientBoundNote is the workload note of the trial that ended its search client-bound.
func clientBoundNote(o outcome, level string) string {
	return fmt.Sprintf("the load generator was the bottleneck at %s (%s %d): %s. That trial measured the client, not the server, so the search stopped there "+
		"and reports no capacity at or above it; give the load generator more CPU, or spread the load over more processes, and apply again",
		level, o.Kind, o.Index, clientFigures(o.Detail.Client))
}

// clientFigures says which of the client's figures passed their limits, and by how much.
func clientFigures(c *results.ClientTrial) string {
	if c == nil {
		return "no figures"
	}
	ms := func(v float64) string { return trimFloat(math.Round(v*10)/10) + " ms" }
	pct := func(v float64) string { return trimFloat(math.Round(v*10)/10) + " %" }
	var parts []string
	for _, by := range c.BoundBy {
		switch by {
		case results.ClientSendDelay:
			parts = append(parts, fmt.Sprintf("it sent requests %s late on average (limit %s; p99 %s)", ms(c.SendDelayMeanMs), ms(c.SendDelayLimitMs), ms(c.SendDelayP99Ms)))
		case results.ClientSchedule:
			parts = append(parts, fmt.Sprintf("it kept its schedule only within %s at p99 (limit %s)", ms(c.SendDelayP99Ms), ms(c.ScheduleLimitMs)))
		case results.ClientReadLag:
			// The reader guarantees the mean where read_lag is named, not the p99 (a document
			// may come back edited).
			p99 := "not recorded"
			if c.ReadLagP99Ms != nil {
				p99 = ms(*c.ReadLagP99Ms)
			}
			parts = append(parts, fmt.Sprintf("it read responses %s behind the socket on average (limit %s; p99 %s)", ms(*c.ReadLagMeanMs), ms(c.ReadLagLimitMs), p99))
		case results.ClientCPUThrottled:
			th := c.CPU.Throttling
			parts = append(parts, fmt.Sprintf("its CPU quota of %s CPUs stopped it for %s of the load, in %d of %d periods (limit %s)",
				trimFloat(math.Round(c.CPU.AvailableCPUs*1000)/1000), pct(th.ThrottledPercent), th.ThrottledPeriods, th.Periods, pct(th.LimitPercent)))
		case results.ClientCPUBusy:
			parts = append(parts, fmt.Sprintf("it used %s of the %s CPUs it may have (limit %s)",
				pct(c.CPU.BusyPercent), trimFloat(math.Round(c.CPU.AvailableCPUs*1000)/1000), pct(c.CPU.BusyLimitPercent)))
		}
	}
	return strings.Join(parts, "; ")
}

// clientBoundWarnings warn of each workload whose search stopped at a client-bound trial,
// with what that trial's client measured of itself and the fix for where the load ran
// (the document's runner: the Terraform process, the Docker runner, Kubernetes runner pods).
func clientBoundWarnings(doc *results.Document) []problem.Problem {
	var out []problem.Problem
	for _, w := range doc.Workloads {
		for _, t := range w.AllTrials {
			if !t.ClientBound() {
				continue
			}
			a := w.Axis()
			v, _ := a.Level(results.SideTrial{Concurrency: t.Concurrency, Trial: t})
			level := a.Name() + " " + a.Text(v)
			what := "nothing at or above it is a capacity of the server: its maximum passing level is null"
			if !w.ClientBound {
				mp, ff := w.BoundaryText()
				what = fmt.Sprintf("the boundary it found below that level stands (maximum passing %s %s, first failing %s)", a.Name(), mp, ff)
			}
			out = append(out, problem.Problem{Warning: true,
				Summary: fmt.Sprintf("The load generator, not the server, was the bottleneck in workload %q", w.Label),
				Detail: fmt.Sprintf("Workload %q at %s: %s. That trial measured the client, not the server, so the search stopped there and %s. %s",
					w.Label, level, clientFigures(t.Client), what, clientFix(doc.Runner))})
			break
		}
	}
	return out
}

// clientFix is what gives the load generator more room where it ran.
func clientFix(where *results.Runner) string {
	switch {
	case where == nil:
		return "The load ran in the Terraform process (the provider): give that process more CPU (a CI runner or container with a higher CPU limit and no jobs beside it), " +
			"or run the load next to the server with runner.docker or runner.kubernetes, then apply again."
	case where.Kind == "docker":
		return fmt.Sprintf("The load ran in the Docker runner container on %s, beside the server: give the Docker runner more CPU by freeing CPU on that host "+
			"(the server and other containers share it), or run the load on Kubernetes with runner.kubernetes and more pods, then apply again.", where.Host)
	case where.Kind == "kubernetes":
		return "The load ran in the Kubernetes runner pods: raise runner.kubernetes.pods so each pod carries a smaller share of every trial, " +
			"or give the runner pods more CPU (a namespace LimitRange or ResourceQuota may cap them), then apply again."
	}
	return "Give the load generator more CPU and apply again."
}
