package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/llmserve/terraform-provider-llmserve/internal/httpbody"
)

// Cache flush modes accepted by FlushCache.
const (
	FlushAuto     = "auto"
	FlushNone     = "none"
	FlushSGLang   = string(SGLang)
	FlushVLLM     = string(VLLM)
	FlushLlamaCpp = string(LlamaCpp)
)

var (
	// ErrNoTokenizer means the server offers no tokenize endpoint; calibrate prompt lengths from
	// usage.prompt_tokens instead.
	ErrNoTokenizer = errors.New("the server has no tokenize endpoint")
	// ErrUnauthorized means the server answered 401 or 403.
	ErrUnauthorized = errors.New("the server rejected the credentials: api_key is missing or wrong")
	// ErrUnreachable means no HTTP response came at all, after retries.
	ErrUnreachable = errors.New("inference server unreachable")
	// ErrUnknownEngine means none of SGLang, vLLM or llama.cpp answered their identifying endpoint.
	ErrUnknownEngine = errors.New("could not identify the server as SGLang, vLLM or llama.cpp")
	// ErrModelNotFound means the configured model is not among the server's models.
	ErrModelNotFound = errors.New("model not served")
)

// ClientConfig configures the control-plane client.
type ClientConfig struct {
	BaseURL string
	Model   string // used by VerifyModel and by vLLM/SGLang tokenize
	APIKey  string // sent as "Authorization: Bearer" on every control call

	// Engine skips detection when set to SGLang, VLLM or LlamaCpp.
	Engine Name

	HTTPClient   *http.Client  // nil: a pooled client with a 30 s per-attempt timeout
	RetryMax     int           // retries after the first attempt; 0 means 4, negative means none
	RetryWaitMin time.Duration // 0 means 200 ms
	RetryWaitMax time.Duration // 0 means 5 s
	FlushPoll    time.Duration // first wait while SGLang refuses to flush; 0 means 100 ms
}

// Client makes the non-measured calls: health, models, tokenize, server info, cache flush.
// They go through go-retryablehttp with backoff on connection errors, 429 and 5xx, unlike
// measured requests, which are never retried.
type Client struct {
	base      string // no trailing slash
	redacted  string
	model     string
	apiKey    string
	rc        *retryablehttp.Client
	flushPoll time.Duration

	mu     sync.Mutex
	engine Name
}

// ServerInfo is what the server says about itself. Zero values mean "not reported".
type ServerInfo struct {
	Engine     Name
	Version    string
	ModelPath  string
	MaxContext int // context length per request, in tokens
	TokenPool  int // total KV token capacity (SGLang max_total_num_tokens)
	Slots      int // llama.cpp total_slots, SGLang max_running_requests
}

// CacheFlush says how the cache was dealt with before a trial.
type CacheFlush struct {
	Engine Name // engine whose method was used; empty for FlushNone
	// RequestFields must be merged into every measured request (ClientConfig.ExtraBody):
	// llama.cpp has no flush endpoint, so each request is told not to reuse the cache.
	RequestFields map[string]any
}

// NewClient validates cfg and builds the retrying client.
func NewClient(cfg ClientConfig) (*Client, error) {
	base, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || base.Host == "" || (base.Scheme != "http" && base.Scheme != "https") {
		return nil, fmt.Errorf("control client: endpoint %q is not an http(s) base URL such as http://host:30000", redactURL(cfg.BaseURL))
	}
	switch cfg.Engine {
	case "", SGLang, VLLM, LlamaCpp:
	default:
		return nil, fmt.Errorf("control client: engine %q is not %q, %q or %q", cfg.Engine, SGLang, VLLM, LlamaCpp)
	}
	rc := retryablehttp.NewClient()
	rc.Logger = nil // its log lines carry URLs and would bypass our redaction
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	rc.HTTPClient = cfg.HTTPClient
	if rc.HTTPClient == nil {
		rc.HTTPClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     5 * time.Second,
		}}
	}
	rc.RetryMax = 4
	if cfg.RetryMax > 0 {
		rc.RetryMax = cfg.RetryMax
	} else if cfg.RetryMax < 0 {
		rc.RetryMax = 0
	}
	rc.RetryWaitMin, rc.RetryWaitMax = 200*time.Millisecond, 5*time.Second
	if cfg.RetryWaitMin > 0 {
		rc.RetryWaitMin = cfg.RetryWaitMin
	}
	if cfg.RetryWaitMax > 0 {
		rc.RetryWaitMax = cfg.RetryWaitMax
	}
	c := &Client{
		base:      base.String(),
		redacted:  base.Redacted(),
		model:     cfg.Model,
		apiKey:    cfg.APIKey,
		rc:        rc,
		flushPoll: cfg.FlushPoll,
		engine:    cfg.Engine,
	}
	if c.flushPoll <= 0 {
		c.flushPoll = 100 * time.Millisecond
	}
	return c, nil
}

