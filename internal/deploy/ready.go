package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/degenerate"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/httpbody"
)

// Readiness says how to decide that an engine really serves.
type Readiness struct {
	Engine engine.Name
	Model  string // the name a completion request carries
	APIKey string
	// Timeout bounds the whole wait (model download and load included); 0 waits as long as
	// the context allows.
	Timeout time.Duration
	// Interval between polls; 0 means DefaultPollInterval.
	Interval time.Duration
	// HTTPClient talks to the engine; nil means a client without keep-alive reuse surprises.
	HTTPClient *http.Client
	// Redact lists secrets to blank out of the log lines a failure quotes: engines print
	// their arguments at start (SGLang logs server_args, api_key included).
	Redact []string
	// StallHint explains a server whose health answers while its first completion never
	// returns, where the launch makes a cause known (engine.Spec.FirstCompletionHint).
	StallHint string
}

// errCompletionUnanswered is a completion that a healthy server did not answer in time.
var errCompletionUnanswered = errors.New("the server is up (health answers) but the completion did not return")

// DefaultPollInterval keeps the provider's share of time-to-ready well under a second while
// costing the engine host one inspect and one HTTP request per poll.
const DefaultPollInterval = 100 * time.Millisecond

// Bound is ctx limited by Timeout, with the poll interval to use: every backend's wait for
// readiness reads the two settings the same way.
func (r Readiness) Bound(ctx context.Context) (context.Context, context.CancelFunc, time.Duration) {
	interval := r.Interval
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	if r.Timeout > 0 {
		ctx, cancel := context.WithTimeout(ctx, r.Timeout)
		return ctx, cancel, interval
	}
	return ctx, func() {}, interval
}

// WaitReady polls until the engine's health endpoint answers 200 and a short completion
// succeeds with text that is not degenerate. It fails at once, with the container's last log
// lines, if the container stops or restarts meanwhile, and at once when the completion is
// degenerate (DegenerateError).
func WaitReady(ctx context.Context, b Backend, id string, r Readiness) (engine.ServerInfo, error) {
	ctx, cancel, interval := r.Bound(ctx)
	defer cancel()
	hc := r.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	}
	baseRestarts := -1
	var lastErr error
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		st, err := b.Inspect(ctx, id)
		switch {
		case err != nil && ctx.Err() == nil:
			return engine.ServerInfo{}, fmt.Errorf("watching container %s while waiting for the engine: %w", shortID(id), err)
		case err == nil && st.Unpublished && r.HTTPClient == nil:
			// Its endpoint is inside its network namespace, not on this machine's loopback.
			return engine.ServerInfo{}, fmt.Errorf("container %s publishes nothing, and no client reaching into its network namespace was given", shortID(id))
		case err == nil:
			if baseRestarts < 0 {
				baseRestarts = st.RestartCount
			}
			if !st.Running || st.State == "restarting" || st.RestartCount > baseRestarts {
				logs := tailLogs(ctx, b, id, r.Redact)
				return engine.ServerInfo{}, &ExitedError{ID: id, State: st.State, ExitCode: st.ExitCode, Restarts: st.RestartCount - baseRestarts, Logs: logs}
			}
			// A probe begun after the bound ended would only replace what the last one saw
			// with "deadline exceeded".
			if st.Endpoint != "" && ctx.Err() == nil {
				lastErr = probe(ctx, hc, st.Endpoint, r)
				if lastErr == nil {
					return ReadServerInfo(ctx, st.Endpoint, r), nil
				}
				if broken := (*DegenerateError)(nil); errors.As(lastErr, &broken) {
					return engine.ServerInfo{}, fmt.Errorf("engine in container %s: %w. Last log lines:\n%s", shortID(id), lastErr, tailLogs(ctx, b, id, r.Redact))
				}
			}
		}
		select {
		case <-ctx.Done():
			logs := tailLogs(ctx, b, id, r.Redact)
			if errors.Is(lastErr, errCompletionUnanswered) && r.StallHint != "" {
				return engine.ServerInfo{}, fmt.Errorf("engine in container %s not ready: %w (last probe: %v): %s. Last log lines:\n%s", shortID(id), ctx.Err(), lastErr, r.StallHint, logs)
			}
			return engine.ServerInfo{}, fmt.Errorf("engine in container %s not ready: %w (last probe: %v); raise readiness_timeout if the model is still loading. Last log lines:\n%s", shortID(id), ctx.Err(), lastErr, logs)
		case <-ticker.C:
		}
	}
}

