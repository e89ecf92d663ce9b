package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/llmserve/terraform-provider-llmserve/internal/endpoint"
	"github.com/llmserve/terraform-provider-llmserve/internal/httpbody"
)

var (
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
	// AdminAPIKey is sent instead of APIKey on admin endpoints (SGLang's /flush_cache when the
	// server runs with --admin-api-key); empty: APIKey is sent there too.
	AdminAPIKey string

	// Engine skips detection when set to SGLang, VLLM or LlamaCpp.
	Engine Name

	HTTPClient   *http.Client  // nil: a pooled client with a 30 s per-attempt timeout
	RetryMax     int           // retries after the first attempt; 0 means 4, negative means none
	RetryWaitMin time.Duration // 0 means 200 ms
	RetryWaitMax time.Duration // 0 means 5 s
	FlushPoll    time.Duration // first wait while SGLang refuses to flush; 0 means 100 ms
	// IdleTimeout bounds the wait for a busy server to become idle before a flush or a
	// trial, and the retries of a refused flush; 0 means 2 minutes.
	IdleTimeout time.Duration
}

// Client makes the non-measured calls: health, models, tokenize, server info, cache flush.
// They go through go-retryablehttp with backoff on connection errors, 429 and 5xx, unlike
// measured requests, which are never retried.
type Client struct {
	base      string // no trailing slash
	redacted  string
	model     string
	apiKey    string
	adminKey  string
	secrets   *httpbody.Redactor // both keys, out of any text a server or proxy echoes
	rc        *retryablehttp.Client
	flushPoll time.Duration
	idleWait  time.Duration

	mu     sync.Mutex
	engine Name
	info   *ServerInfo // identification, cached after the first success
	// idleUnverified: the last idle wait found no signal and assumed idle.
	idleUnverified bool
}

// NewClient validates cfg and builds the retrying client.
func NewClient(cfg ClientConfig) (*Client, error) {
	base, err := endpoint.Parse(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("control client: endpoint %w", err)
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
		adminKey:  cfg.AdminAPIKey,
		secrets:   httpbody.NewRedactor(cfg.APIKey, cfg.AdminAPIKey),
		rc:        rc,
		flushPoll: cfg.FlushPoll,
		idleWait:  cfg.IdleTimeout,
		engine:    cfg.Engine,
	}
	if c.flushPoll <= 0 {
		c.flushPoll = 100 * time.Millisecond
	}
	if c.idleWait <= 0 {
		c.idleWait = 2 * time.Minute
	}
	return c, nil
}

// call performs one control request with retries and returns the status and up to 1 MiB of
// body. Transport failures and 401/403 come back as errors; other statuses are the caller's.
func (c *Client) call(ctx context.Context, method, path string, body any) (int, []byte, error) {
	return c.send(ctx, method, path, body, c.apiKey)
}

// callAdmin is call for admin endpoints: it sends the admin key when one is configured.
func (c *Client) callAdmin(ctx context.Context, method, path string, body any) (int, []byte, error) {
	if c.adminKey != "" {
		return c.send(ctx, method, path, body, c.adminKey)
	}
	return c.send(ctx, method, path, body, c.apiKey)
}

func (c *Client) send(ctx context.Context, method, path string, body any, key string) (int, []byte, error) {
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
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := c.rc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, fmt.Errorf("%s %s%s: %w", method, c.redacted, path, ctx.Err())
		}
		return 0, nil, &UnreachableError{Call: method + " " + c.redacted + path, Cause: c.secrets.String(httpbody.StripURL(err).Error())}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("%s %s%s: read response: %s", method, c.redacted, path, c.secrets.String(err.Error()))
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		hint := "set api_key to the server's key"
		switch {
		case key != "" && key == c.adminKey:
			hint = "check that admin_api_key matches the server's --admin-api-key"
		case key != "":
			hint = "check that api_key matches the key the server was started with"
		}
		return resp.StatusCode, data, fmt.Errorf("%s %s%s: HTTP %d: %w; %s", method, c.redacted, path, resp.StatusCode, ErrUnauthorized, hint)
	}
	return resp.StatusCode, data, nil
}

// statusErr describes an unexpected status, with the start of the body for diagnosis.
func (c *Client) statusErr(method, path string, status int, body []byte) error {
	return fmt.Errorf("%s %s%s: HTTP %d: %s", method, c.redacted, path, status, c.secrets.OneLine(body))
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
	return joinQuoted(ids)
}

// UnreachableError is a control call that got no HTTP response at all, after retries. Its
// text carries the start-up advice; a caller that knows the server answered before (a long
// run whose server went away) reads Call and Cause instead.
type UnreachableError struct {
	Call  string // "GET http://host:30000/v1/loads", redacted
	Cause string // what the connection attempt said, redacted
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("%s: %s failed: %s; check the endpoint URL, that the server is running and listening on that port, and that this machine can reach it",
		ErrUnreachable, e.Call, e.Cause)
}

// Unwrap makes errors.Is(err, ErrUnreachable) hold.
func (e *UnreachableError) Unwrap() error { return ErrUnreachable }
