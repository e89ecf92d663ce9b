package simengine

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// generateRequest is the union of the chat and completions request fields the server honours.
type generateRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Prompt              json.RawMessage `json:"prompt"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	CachePrompt         json.RawMessage `json:"cache_prompt"` // llama.cpp; default true
	Temperature         *float64        `json:"temperature"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text extracts a message's content: a string, or an array of {"type":"text","text":...} parts.
func (m chatMessage) text() (string, error) {
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", fmt.Errorf("message content is neither a string nor an array of text parts: %w", err)
	}
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

func (s *Server) parseGenerate(r *http.Request, chat bool) (req generateRequest, prompt string, promptTokens int, status int, err error) {
	if err = json.NewDecoder(http.MaxBytesReader(nil, r.Body, 64<<20)).Decode(&req); err != nil {
		return req, "", 0, http.StatusBadRequest, fmt.Errorf("invalid JSON body: %w", err)
	}
	if req.Model != "" && req.Model != s.opts.ModelName {
		return req, "", 0, http.StatusNotFound, fmt.Errorf("the model `%s` does not exist", req.Model)
	}
	if chat {
		if len(req.Messages) == 0 {
			return req, "", 0, http.StatusBadRequest, errors.New("messages must not be empty")
		}
		var b strings.Builder
		for _, m := range req.Messages {
			t, terr := m.text()
			if terr != nil {
				return req, "", 0, http.StatusBadRequest, terr
			}
			b.WriteString(m.Role)
			b.WriteByte('\n')
			b.WriteString(t)
			b.WriteByte('\n')
			promptTokens += CountTokens(t)
		}
		prompt = b.String()
		promptTokens += s.opts.ChatTemplateTokens
	} else {
		var one string
		var many []string
		switch {
		case json.Unmarshal(req.Prompt, &one) == nil:
			prompt = one
		case json.Unmarshal(req.Prompt, &many) == nil && len(many) == 1:
			prompt = many[0]
		default:
			return req, "", 0, http.StatusBadRequest, errors.New("prompt must be a string (or an array of one string)")
		}
		promptTokens = CountTokens(prompt)
	}
	if promptTokens == 0 {
		return req, "", 0, http.StatusBadRequest, errors.New("prompt is empty")
	}
	return req, prompt, promptTokens, 0, nil
}

