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
//   - SGLang: GET /v1/loads (2026 layout) or GET /get_load (0.5.x), every rank's num_reqs and
//     num_waiting_reqs 0; else sglang:num_running_reqs + num_queue_reqs from /metrics.
//   - vLLM: vllm:num_requests_running + num_requests_waiting from /metrics.
//   - llama.cpp: llamacpp:requests_processing + requests_deferred from /metrics (the
//     provider launches it with --metrics); else /slots, every is_processing false.
//
// A server with none of these signals cannot be waited for and is taken as idle. It fails
// with ErrBusy when the server stays busy past the idle timeout.
func (c *Client) WaitIdle(ctx context.Context, engine Name) error {
	signals := c.idleSignals(engine)
	deadline := time.Now().Add(c.idleWait)
	wait := 50 * time.Millisecond
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
		wait = min(2*wait, time.Second)
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
		running, okR := s.Sum(names.Running)
		queued, okQ := s.Sum(names.Queued)
		if !okR && !okQ {
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
		return b, what, err
	}
	return false, "", nil
}

// sglangLoad reads SGLang's per-rank load list: [{"dp_rank", "num_reqs",
// "num_waiting_reqs", ...}] (tokenizer_manager get_load; /get_load in 0.5.x, /v1/loads with
// /get_load as a deprecated alias in 2026).
func (c *Client) sglangLoad(path string) idleSignal {
	return func(ctx context.Context) (bool, string, error) {
		status, body, err := c.call(ctx, http.MethodGet, path, nil)
		if err != nil {
			return false, "", fmt.Errorf("idle check: %w", err)
		}
		if status != http.StatusOK {
			return false, "", errNoSignal
		}
		var loads []rankLoad
		if err := json.Unmarshal(body, &loads); err != nil {
			var wrapped struct {
				Loads *[]rankLoad `json:"loads"`
			}
			if json.Unmarshal(body, &wrapped) != nil || wrapped.Loads == nil {
				return false, "", errNoSignal
			}
			loads = *wrapped.Loads
		}
		reqs, waiting := 0, 0
		for _, l := range loads {
			reqs += l.NumReqs
			waiting += l.NumWaitingReqs
		}
		return reqs+waiting > 0, fmt.Sprintf("%d requests and %d waiting (%s)", reqs, waiting, path), nil
	}
}

type rankLoad struct {
	NumReqs        int `json:"num_reqs"`
	NumWaitingReqs int `json:"num_waiting_reqs"`
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
