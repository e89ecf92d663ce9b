package capacity

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// peakInterval is how often the engine's gauges are sampled during a confirmation trial for
// their peaks: often enough to see a queue that lasts a fraction of a second, rare enough to
// cost the server nothing measurable (one small GET).
const peakInterval = 250 * time.Millisecond

// scrapeTimeout bounds one metrics scrape; a slow /metrics must not hold a trial back.
const scrapeTimeout = 5 * time.Second

// serverWatch follows the engine's Prometheus metrics over one trial: a scrape before, the
// peaks of its gauges while the trial runs, a scrape after.
type serverWatch struct {
	c      *engine.Client
	e      engine.Name
	names  engine.MetricNames
	before engine.Snapshot

	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	running *float64
	queued  *float64
	kv      *float64
	// measuredBase and after are the scrapes between warmups and measured requests and at
	// the end (see markMeasured); nil when they failed.
	measuredBase, after *engine.Snapshot
}

// watchServer starts watching; nil when the engine is unknown or exports no metrics, in
// which case the trial simply has no server view.
func watchServer(ctx context.Context, c *engine.Client, e engine.Name) *serverWatch {
	if e == "" {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	before, err := c.Scrape(sctx)
	cancel()
	if err != nil {
		return nil
	}
	w := &serverWatch{c: c, e: e, names: engine.Metrics(e), before: before, stop: make(chan struct{}), done: make(chan struct{})}
	w.sample(before)
	go w.loop(ctx)
	return w
}

func (w *serverWatch) loop(ctx context.Context) {
	defer close(w.done)
	t := time.NewTicker(peakInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
		s, err := w.c.Scrape(sctx)
		cancel()
		if err == nil {
			w.sample(s)
		}
	}
}

func (w *serverWatch) sample(s engine.Snapshot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	peak := func(p **float64, v float64, ok bool) {
		if ok && (*p == nil || v > **p) {
			*p = &v
		}
	}
	v, ok := s.Sum(w.names.Running)
	peak(&w.running, v, ok)
	v, ok = s.Sum(w.names.Queued)
	peak(&w.queued, v, ok)
	v, ok = s.Max(w.names.KVUsage)
	peak(&w.kv, v, ok)
}

// end stops the sampling, scrapes once more and returns what the server saw; nil when the
// closing scrape fails.
func (w *serverWatch) end(ctx context.Context) *results.ServerView {
	if w == nil {
		return nil
	}
	close(w.stop)
	<-w.done
	sctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	after, err := w.c.Scrape(sctx)
	cancel()
	if err != nil {
		return nil
	}
	w.sample(after)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.after = &after
	v := &results.ServerView{
		Source:              string(w.e) + " /metrics",
		TTFTMs:              w.latency(after, w.names.TTFT),
		RequestLatencyMs:    w.latency(after, w.names.E2E),
		QueueTimeMs:         w.latency(after, w.names.QueueTime),
		PeakRunningRequests: w.running, PeakQueuedRequests: w.queued, PeakKVCacheUsage: w.kv,
	}
	if a, ok := after.Sum(w.names.PrefixHits); ok {
		if b, ok := w.before.Sum(w.names.PrefixHits); ok && a >= b {
			d := a - b
			v.PrefixCacheHitTokens = &d
		}
	}
	return v
}

// latency is a histogram's observations between the two scrapes, in ms; nil when the engine
// does not export it or saw nothing.
func (w *serverWatch) latency(after engine.Snapshot, names []string) *results.ServerLatency {
	a, ok1 := after.Histogram(names)
	b, ok2 := w.before.Histogram(names)
	if !ok1 || !ok2 {
		return nil
	}
	d, ok := a.Sub(b)
	if !ok || d.Count == 0 {
		return nil
	}
	ms := func(s float64) float64 {
		if math.IsNaN(s) {
			return 0
		}
		return s * 1000
	}
	return &results.ServerLatency{Count: int(d.Count), Mean: ms(d.Sum / d.Count), P50: ms(d.Quantile(0.5)), P95: ms(d.Quantile(0.95))}
}

// WarmCacheTrials describes each reported trial that, with flushing on, had requests served
// from a cache that should have been cold; the apply turns them into a warning.
func WarmCacheTrials(doc *results.Document) []string {
	var out []string
	if doc == nil {
		return nil
	}
	for _, w := range doc.Workloads {
		for _, st := range w.Trials() {
			if n := st.Trial.Correctness.RequestsCachedBeyondSharedPrefix; n > 0 && len(st.Trial.Notes) > 0 {
				out = append(out, fmt.Sprintf("workload %q, %s trial %d at concurrency %d: %d requests", w.Label, st.Side, st.Trial.Trial, st.Concurrency, n))
			}
		}
	}
	return out
}
