package capacity

// What observes a trial besides its own requests: the engine's Prometheus metrics
// (serverWatch, engineview.go), the accelerators' exporters (telemetry.Watch) and, with
// replica_endpoints, each replica (replicaTrial, replicas.go). Each is a watcher; a trial
// starts, marks and finishes them all in one place (trialWatchers).

import (
	"context"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/telemetry"
)

// watcher observes the server or its hardware over one trial's load. Every method is safe
// on a watcher that could not start (a nil one): it then sees nothing.
type watcher interface {
	// markMeasured marks the measured requests' start; a load with no pause between its
	// warmups and measured requests (a schedule) never calls it.
	markMeasured(ctx context.Context)
	// finish stops watching and writes what was seen into seen.
	finish(ctx context.Context, seen *observed)
}

// observed is what a trial's watchers saw.
type observed struct {
	view *results.ServerView // the engine's own view; nil without metrics
	// measuredHits is the engine's prefix-cache hits over the measured requests alone (the
	// replicas' sum when there are replicas); nil when no watcher could tell.
	measuredHits *float64
	accelerators *telemetry.Recording // nil without telemetry_endpoints
}

// trialWatchers are one trial's watchers, started, marked and finished together.
type trialWatchers []watcher

// startWatchers starts watching the trial's load: the accelerators' exporters are scraped in
// their own goroutine from here to after the load (marking the measured requests' start
// only asks for a scrape, it never waits), the engine's metrics likewise; the replicas,
// settled and read before the trial, are read again at its marks.
func (r *trialRunner) startWatchers(ctx context.Context) trialWatchers {
	s := r.s
	ws := trialWatchers{accelerators{telemetry.Start(ctx, s.telemetry, s.cfg.TelemetryInterval)}, watchServer(ctx, s.control, s.engine)}
	if r.replicas != nil {
		ws = append(ws, r.replicas)
	}
	return ws
}

func (ws trialWatchers) markMeasured(ctx context.Context) {
	for _, w := range ws {
		w.markMeasured(ctx)
	}
}

func (ws trialWatchers) finish(ctx context.Context) observed {
	var seen observed
	for _, w := range ws {
		w.finish(ctx, &seen)
	}
	return seen
}

// accelerators is the accelerators' exporters as a watcher.
type accelerators struct{ w *telemetry.Watch }

func (a accelerators) markMeasured(context.Context) { a.w.MarkMeasured() }

func (a accelerators) finish(ctx context.Context, seen *observed) {
	seen.accelerators = a.w.Finish(ctx)
}

func (w *serverWatch) finish(ctx context.Context, seen *observed) {
	seen.view = w.end(ctx)
	seen.measuredHits = w.measuredHits()
}

// finish: the Service's /metrics is one replica's; the replicas' own counters add up to all.
func (rt *replicaTrial) finish(ctx context.Context, seen *observed) {
	seen.measuredHits = rt.measured(ctx)
}
