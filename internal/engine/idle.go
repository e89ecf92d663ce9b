package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// ErrBusy means the server kept running requests that are not ours past the idle wait.
var ErrBusy = errors.New("the server stayed busy")

// errNoSignal: this way of asking the engine whether it is idle is not available here.
var errNoSignal = errors.New("no idle signal")

// WaitIdle returns once the server runs and queues no request, so a trial never starts (and
// a cache is never flushed) while requests of a previous, stopped trial are still being
// processed. Each engine is asked through its own signal:
//   - SGLang: GET /v1/loads (2026 layout: every rank's num_running_reqs and num_waiting_reqs
//     0), else GET /get_load (0.5.x and the 2026 alias: num_reqs 0), else
//     sglang:num_running_reqs + num_queue_reqs from /metrics (with --enable-metrics).
//   - vLLM: vllm:num_requests_running + num_requests_waiting from /metrics.
//   - llama.cpp: llamacpp:requests_processing + requests_deferred from /metrics (the
//     provider launches it with --metrics); else /slots, every is_processing false.
//
// A source that is absent, or that answers without the fields to tell running and waiting
// work, passes the question to the next one. A server with none of these signals cannot be
// waited for and is taken as idle (IdleUnverified reports it). It fails with ErrBusy when the
// server stays busy past the idle timeout.
func (c *Client) WaitIdle(ctx context.Context, engine Name) error {
	signals := c.idleSignals(engine)
	deadline := time.Now().Add(c.idleWait)
	wait := 50 * time.Millisecond // then doubling up to idlePollMax
	for {
		busy, what, err := c.busy(ctx, signals)
		if err != nil || !busy {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s still reported %s %s after the previous trial ended; is another client using it?", ErrBusy, c.redacted, what, c.idleWait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for %s to become idle (%s): %w", c.redacted, what, ctx.Err())
		case <-t.C:
		}
		// Every poll is one small GET; a trial that waits for a stopped probe's requests to
		// drain should start within a quarter second of the server going idle, not a second.
		wait = min(2*wait, idlePollMax)
	}
}

// idleSignal asks the server once; it returns errNoSignal when the server does not offer it.
type idleSignal func(ctx context.Context) (busy bool, what string, err error)

func (c *Client) idleSignals(engine Name) []idleSignal {
	names := Metrics(engine)
	fromMetrics := func(ctx context.Context) (bool, string, error) {
		s, err := c.Scrape(ctx)
		if err != nil {
			if errors.Is(err, ErrUnreachable) || ctx.Err() != nil {
				return false, "", fmt.Errorf("idle check: %w", err)
			}
			return false, "", errNoSignal // no metrics, or none this parser reads
		}
		// Work in either gauge is busy; idle needs both at 0: a scrape with one of them
		// cannot rule out work in the other, and the next source may say more.
		running, okR := s.Sum(names.Running)
		queued, okQ := s.Sum(names.Queued)
		if !(okR && okQ) && running+queued == 0 {
			return false, "", errNoSignal
		}
		return running+queued > 0, fmt.Sprintf("%g running and %g queued requests (%s)", running, queued, names.Running[0]), nil
	}
	switch engine {
	case SGLang:
		return []idleSignal{c.sglangLoad("/v1/loads"), c.sglangLoad("/get_load"), fromMetrics}
	case VLLM:
		return []idleSignal{fromMetrics}
	case LlamaCpp:
		return []idleSignal{fromMetrics, c.llamaCppSlots}
	}
	return nil
}

// busy asks the first signal the server offers; the ones it lacks are skipped.
func (c *Client) busy(ctx context.Context, signals []idleSignal) (bool, string, error) {
	for _, sig := range signals {
		b, what, err := sig(ctx)
		// A signal guarded by a key the client lacks (SGLang can put its load endpoints behind
		// --admin-api-key) is as good as absent; the next one may do.
		if errors.Is(err, errNoSignal) || errors.Is(err, ErrUnauthorized) {
			continue
		}
		if err == nil {
			c.setIdleVerified(true)
		}
		return b, what, err
	}
	c.setIdleVerified(false)
	return false, "", nil
}

func (c *Client) setIdleVerified(v bool) {
	c.mu.Lock()
	c.idleUnverified = !v
	c.mu.Unlock()
}