func (s *Server) handleGenerate(chat bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, prompt, promptTokens, status, err := s.parseGenerate(r, chat)
		if err != nil {
			writeError(w, status, err.Error())
			return
		}
		maxTokens := s.opts.DefaultMaxTokens
		switch {
		case req.MaxTokens != nil:
			maxTokens = *req.MaxTokens
		case req.MaxCompletionTokens != nil:
			maxTokens = *req.MaxCompletionTokens
		}
		if maxTokens < 1 {
			writeError(w, http.StatusBadRequest, "max_tokens must be at least 1")
			return
		}
		if promptTokens+maxTokens > s.opts.ContextLength {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("requested %d tokens (%d in the prompt, %d to generate), more than the context length %d",
				promptTokens+maxTokens, promptTokens, maxTokens, s.opts.ContextLength))
			return
		}
		seed := hashString(prompt)
		if req.Temperature != nil && *req.Temperature > 0 {
			seed = mix(seed, s.nonce.Add(1)) // sampling: the same prompt gives another text
		}
		generate, finish := maxTokens, "length"
		if !req.IgnoreEOS {
			// Without ignore_eos the "model" stops where its text ends, like a real one would.
			if natural := 16 + int(seed%240); natural < maxTokens {
				generate, finish = natural, "stop"
			}
		}
		nonce := s.nonce.Add(1)
		prefix := "cmpl-"
		if chat {
			prefix = "chatcmpl-"
		}
		r0 := newRNG(mix(seed, nonce))
		j := &job{
			id:       fmt.Sprintf("%s%016x", prefix, r0.Uint64()),
			prompt:   promptTokens,
			generate: generate,
			jitter:   r0.logNormal(s.opts.Model.RequestNoise),
			notify:   make(chan struct{}, 1),
		}
		if s.opts.Protocol != "" {
			j.seq, j.cachePrompt = promptSequence(prompt, chat), decodeCachePrompt(req.CachePrompt)
			if chat && s.opts.CachedPrefill {
				// The next turn's prompt begins with this one, then "assistant", the answer and
				// the new message (parseGenerate's role/content lines).
				var answer strings.Builder
				answer.WriteString(prompt + "assistant\n")
				for i := range generate {
					answer.WriteString(s.opts.OutputFault.word(seed, i))
				}
				answer.WriteString("\n")
				j.answered = promptSequence(answer.String(), chat)
			}
		}
		s.submit(j)
		defer s.release(j)
		started := time.Now()
		created := time.Now().Unix()

		if !req.Stream {
			var text strings.Builder
			if err := s.wait(r, j, func(from, to int) error {
				for i := from; i < to; i++ {
					text.WriteString(s.opts.OutputFault.word(seed, i))
				}
				return nil
			}); err != nil {
				return
			}
			s.completed(j, started)
			usage := s.usageFor(promptTokens, generate, j.cached)
			choice := map[string]any{"index": 0, "finish_reason": finish}
			object := "text_completion"
			if chat {
				choice["message"] = map[string]any{"role": "assistant", "content": text.String()}
				object = "chat.completion"
			} else {
				choice["text"] = text.String()
			}
			writeJSON(w, map[string]any{"id": j.id, "object": object, "created": created, "model": s.opts.ModelName,
				"choices": []any{choice}, "usage": usage})
			return
		}

		flusher, ok := w.(http.Flusher)
		if !ok {
			writeError(w, http.StatusInternalServerError, "response writer cannot stream")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		object := "text_completion"
		if chat {
			object = "chat.completion.chunk"
		}
		chunk := func(choices []any, extra map[string]any) error {
			m := map[string]any{"id": j.id, "object": object, "created": created, "model": s.opts.ModelName, "choices": choices}
			for k, v := range extra {
				m[k] = v
			}
			b, err := json.Marshal(m)
			if err != nil {
				return fmt.Errorf("encode chunk: %w", err)
			}
			if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
				return fmt.Errorf("write chunk: %w", err)
			}
			return nil
		}
		piece := func(text string, finish any) []any {
			if chat {
				delta := map[string]any{}
				if text != "" || finish == nil {
					delta["content"] = text
				}
				return []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}
			}
			return []any{map[string]any{"index": 0, "text": text, "logprobs": nil, "finish_reason": finish}}
		}
		if chat {
			// Like vLLM, announce the role with empty content before any token: a client must not
			// take this chunk for the first token.
			if chunk([]any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}, "finish_reason": nil}}, nil) != nil {
				return
			}
			flusher.Flush()
		}
		first := true
		err = s.wait(r, j, func(from, to int) error {
			for i := from; i < to; i++ {
				if err := chunk(piece(s.opts.OutputFault.word(seed, i), nil), nil); err != nil {
					return err
				}
			}
			flusher.Flush()
			if first {
				first = false
				if s.opts.OnFirstChunk != nil {
					s.opts.OnFirstChunk(j.id, time.Now())
				}
			}
			return nil
		})
		if err != nil {
			return
		}
		s.completed(j, started)
		if chunk(piece("", finish), nil) != nil {
			return
		}
		if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
			extra := map[string]any{"usage": s.usageFor(promptTokens, generate, j.cached)}
			if s.opts.Protocol == LlamaCpp {
				// llama-server's own account on the last chunk: cache_n prompt tokens reused.
				extra["timings"] = map[string]any{"prompt_n": promptTokens - j.cached, "cache_n": j.cached, "predicted_n": generate}
			}
			if chunk([]any{}, extra) != nil {
				return
			}
		}
		_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
		flusher.Flush()
	}
}
