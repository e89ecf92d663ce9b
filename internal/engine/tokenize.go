package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// ErrNoTokenizer means the server offers no tokenize endpoint; calibrate prompt lengths from
// usage.prompt_tokens instead.
var ErrNoTokenizer = errors.New("the server has no tokenize endpoint")

// CountTokens returns how many tokens text is, without special tokens and without a chat
// template, through the engine's tokenizer:
//   - llama.cpp: POST /tokenize {"content", "add_special": false} gives {"tokens": [...]}.
//   - vLLM: POST /tokenize {"model", "prompt", "add_special_tokens": false} gives {"count", ...}.
//   - SGLang: the same request and answer (entrypoints/openai/serving_tokenize.py @0351c1fa,
//     0.5.x and later; 0.4.x has no tokenizer endpoint and answers 404).
//
// It returns ErrNoTokenizer when the server has none. Transient failures (429, 5xx, a
// dropped connection) are retried with backoff like every control call.
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
		return 0, fmt.Errorf("count tokens: POST %s/tokenize: answer has neither count nor tokens: %s", c.redacted, c.secrets.OneLine(resp))
	}
	return len(out.Tokens), nil
}

// PromptTokens sends text as a one-token, non-streamed request (POST /v1/chat/completions as
// the user message when chat, else /v1/completions) and returns usage.prompt_tokens, which
// counts the chat template too. Prompt calibration uses it where the server has no tokenize
// endpoint; unlike measured requests it is retried on 429, 5xx and dropped connections, so one
// transient failure does not abort a benchmark. extra holds per-request fields the measured
// requests carry (llama.cpp's cache_prompt).
func (c *Client) PromptTokens(ctx context.Context, chat bool, text string, extra map[string]any) (int, error) {
	path := "/v1/completions"
	body := map[string]any{"model": c.model, "max_tokens": 1, "temperature": 0, "stream": false}
	if chat {
		path = "/v1/chat/completions"
		body["messages"] = []map[string]string{{"role": "user", "content": text}}
	} else {
		body["prompt"] = text
	}
	for k, v := range extra {
		body[k] = v
	}
	status, resp, err := c.call(ctx, http.MethodPost, path, body)
	if err != nil {
		return 0, fmt.Errorf("usage probe: %w", err)
	}
	if status != http.StatusOK {
		return 0, fmt.Errorf("usage probe: %w", c.statusErr(http.MethodPost, path, status, resp))
	}
	var out struct {
		Usage *struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(resp, &out); err != nil || out.Usage == nil {
		return 0, fmt.Errorf("usage probe: POST %s%s: the answer has no usage: %s", c.redacted, path, c.secrets.OneLine(resp))
	}
	return out.Usage.PromptTokens, nil
}