// IdleUnverified reports whether the last idle wait found no signal at all (SGLang 0.4.x
// without --enable-metrics has neither a load endpoint nor metrics, S1 in ENGINES.md) and
// took the server as idle without knowing: a trial after it may have started while the
// previous trial's requests still ran, and SGLang 0.4.x's flush may have been a no-op.
func (c *Client) IdleUnverified() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.idleUnverified
}

// sglangLoad reads SGLang's per-rank load report. Two shapes exist:
//   - current (/v1/loads, entrypoints/v1_loads.py get_loads(), 2026): a wrapper
//     {"timestamp", "version", "loads": [...]} with one LoadSnapshot.to_dict() per DP rank:
//     "dp_rank", "num_running_reqs", "num_waiting_reqs" and token counts; there is no num_reqs.
//   - legacy (/get_load in 0.5.x, tokenizer_manager get_load, and the deprecated /get_load
//     shim of 2026): a bare list [{"dp_rank", "num_reqs", "num_waiting_reqs", ...}] where
//     num_reqs already counts running and waiting requests.
//
// A rank is idle only when nothing runs and nothing waits. An answer that lacks the fields
// to tell (a proxy's page, an empty list, a future shape) is no signal, so the next source
// in the chain is asked instead of taking the server as idle.
func (c *Client) sglangLoad(path string) idleSignal {
	return func(ctx context.Context) (bool, string, error) {
		status, body, err := c.call(ctx, http.MethodGet, path, nil)
		if err != nil {
			return false, "", fmt.Errorf("idle check: %w", err)
		}
		if status != http.StatusOK {
			return false, "", errNoSignal
		}
		running, waiting, ok := parseSGLangLoads(body)
		if !ok {
			return false, "", errNoSignal
		}
		return running+waiting > 0, fmt.Sprintf("%d running and %d waiting requests (%s)", running, waiting, path), nil
	}
}

// parseSGLangLoads sums the ranks of either load shape (see sglangLoad). ok is false when
// the answer shows no work yet some rank does not say both how many requests run and how
// many wait: such an answer cannot prove the server idle.
func parseSGLangLoads(body []byte) (running, waiting int, ok bool) {
	var loads []rankLoad
	if err := json.Unmarshal(body, &loads); err != nil {
		var wrapped struct {
			Loads []rankLoad `json:"loads"`
		}
		if json.Unmarshal(body, &wrapped) != nil {
			return 0, 0, false
		}
		loads = wrapped.Loads
	}
	complete := len(loads) > 0
	for _, l := range loads {
		w := 0
		if l.NumWaitingReqs != nil {
			w = *l.NumWaitingReqs
		}
		switch {
		case l.NumRunningReqs != nil:
			running += *l.NumRunningReqs
		case l.NumReqs != nil:
			// Legacy: num_reqs is running plus waiting.
			running += max(*l.NumReqs-w, 0)
		default:
			complete = false
		}
		if l.NumWaitingReqs == nil && l.NumReqs == nil {
			complete = false
		}
		waiting += w
	}
	return running, waiting, complete || running+waiting > 0
}

type rankLoad struct {
	NumRunningReqs *int `json:"num_running_reqs"` // current /v1/loads
	NumReqs        *int `json:"num_reqs"`         // legacy list: running + waiting
	NumWaitingReqs *int `json:"num_waiting_reqs"` // both shapes
}

// llamaCppSlots reads GET /slots: a list of slots with is_processing. Servers started with
// --no-slots answer 501, which says nothing about idleness.
func (c *Client) llamaCppSlots(ctx context.Context) (bool, string, error) {
	status, body, err := c.call(ctx, http.MethodGet, "/slots", nil)
	if err != nil {
		return false, "", fmt.Errorf("idle check: %w", err)
	}
	if status != http.StatusOK {
		return false, "", errNoSignal
	}
	var slots []struct {
		IsProcessing bool `json:"is_processing"`
	}
	if err := json.Unmarshal(body, &slots); err != nil {
		return false, "", errNoSignal
	}
	n := 0
	for _, s := range slots {
		if s.IsProcessing {
			n++
		}
	}
	return n > 0, fmt.Sprintf("%d processing slots (/slots)", n), nil
}

// idlePollMax is the longest pause between two idle checks.
const idlePollMax = 250 * time.Millisecond