// call performs one control request with retries and returns the status and up to 1 MiB of
// body. Transport failures and 401/403 come back as errors; other statuses are the caller's.
func (c *Client) call(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return 0, nil, fmt.Errorf("%s %s: encode request: %w", method, path, err)
		}
	}
	var rdr any
	if raw != nil {
		rdr = raw
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, method, c.base+path, rdr)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s%s: build request: %w", method, c.redacted, path, err)
	}
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.rc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, fmt.Errorf("%s %s%s: %w", method, c.redacted, path, ctx.Err())
		}
		return 0, nil, fmt.Errorf("%w: %s %s%s failed: %s; check the endpoint URL, that the server is running and listening on that port, and that this machine can reach it",
			ErrUnreachable, method, c.redacted, path, c.scrub(stripURL(err).Error()))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("%s %s%s: read response: %s", method, c.redacted, path, c.scrub(err.Error()))
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		hint := "set api_key to the server's key"
		if c.apiKey != "" {
			hint = "check that api_key matches the key the server was started with"
		}
		return resp.StatusCode, data, fmt.Errorf("%s %s%s: HTTP %d: %w; %s", method, c.redacted, path, resp.StatusCode, ErrUnauthorized, hint)
	}
	return resp.StatusCode, data, nil
}

// statusErr describes an unexpected status, with the start of the body for diagnosis.
func (c *Client) statusErr(method, path string, status int, body []byte) error {
	return fmt.Errorf("%s %s%s: HTTP %d: %s", method, c.redacted, path, status, c.quote(body))
}

// quote turns server text into one line for a message, redacting the key first: cutting
// first could leave the key's first characters at the end of the quote, where scrub no
// longer finds them.
func (c *Client) quote(b []byte) string {
	return c.scrub(httpbody.OneLine([]byte(c.scrub(string(b)))))
}

// scrub is defence in depth: a server or proxy that echoes the request must not leak the key.
func (c *Client) scrub(s string) string {
	if c.apiKey == "" {
		return s
	}
	return strings.ReplaceAll(s, c.apiKey, "[redacted]")
}

// Health succeeds once GET /health answers 200. Servers answer 503 while loading; that is
// retried with backoff.
func (c *Client) Health(ctx context.Context) error {
	status, body, err := c.call(ctx, http.MethodGet, "/health", nil)
	if err != nil {
		return fmt.Errorf("health check: %w", err)
	}
	if status != http.StatusOK {
		return fmt.Errorf("health check: %w", c.statusErr(http.MethodGet, "/health", status, body))
	}
	return nil
}

type modelList struct {
	Data []struct {
		ID          string `json:"id"`
		MaxModelLen int    `json:"max_model_len"`
	} `json:"data"`
}

func (c *Client) models(ctx context.Context) (modelList, error) {
	var ml modelList
	status, body, err := c.call(ctx, http.MethodGet, "/v1/models", nil)
	if err != nil {
		return ml, fmt.Errorf("list models: %w", err)
	}
	if status != http.StatusOK {
		return ml, fmt.Errorf("list models: %w", c.statusErr(http.MethodGet, "/v1/models", status, body))
	}
	if err := json.Unmarshal(body, &ml); err != nil {
		return ml, fmt.Errorf("list models: GET %s/v1/models: not an OpenAI model list: %w", c.redacted, err)
	}
	return ml, nil
}

