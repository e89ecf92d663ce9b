package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Cache flush modes accepted by FlushCache.
const (
	FlushAuto     = "auto"
	FlushNone     = "none"
	FlushSGLang   = string(SGLang)
	FlushVLLM     = string(VLLM)
	FlushLlamaCpp = string(LlamaCpp)
)

// FlushModes are the ways to deal with the prefix cache before each trial: detect the
// server, none, or one engine's own method.
var FlushModes = []string{FlushAuto, FlushNone, FlushSGLang, FlushVLLM, FlushLlamaCpp}

// ErrFlushFailed means the server did not confirm that it emptied its prefix cache.
var ErrFlushFailed = errors.New("the prefix cache was not flushed")

// CacheFlush says how the cache is dealt with before each trial.
type CacheFlush struct {
	Engine Name // engine whose method is used; empty for FlushNone
	// Auto is true when cache_flush = "auto" picked Engine from the server's identity.
	Auto bool
	// Method says what is done, for the results document.
	Method string
	// RequestFields must be merged into every measured request (ClientConfig.ExtraBody):
	// llama.cpp has no flush endpoint, so each request is told not to reuse the cache.
	RequestFields map[string]any
}

// Policy describes the flush for the results document's cache policy.
func (f CacheFlush) Policy() string {
	if f.Engine == "" {
		return "not flushed"
	}
	if f.Auto {
		return f.Method + ` (picked by cache_flush = "auto": the server identified itself as ` + string(f.Engine) + ")"
	}
	return f.Method
}

// sglangFlushTimeout is the ?timeout= sent to SGLang's /flush_cache: releases with PR #21413
// (2026-03) defer the flush until the scheduler is idle, up to that many seconds; older ones
// ignore the parameter and answer at once. It stays below the client's 30 s per attempt.
const sglangFlushTimeout = 10 * time.Second

// FlushCache empties the prefix cache so the next trial starts cold, and says how. Modes:
// FlushNone does nothing; FlushAuto identifies the server and uses its engine's method;
// FlushSGLang, FlushVLLM and FlushLlamaCpp name the method. Every method first waits for the
// server to be idle (WaitIdle): a flush while requests run is refused or partial.
func (c *Client) FlushCache(ctx context.Context, mode string) (CacheFlush, error) {
	auto := false
	switch mode {
	case FlushNone:
		return CacheFlush{}, nil
	case FlushAuto:
		engine, err := c.Engine(ctx)
		if err != nil {
			return CacheFlush{}, fmt.Errorf("cache flush auto: %w; set cache_flush to \"none\" to measure without flushing, or name the engine", err)
		}
		mode, auto = string(engine), true
	case FlushSGLang, FlushVLLM, FlushLlamaCpp:
	default:
		return CacheFlush{}, fmt.Errorf("cache flush: mode %q is not one of auto, none, sglang, vllm, llamacpp", mode)
	}
	f, err := c.flush(ctx, Name(mode))
	f.Auto = auto
	return f, err
}

// Flush repeats the flush f describes, before a later trial.
func (c *Client) Flush(ctx context.Context, f CacheFlush) error {
	if f.Engine == "" {
		return nil
	}
	_, err := c.flush(ctx, f.Engine)
	return err
}

func (c *Client) flush(ctx context.Context, engine Name) (CacheFlush, error) {
	if err := c.WaitIdle(ctx, engine); err != nil {
		return CacheFlush{}, fmt.Errorf("cache flush: %w", err)
	}
	switch engine {
	case LlamaCpp:
		// llama-server's only flush is POST /slots/{id}?action=erase, which needs
		// --slot-save-path (501 otherwise, server tests @00dc8057); cache_prompt=false stops a
		// request reusing a slot's cached prefix instead.
		return CacheFlush{Engine: LlamaCpp, Method: "llama.cpp prompt cache disabled per request (cache_prompt: false)",
			RequestFields: map[string]any{"cache_prompt": false}}, nil
	case VLLM:
		return c.flushVLLM(ctx)
	default:
		return c.flushSGLang(ctx)
	}
}

// flushVLLM posts /reset_prefix_cache, which vLLM registers only with VLLM_SERVER_DEV_MODE=1
// (vllm/entrypoints/serve/cache/api_router.py) and which answers 200 even when blocks in use
// kept it from resetting (PR #12284). The caller has waited for idle, so no block is in use;
// reset_running_requests=true (PR #28827, late 2025) makes the reset certain even when a
// request slipped in, and older releases ignore it. Whether the cache really was cold shows in
// each trial's cached-token counter.
func (c *Client) flushVLLM(ctx context.Context) (CacheFlush, error) {
	const path = "/reset_prefix_cache?reset_running_requests=true"
	status, body, err := c.call(ctx, http.MethodPost, path, nil)
	if err != nil {
		return CacheFlush{}, fmt.Errorf("cache flush: %w", err)
	}
	switch {
	case status == http.StatusNotFound:
		return CacheFlush{}, fmt.Errorf("cache flush: POST %s/reset_prefix_cache: HTTP 404: %w: vLLM serves it only in development mode; "+
			"start the server with VLLM_SERVER_DEV_MODE=1 (llmserve_inference_server with engine = \"vllm\" does), or set cache_flush = \"none\" to measure with a warm cache",
			c.redacted, ErrFlushFailed)
	case status != http.StatusOK:
		return CacheFlush{}, fmt.Errorf("cache flush: %w: %w", ErrFlushFailed, c.statusErr(http.MethodPost, "/reset_prefix_cache", status, body))
	}
	return CacheFlush{Engine: VLLM, Method: "prefix cache reset before every trial, once the server was idle (/reset_prefix_cache)"}, nil
}

