package capacity

// Per-replica settling and cold-cache proof for a replicated deployment. A flush sent to a
// Service reaches the one replica the Service picks, and a scrape of its /metrics reads one
// replica's counters; with replica_endpoints every replica is waited for, flushed and read
// on its own base URL, in parallel, while the load still goes through the Service.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// replica is one replica of the deployment behind the endpoint, reached on its own.
type replica struct {
	url     string
	control *engine.Client
}

// connectReplicas builds one control client per replica endpoint, for the engine the
// endpoint identified as (so no replica is asked again what it is).
func connectReplicas(cfg Config, e engine.Name) ([]replica, error) {
	out := make([]replica, 0, len(cfg.ReplicaEndpoints))
	for i, u := range cfg.ReplicaEndpoints {
		c, err := engine.NewClient(engine.ClientConfig{BaseURL: u, Model: cfg.Model, APIKey: cfg.APIKey, AdminAPIKey: cfg.AdminAPIKey,
			Engine: e, IdleTimeout: cfg.IdleTimeout})
		if err != nil {
			return nil, fmt.Errorf("replica_endpoints[%d]: %w", i, err)
		}
		out = append(out, replica{url: u, control: c})
	}
	return out, nil
}

// replicaTrial is what the replicas proved for one trial, filled as its steps run.
type replicaTrial struct {
	replicas []replica
	names    engine.MetricNames
	checks   []results.ReplicaCheck
	// base are the scrapes between the warmups and the measured requests; nil where one failed.
	base []*engine.Snapshot
}

// forEach runs f on every replica at once and returns when all are done, with each error
// naming its replica.
func (rt *replicaTrial) forEach(f func(i int, r replica) error) error {
	errs := make([]error, len(rt.replicas))
	var wg sync.WaitGroup
	for i, r := range rt.replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(i, r); err != nil {
				errs[i] = fmt.Errorf("replica %d of %d (%s): %w", i+1, len(rt.replicas), r.url, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// settleReplicas waits until every replica runs and queues nothing, then flushes every
// replica's prefix cache (when flushing is on and the engine has a flush endpoint), each
// step on all replicas in parallel. A replica that stays busy or does not confirm its flush
// fails the trial, named. unverified says some replica offered no idle signal.
func (s *session) settleReplicas(ctx context.Context, timing *results.TrialTiming) (rt *replicaTrial, unverified bool, err error) {
	rt = &replicaTrial{replicas: s.replicas, names: engine.Metrics(s.engine), checks: make([]results.ReplicaCheck, len(s.replicas)),
		base: make([]*engine.Snapshot, len(s.replicas))}
	for i, r := range s.replicas {
		rt.checks[i].Endpoint = r.url
	}
	t0 := time.Now()
	s.tracker.enter(stepReplicasIdle)
	err = rt.forEach(func(i int, r replica) error {
		if err := r.control.WaitIdle(ctx, s.engine); err != nil {
			return err
		}
		rt.checks[i].IdleVerified = s.engine != "" && !r.control.IdleUnverified()
		return nil
	})
	timing.IdleWaitS = seconds(time.Since(t0))
	if err != nil {
		return nil, false, err
	}
	for _, c := range rt.checks {
		unverified = unverified || (s.engine != "" && !c.IdleVerified)
	}
	// llama.cpp has nothing to flush: every request carries cache_prompt: false.
	if s.flush.Engine == "" || s.flush.Engine == engine.LlamaCpp {
		return rt, unverified, nil
	}
	t1 := time.Now()
	s.tracker.enter(stepReplicasFlush)
	err = rt.forEach(func(i int, r replica) error {
		if err := r.control.Flush(ctx, s.flush); err != nil {
			return err
		}
		rt.checks[i].CacheFlushed = true
		return nil
	})
	timing.CacheFlushS = seconds(time.Since(t1))
	if err != nil {
		return nil, false, err
	}
	return rt, unverified, nil
}

// markMeasured scrapes every replica between the warmups and the measured requests.
func (rt *replicaTrial) markMeasured(ctx context.Context) {
	if rt == nil {
		return
	}
	_ = rt.forEach(func(i int, r replica) error {
		sctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
		defer cancel()
		if snap, err := r.control.Scrape(sctx); err == nil {
			rt.base[i] = &snap
		}
		return nil
	})
}

// measured scrapes every replica after the load and fills each one's prefix-cache counters
// over the measured requests. It returns their sum, the deployment's hits over the measured
// requests, when every replica gave one; nil otherwise (a missing replica would hide its
// hits).
func (rt *replicaTrial) measured(ctx context.Context) *float64 {
	if rt == nil {
		return nil
	}
	_ = rt.forEach(func(i int, r replica) error {
		if rt.base[i] == nil {
			return nil
		}
		sctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
		defer cancel()
		after, err := r.control.Scrape(sctx)
		if err != nil {
			return nil
		}
		rt.checks[i].PromptTokens = counterDelta(*rt.base[i], after, rt.names.PrefixQueries)
		rt.checks[i].PrefixCacheHitTokens = counterDelta(*rt.base[i], after, rt.names.PrefixHits)
		return nil
	})
	sum := 0.0
	for _, c := range rt.checks {
		if c.PrefixCacheHitTokens == nil {
			return nil
		}
		sum += *c.PrefixCacheHitTokens
	}
	return &sum
}

// counterDelta is a counter's growth between two scrapes; nil when either lacks it or it
// went back (the engine restarted).
func counterDelta(before, after engine.Snapshot, names []string) *float64 {
	if len(names) == 0 {
		return nil
	}
	a, okA := after.Sum(names)
	b, okB := before.Sum(names)
	if !okA || !okB || a < b {
		return nil
	}
	d := a - b
	return &d
}

// hitsNote says, for a trial found warm, which replicas' prefix caches served its measured
// requests: the trial-level count cannot tell a replica whose flush did not take effect from
// the others. Empty without replicas or counters.
func (rt *replicaTrial) hitsNote() string {
	if rt == nil {
		return ""
	}
	var parts []string
	for i, c := range rt.checks {
		if c.PrefixCacheHitTokens == nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("replica %d (%s) %g of %s prompt tokens", i+1, c.Endpoint, *c.PrefixCacheHitTokens, orUnknown(c.PromptTokens)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "prefix-cache hits per replica over the measured requests (the shared prefix included): " + strings.Join(parts, ", ")
}

func orUnknown(f *float64) string {
	if f == nil {
		return "unknown"
	}
	return strconv.FormatFloat(*f, 'g', -1, 64)
}

// results returns the checks for the trial's document; nil without replicas.
func (rt *replicaTrial) results() []results.ReplicaCheck {
	if rt == nil {
		return nil
	}
	return rt.checks
}