// Models returns the ids the server lists at GET /v1/models.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	ml, err := c.models(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(ml.Data))
	for _, m := range ml.Data {
		ids = append(ids, m.ID)
	}
	return ids, nil
}

// VerifyModel checks that the configured model is served, and lists the served ones when
// it is not.
func (c *Client) VerifyModel(ctx context.Context) error {
	ids, err := c.Models(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if id == c.model {
			return nil
		}
	}
	sort.Strings(ids)
	return fmt.Errorf("%w: %s serves %s, not %q; set model to one of them",
		ErrModelNotFound, c.redacted, quoteList(ids), c.model)
}

func quoteList(ids []string) string {
	if len(ids) == 0 {
		return "no models"
	}
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	return strings.Join(q, ", ")
}

// Engine identifies the server (cached after the first success): SGLang answers
// GET /get_server_info, llama.cpp GET /props, vLLM GET /version.
func (c *Client) Engine(ctx context.Context) (Name, error) {
	c.mu.Lock()
	e := c.engine
	c.mu.Unlock()
	if e != "" {
		return e, nil
	}
	probes := []struct {
		engine Name
		path   string
	}{
		{SGLang, "/get_server_info"},
		{LlamaCpp, "/props"},
		{VLLM, "/version"},
	}
	for _, p := range probes {
		status, body, err := c.call(ctx, http.MethodGet, p.path, nil)
		if err != nil {
			return "", fmt.Errorf("identify server: %w", err)
		}
		if status != http.StatusOK || !json.Valid(body) {
			continue
		}
		if p.engine == LlamaCpp && !bytes.Contains(body, []byte("default_generation_settings")) &&
			!bytes.Contains(body, []byte("total_slots")) {
			continue
		}
		c.mu.Lock()
		c.engine = p.engine
		c.mu.Unlock()
		return p.engine, nil
	}
	return "", fmt.Errorf("identify server at %s: %w", c.redacted, ErrUnknownEngine)
}