// sglangFlushed is how SGLang's /flush_cache begins its answer when the flush happened. In
// 0.4/0.5 (http_server.py @0025436e) the same text comes with 200 and with the 400 that
// means "requests were running, nothing flushed", so the status decides there; since PR
// #21490 (2026-03) a 400 carries the failure message instead. A 200 with any other body (a
// proxy's page, an error object) is not a flush.
var sglangFlushed = []byte("Cache flushed")

// FlushRefusedError is a flush the server kept refusing until the caller's context ended
// (Terraform's interrupt, timeouts.create): the server's last answer, status and body
// (redacted, one line), is what the user needs to know, whatever stopped the wait.
type FlushRefusedError struct {
	URL      string // the server's base URL, redacted
	Attempts int
	Status   int
	Body     string
	Err      error // the context's error
}

// Answer is the refusal in a phrase: `POST http://…/flush_cache refused 12 times (last
// answer HTTP 400: "pending requests")`.
func (e *FlushRefusedError) Answer() string {
	return fmt.Sprintf("POST %s/flush_cache refused %d %s (last answer HTTP %d: %q)", e.URL, e.Attempts, map[bool]string{true: "time", false: "times"}[e.Attempts == 1], e.Status, e.Body)
}

func (e *FlushRefusedError) Error() string {
	return fmt.Sprintf("cache flush: POST %s/flush_cache still refused after %d attempts (last answer HTTP %d: %q): %v", e.URL, e.Attempts, e.Status, e.Body, e.Err)
}

func (e *FlushRefusedError) Unwrap() error { return e.Err }

// flushSGLang posts /flush_cache with the admin key where one is set (SGLang with
// --admin-api-key guards it, S3 @auth_level(ADMIN_OPTIONAL)). A 400 means requests were
// running or waiting (or another flush is pending); it is retried with backoff until the idle
// timeout, then the flush fails with the server's last answer.
func (c *Client) flushSGLang(ctx context.Context) (CacheFlush, error) {
	path := "/flush_cache?timeout=" + strconv.FormatFloat(sglangFlushTimeout.Seconds(), 'f', -1, 64)
	deadline := time.Now().Add(c.idleWait)
	wait := c.flushPoll
	// ended reports a context that ended while the server kept refusing, whether it ended
	// in the backoff wait or during the next POST: either way the flush was waiting for
	// the server to stop refusing, and the error says so.
	var refusal []byte
	ended := func(refused int) error {
		return &FlushRefusedError{URL: c.redacted, Attempts: refused, Status: http.StatusBadRequest, Body: c.secrets.OneLine(refusal), Err: ctx.Err()}
	}
	for attempt := 1; ; attempt++ {
		status, body, err := c.callAdmin(ctx, http.MethodPost, path, nil)
		if err != nil {
			if ctx.Err() != nil && attempt > 1 {
				return CacheFlush{}, ended(attempt - 1)
			}
			if errors.Is(err, ErrUnauthorized) && c.adminKey == "" {
				return CacheFlush{}, fmt.Errorf("cache flush: %w; a server started with --admin-api-key needs that key for /flush_cache: set admin_api_key", err)
			}
			return CacheFlush{}, fmt.Errorf("cache flush: %w", err)
		}
		body = bytes.TrimSpace(body)
		switch {
		case status == http.StatusOK && bytes.HasPrefix(body, sglangFlushed):
			return CacheFlush{Engine: SGLang, Method: "radix enabled; flushed before every trial (/flush_cache)"}, nil
		case status == http.StatusOK:
			return CacheFlush{}, fmt.Errorf("cache flush: POST %s/flush_cache answered 200 without saying the cache was flushed (%q): %w; is this endpoint SGLang?",
				c.redacted, c.secrets.OneLine(body), ErrFlushFailed)
		case status != http.StatusBadRequest:
			return CacheFlush{}, fmt.Errorf("cache flush: %w: %w", ErrFlushFailed, c.statusErr(http.MethodPost, "/flush_cache", status, body))
		}
		if time.Now().Add(wait).After(deadline) {
			return CacheFlush{}, fmt.Errorf("cache flush: %w: POST %s/flush_cache refused %d times over %s (last answer HTTP 400: %q); the server kept running or queueing requests, or another flush was pending",
				ErrFlushFailed, c.redacted, attempt, c.idleWait, c.secrets.OneLine(body))
		}
		refusal = body
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return CacheFlush{}, ended(attempt)
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
	}
}