// Probe is one readiness attempt against the engine at base (health, then a short
// completion, judged as a trial judges its outputs: DegenerateError), for a backend that reaches its replicas one by one (Kubernetes pods).
func Probe(ctx context.Context, base string, r Readiness) error {
	hc := r.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	}
	return probe(ctx, hc, base, r)
}

// ProbeTokens is how many tokens the readiness probe's completion asks for: enough for the
// degenerate-output rules to judge (degenerate.MinCodePoints, were every token one code
// point, as "!" is), few enough to cost a ready server well under a second.
const ProbeTokens = degenerate.MinCodePoints

// DegenerateError is a server that answers its readiness completion with broken text
// (package degenerate: the rules a benchmark trial applies to its outputs). Waiting longer
// does not help, so WaitReady reports it at once.
type DegenerateError struct {
	Kind   degenerate.Kind
	Detail string // the rule's account, quoting the output (degenerate.Output.Describe)
}

func (e *DegenerateError) Error() string {
	return "the server answers, but its completion is degenerate (" + string(e.Kind) + "): " + e.Detail +
		"; a server generating broken text has nothing to measure: check the model file, its dtype and the engine's attention backend, and the server's logs"
}

// probe is one readiness attempt: health, then a real generation, because a health endpoint
// can answer before the scheduler serves (vLLM, llama.cpp while loading slots), and a
// server can serve broken text (DegenerateError).
func probe(ctx context.Context, hc *http.Client, base string, r Readiness) error {
	if _, err := call(ctx, hc, http.MethodGet, base+engine.HealthPath(r.Engine), r, nil); err != nil {
		return err
	}
	body := map[string]any{"model": r.Model, "prompt": "Hello", "max_tokens": ProbeTokens, "temperature": 0, "stream": false}
	out, err := call(ctx, hc, http.MethodPost, base+"/v1/completions", r, body)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: %w", errCompletionUnanswered, err)
	}
	if err != nil {
		return err
	}
	var resp struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
		Usage *struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(out, &resp); err != nil || len(resp.Choices) == 0 {
		return fmt.Errorf("completion answered without choices: %s", r.secrets().OneLine(out))
	}
	tokens := 0
	if resp.Usage != nil {
		tokens = resp.Usage.CompletionTokens
	}
	text := degenerate.Of(r.secrets().String(resp.Choices[0].Text))
	if k := text.Check(tokens); k != degenerate.None {
		return &DegenerateError{Kind: k, Detail: text.Describe(k, tokens)}
	}
	return nil
}

// secrets are the values to keep out of a failure's text: the server's key may come back in
// an echoed request.
func (r Readiness) secrets() *httpbody.Redactor {
	return httpbody.NewRedactor(append([]string{r.APIKey}, r.Redact...)...)
}

// call does one request with its own short deadline so a hung engine cannot stall the poll.
func call(ctx context.Context, hc *http.Client, method, url string, r Readiness, body any) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encoding request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, fmt.Errorf("building request %s %s: %w", method, url, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+r.APIKey)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading body: %w", method, url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("%s %s: HTTP %d: %s", method, url, resp.StatusCode, r.secrets().OneLine(out))
	}
	return out, nil
}

// ReadServerInfo asks a running engine at base (scheme://host:port) for its version and
// limits, as WaitReady does once it is ready and Read does after an import. It is best
// effort: an engine that does not report them still serves, so what is missing stays zero
// (shown as unknown). Transient failures are retried a few times.
func ReadServerInfo(ctx context.Context, base string, r Readiness) engine.ServerInfo {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := engine.NewClient(engine.ClientConfig{BaseURL: base, Model: r.Model, APIKey: r.APIKey, Engine: r.Engine,
		HTTPClient: r.HTTPClient, RetryMax: 2})
	if err != nil {
		return engine.ServerInfo{Engine: r.Engine}
	}
	info, _ := c.ServerInfo(ctx)
	info.Engine = r.Engine
	return info
}

// tailLogs fetches the container's last LogTail lines for a diagnostic, with secrets blanked.
func tailLogs(ctx context.Context, b Backend, id string, redact []string) string {
	// The caller's context may be what ended; the logs get their own short deadline so a
	// hung engine host cannot hold the diagnostic back.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	logs, err := b.Logs(lctx, id, LogTail)
	if err != nil {
		return fmt.Sprintf("(logs unavailable: %v)", err)
	}
	return httpbody.NewRedactor(redact...).String(logs)
}