// ServerInfo reads the server's self-description: SGLang GET /get_server_info, llama.cpp
// GET /props, vLLM GET /version plus max_model_len from /v1/models.
func (c *Client) ServerInfo(ctx context.Context) (ServerInfo, error) {
	engine, err := c.Engine(ctx)
	if err != nil {
		return ServerInfo{}, fmt.Errorf("server info: %w", err)
	}
	info := ServerInfo{Engine: engine}
	var path string
	switch engine {
	case SGLang:
		path = "/get_server_info"
	case LlamaCpp:
		path = "/props"
	default:
		path = "/version"
	}
	status, body, err := c.call(ctx, http.MethodGet, path, nil)
	if err != nil {
		return info, fmt.Errorf("server info: %w", err)
	}
	if status != http.StatusOK {
		return info, fmt.Errorf("server info: %w", c.statusErr(http.MethodGet, path, status, body))
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return info, fmt.Errorf("server info: GET %s%s: not JSON: %w", c.redacted, path, err)
	}
	switch engine {
	case SGLang:
		// Newer SGLang reports scheduler figures under internal_states.
		var states map[string]any
		if l, ok := m["internal_states"].([]any); ok && len(l) > 0 {
			states, _ = l[0].(map[string]any)
		}
		info.Version = str(m["version"])
		info.ModelPath = str(m["model_path"])
		info.MaxContext = firstInt(m["context_length"], states["context_length"])
		info.TokenPool = firstInt(m["max_total_num_tokens"], states["max_total_num_tokens"])
		info.Slots = firstInt(m["max_running_requests"], states["max_running_requests"])
	case LlamaCpp:
		gen, _ := m["default_generation_settings"].(map[string]any)
		info.Version = str(m["build_info"])
		info.ModelPath = str(m["model_path"])
		info.MaxContext = firstInt(gen["n_ctx"], m["n_ctx"])
		info.Slots = firstInt(m["total_slots"])
	case VLLM:
		info.Version = str(m["version"])
	}
	if info.MaxContext == 0 {
		// OpenAI model lists of vLLM and SGLang carry max_model_len; a failure here only
		// leaves the figure unreported.
		if ml, err := c.models(ctx); err == nil {
			for _, d := range ml.Data {
				if d.ID == c.model || len(ml.Data) == 1 {
					info.MaxContext = d.MaxModelLen
				}
			}
		}
	}
	return info, nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func firstInt(vs ...any) int {
	for _, v := range vs {
		if f, ok := v.(float64); ok && f > 0 {
			return int(f)
		}
	}
	return 0
}

// CountTokens returns how many tokens text is, without special tokens, through the server's
// tokenize endpoint: llama.cpp POST /tokenize {"content", "add_special": false}; vLLM and
// SGLang POST /tokenize {"model", "prompt", "add_special_tokens": false}. It returns
// ErrNoTokenizer when the server has none (older SGLang, unknown servers).
func (c *Client) CountTokens(ctx context.Context, text string) (int, error) {
	engine, err := c.Engine(ctx)
	if err != nil && !errors.Is(err, ErrUnknownEngine) {
		return 0, fmt.Errorf("count tokens: %w", err)
	}
	var body any
	switch engine {
	case LlamaCpp:
		body = map[string]any{"content": text, "add_special": false}
	case VLLM, SGLang:
		body = map[string]any{"model": c.model, "prompt": text, "add_special_tokens": false}
	default:
		return 0, fmt.Errorf("count tokens: %w", ErrNoTokenizer)
	}
	status, resp, err := c.call(ctx, http.MethodPost, "/tokenize", body)
	if err != nil {
		return 0, fmt.Errorf("count tokens: %w", err)
	}
	switch {
	case status == http.StatusNotFound || status == http.StatusMethodNotAllowed:
		return 0, fmt.Errorf("count tokens: POST %s/tokenize: HTTP %d: %w", c.redacted, status, ErrNoTokenizer)
	case status != http.StatusOK:
		return 0, fmt.Errorf("count tokens: %w", c.statusErr(http.MethodPost, "/tokenize", status, resp))
	}
	var out struct {
		Count  *int              `json:"count"`
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := json.Unmarshal(resp, &out); err != nil {
		return 0, fmt.Errorf("count tokens: POST %s/tokenize: unexpected answer: %w", c.redacted, err)
	}
	if out.Count != nil {
		return *out.Count, nil
	}
	if out.Tokens == nil {
		return 0, fmt.Errorf("count tokens: POST %s/tokenize: answer has neither count nor tokens: %s", c.redacted, c.quote(resp))
	}
	return len(out.Tokens), nil
}

// FlushCache empties the prefix/radix cache before a trial so no trial benefits from the
// previous one. Modes: FlushNone does nothing; FlushSGLang posts /flush_cache and, while
// SGLang answers 400 because requests are still running, waits and tries again until it
// succeeds or ctx ends; FlushVLLM posts /reset_prefix_cache; FlushLlamaCpp returns
// cache_prompt=false as a per-request field; FlushAuto identifies the server first.
func (c *Client) FlushCache(ctx context.Context, mode string) (CacheFlush, error) {
	switch mode {
	case FlushNone:
		return CacheFlush{}, nil
	case FlushAuto:
		engine, err := c.Engine(ctx)
		if err != nil {
			return CacheFlush{}, fmt.Errorf("cache flush auto: %w; set cache_flush to \"none\" to measure without flushing, or name the engine", err)
		}
		return c.FlushCache(ctx, string(engine))
	case FlushLlamaCpp:
		return CacheFlush{Engine: LlamaCpp, RequestFields: map[string]any{"cache_prompt": false}}, nil
	case FlushVLLM:
		status, body, err := c.call(ctx, http.MethodPost, "/reset_prefix_cache", nil)
		if err != nil {
			return CacheFlush{}, fmt.Errorf("cache flush: %w", err)
		}
		if status == http.StatusNotFound {
			return CacheFlush{}, fmt.Errorf("cache flush: POST %s/reset_prefix_cache: HTTP 404: vLLM serves it only with VLLM_SERVER_DEV_MODE=1", c.redacted)
		}
		if status != http.StatusOK {
			return CacheFlush{}, fmt.Errorf("cache flush: %w", c.statusErr(http.MethodPost, "/reset_prefix_cache", status, body))
		}
		return CacheFlush{Engine: VLLM}, nil
	case FlushSGLang:
		return c.flushSGLang(ctx)
	}
	return CacheFlush{}, fmt.Errorf("cache flush: mode %q is not one of auto, none, sglang, vllm, llamacpp", mode)
}

func (c *Client) flushSGLang(ctx context.Context) (CacheFlush, error) {
	wait := c.flushPoll
	for attempt := 1; ; attempt++ {
		status, body, err := c.call(ctx, http.MethodPost, "/flush_cache", nil)
		if err != nil {
			return CacheFlush{}, fmt.Errorf("cache flush: %w", err)
		}
		switch status {
		case http.StatusOK:
			return CacheFlush{Engine: SGLang}, nil
		case http.StatusBadRequest:
			// SGLang refuses while requests are running; they finish on their own.
		default:
			return CacheFlush{}, fmt.Errorf("cache flush: %w", c.statusErr(http.MethodPost, "/flush_cache", status, body))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return CacheFlush{}, fmt.Errorf("cache flush: POST %s/flush_cache still refused (requests running) after %d attempts: %w",
				c.redacted, attempt, ctx.Err())
		case <-t.C:
		}
		if wait < 2*time.Second {
			wait *= 2
		}
	}
}

// ErrBusy means the server kept running requests that are not ours past the idle wait.
var ErrBusy = errors.New("the server stayed busy")

// idleWait bounds WaitIdle: requests cancelled by a stopped probe end within seconds; a
// server busy for longer is serving someone else, and a trial measured then would be wrong.
const idleWait = 2 * time.Minute

// WaitIdle returns once the server runs no request, so a trial never starts while requests
// of a previous (stopped) trial are still being processed. llama.cpp is asked through
// GET /slots, vLLM through its /metrics gauges; SGLang's flush already waits for idle, and
// servers that cannot tell are taken as idle.
func (c *Client) WaitIdle(ctx context.Context, engine Name) error {
	var busy func(context.Context) (bool, error)
	switch engine {
	case LlamaCpp:
		busy = c.llamaCppBusy
	case VLLM:
		busy = c.vllmBusy
	default:
		return nil
	}
	deadline := time.Now().Add(idleWait)
	for {
		b, err := busy(ctx)
		if err != nil || !b {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s still ran requests %s after the previous trial ended; is another client using it?", ErrBusy, c.redacted, idleWait)
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for %s to become idle: %w", c.redacted, ctx.Err())
		case <-t.C:
		}
	}
}

func (c *Client) llamaCppBusy(ctx context.Context) (bool, error) {
	status, body, err := c.call(ctx, http.MethodGet, "/slots", nil)
	if err != nil {
		return false, fmt.Errorf("idle check: %w", err)
	}
	if status != http.StatusOK {
		return false, nil // slots endpoint disabled (--no-slots): cannot tell
	}
	var slots []struct {
		IsProcessing bool `json:"is_processing"`
	}
	if err := json.Unmarshal(body, &slots); err != nil {
		return false, nil
	}
	for _, s := range slots {
		if s.IsProcessing {
			return true, nil
		}
	}
	return false, nil
}

func (c *Client) vllmBusy(ctx context.Context) (bool, error) {
	status, body, err := c.call(ctx, http.MethodGet, "/metrics", nil)
	if err != nil {
		return false, fmt.Errorf("idle check: %w", err)
	}
	if status != http.StatusOK {
		return false, nil
	}
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "vllm:num_requests_running") && !strings.HasPrefix(line, "vllm:num_requests_waiting") {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil && v > 0 {
			return true, nil
		}
	}
	return false, nil
}

// stripURL drops the URL from a transport error: the caller names the endpoint itself,
// redacted.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// redactURL hides any password in a user-supplied URL before it goes into a message.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}
