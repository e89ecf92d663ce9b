package simengine

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configures the HTTP face.
type Options struct {
	Model     Model
	ModelName string // served model id; default "sim-model"
	APIKey    string // when set, /v1/*, /tokenize, /flush_cache and /get_server_info need "Bearer <key>"
	// TimeScale converts model time to wall time (0.01: a 100 ms prefill takes 1 ms), so
	// acceptance tests finish in seconds while keeping the model's proportions. Default 1.
	TimeScale float64
	// ChatTemplateTokens is what the chat template adds to a chat prompt's token count, as a
	// real server's template does (SGLang's Qwen template adds about 11). Default 11; negative: 0.
	ChatTemplateTokens int
	ContextLength      int // prompt + max_tokens above this is rejected; default 32768
	MaxTotalTokens     int // reported KV pool size; default Slots * ContextLength
	DefaultMaxTokens   int // when a request has no max_tokens; default 128
	Version            string
	// Protocol selects the HTTP face of one engine release (see Protocol); empty: the generic
	// SGLang-like face.
	Protocol Protocol
	// AdminAPIKey guards /flush_cache as SGLang's --admin-api-key does (SGLang protocol).
	AdminAPIKey string
	// DevMode serves vLLM's development endpoints (VLLM_SERVER_DEV_MODE=1).
	DevMode bool
	// NoCacheReport leaves cached_tokens out of usage (SGLang without --enable-cache-report,
	// vLLM without --enable-prompt-tokens-details).
	NoCacheReport bool
	// NoMetrics turns /metrics off (SGLang without --enable-metrics, llama.cpp without
	// --metrics).
	NoMetrics bool
	// FlushFault makes the cache flush refuse or ignore every call.
	FlushFault FlushFault
	// OnFirstChunk, when set, is called right after the first non-empty content chunk of a
	// response has been flushed, so tests can compare client TTFT with the server's emit time.
	OnFirstChunk func(id string, at time.Time)
	// Logf, when set, receives one line per finished request.
	Logf func(format string, args ...any)
}

// Stats are counters for tests.
type Stats struct {
	InFlight        int   // generation requests admitted and not yet answered
	MaxInFlight     int   // highest InFlight since the last ResetStats
	RequestsServed  int64 // generation requests that ran to completion
	Cancelled       int64 // generation requests the client abandoned
	Flushes         int64 // flushes that emptied the prefix cache
	FlushesRejected int64 // /flush_cache calls answered 400 because requests were running
	FlushesIgnored  int64 // flushes answered as success that emptied nothing
	DeprecatedCalls int64 // calls to aliases the engine warns about on every call
	CachedTokens    int64 // prompt tokens of completed requests served from the prefix cache
	PromptTokens    int64 // server-side prompt tokens of completed requests
	OutputTokens    int64 // tokens generated for completed requests
}

// Server is an OpenAI-compatible streaming server driven by the Model in real time. Its
// scheduler goroutine runs only while requests are queued or running, so an idle Server holds no
// goroutine and needs no Close.
type Server struct {
	opts  Options
	mux   *http.ServeMux
	ready atomic.Bool
	nonce atomic.Uint64

	mu           sync.Mutex
	waiting      []*job
	running      []*job
	schedRunning bool
	stats        Stats
	cache        prefixCache
	ttft         histogram
	e2e          histogram
	queue        histogram
}

type job struct {
	id       string
	prompt   int     // server-side prompt tokens
	generate int     // tokens to generate
	jitter   float64 // per-request prefill cost factor
	seq      []int   // prompt tokens as the prefix cache sees them
	cached   int     // prompt tokens served from the prefix cache
	// cachePrompt is llama.cpp's per-request cache_prompt (false: reuse nothing).
	cachePrompt bool
	submitted   time.Time
	admitted    time.Time // guarded by Server.mu
	first       time.Time // guarded by Server.mu
	produced    int       // guarded by Server.mu
	done        bool      // guarded by Server.mu
	cancelled   bool      // guarded by Server.mu
	notify      chan struct{}
}

// NewServer validates the options and returns a ready server.
func NewServer(opts Options) (*Server, error) {
	if err := opts.Model.Validate(); err != nil {
		return nil, err
	}
	if opts.ModelName == "" {
		opts.ModelName = "sim-model"
	}
	if opts.TimeScale == 0 {
		opts.TimeScale = 1
	}
	if opts.TimeScale < 0 {
		return nil, fmt.Errorf("simengine: time scale must be positive, got %g", opts.TimeScale)
	}
	switch {
	case opts.ChatTemplateTokens == 0:
		opts.ChatTemplateTokens = 11
	case opts.ChatTemplateTokens < 0:
		opts.ChatTemplateTokens = 0
	}
	if opts.ContextLength <= 0 {
		opts.ContextLength = 32768
	}
	if opts.MaxTotalTokens <= 0 {
		opts.MaxTotalTokens = opts.Model.Slots * opts.ContextLength
	}
	if opts.DefaultMaxTokens <= 0 {
		opts.DefaultMaxTokens = 128
	}
	if opts.Version == "" {
		opts.Version = "simengine-1"
	}
	s := &Server{opts: opts, mux: http.NewServeMux()}
	s.ready.Store(true)
	switch opts.Protocol {
	case "":
	case SGLang04, SGLang, VLLM, LlamaCpp:
		s.registerProtocol()
		return s, nil
	default:
		return nil, fmt.Errorf("simengine: unknown protocol %q", opts.Protocol)
	}
	s.mux.HandleFunc("POST /v1/chat/completions", s.authed(s.ready503(s.handleGenerate(true))))
	s.mux.HandleFunc("POST /v1/completions", s.authed(s.ready503(s.handleGenerate(false))))
	s.mux.HandleFunc("GET /v1/models", s.authed(s.ready503(s.handleModels)))
	s.mux.HandleFunc("GET /health", s.ready503(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	s.mux.HandleFunc("GET /health_generate", s.ready503(s.handleHealthGenerate))
	s.mux.HandleFunc("POST /tokenize", s.authed(s.ready503(s.handleTokenize)))
	s.mux.HandleFunc("/flush_cache", s.authed(s.handleFlush))
	s.mux.HandleFunc("GET /get_server_info", s.authed(s.ready503(s.handleServerInfo)))
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// SetReady switches readiness; while not ready every endpoint but /flush_cache answers 503, the
// way a server still loading its weights does.
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// ResetStats zeroes the counters (InFlight stays: it is state, not history).
func (s *Server) ResetStats() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats = Stats{InFlight: s.stats.InFlight, MaxInFlight: s.stats.InFlight}
}

func (s *Server) authed(h http.HandlerFunc) http.HandlerFunc {
	if s.opts.APIKey == "" {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+s.opts.APIKey {
			writeError(w, http.StatusUnauthorized, "invalid API key")
			return
		}
		h(w, r)
	}
}

func (s *Server) ready503(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			writeError(w, http.StatusServiceUnavailable, "server is starting")
			return
		}
		h(w, r)
	}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "code": status}, "object": "error"})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v) // a failed write means the client left; nothing to do
}

// submit queues a job and starts the scheduler when it is not running.
func (s *Server) submit(j *job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j.submitted = time.Now()
	if j.seq != nil {
		j.cached = s.cachedTokens(j.seq, j.cachePrompt)
	}
	s.waiting = append(s.waiting, j)
	s.stats.InFlight++
	s.stats.MaxInFlight = max(s.stats.MaxInFlight, s.stats.InFlight)
	if !s.schedRunning {
		s.schedRunning = true
		go s.schedule()
	}
}

// release accounts for a job leaving; cancelled jobs are dropped by the scheduler.
func (s *Server) release(j *job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.InFlight--
	if !j.done {
		j.cancelled = true
		s.stats.Cancelled++
	}
}

// schedule runs the model in wall time. Deadlines are absolute so a late wake-up shortens the
// next sleep instead of drifting the whole stream.
func (s *Server) schedule() {
	deadline := time.Now()
	for {
		s.mu.Lock()
		s.waiting = dropCancelled(s.waiting)
		s.running = dropCancelled(s.running)
		if len(s.waiting) == 0 && len(s.running) == 0 {
			s.schedRunning = false
			s.mu.Unlock()
			return
		}
		m := s.opts.Model
		var batch []*job
		var cost float64
		if len(s.waiting) > 0 && len(s.running) < m.Slots {
			n := m.admit(len(s.waiting), m.Slots-len(s.running), func(i int) int { return s.waiting[i].prompt })
			batch = append(batch, s.waiting[:n]...)
			for _, j := range batch {
				j.admitted = time.Now()
			}
			s.waiting = append(s.waiting[:0:0], s.waiting[n:]...)
			weighted := 0.0
			for _, j := range batch {
				weighted += float64(j.prompt) * j.jitter
			}
			cost = m.prefillCost(weighted)
		} else {
			cost = m.decodeCost(len(s.running))
		}
		s.mu.Unlock()

		if now := time.Now(); now.Sub(deadline) > 50*time.Millisecond {
			deadline = now // idle or badly late: restart the clock rather than burst
		}
		deadline = deadline.Add(time.Duration(cost * s.opts.TimeScale))
		time.Sleep(time.Until(deadline))

		s.mu.Lock()
		if batch != nil {
			for _, j := range batch {
				if j.cancelled {
					continue
				}
				s.emit(j)
				if !j.done {
					s.running = append(s.running, j)
				}
			}
		} else {
			kept := s.running[:0]
			for _, j := range s.running {
				if j.cancelled {
					continue
				}
				s.emit(j)
				if !j.done {
					kept = append(kept, j)
				}
			}
			s.running = kept
		}
		s.mu.Unlock()
	}
}

// emit produces one token for j; callers hold s.mu.
func (s *Server) emit(j *job) {
	j.produced++
	if j.produced == 1 {
		j.first = time.Now()
	}
	if j.produced >= j.generate {
		j.done = true
	}
	select {
	case j.notify <- struct{}{}:
	default: // a wake-up is already pending; the handler reads j.produced, not the channel
	}
}

func dropCancelled(js []*job) []*job {
	kept := js[:0]
	for _, j := range js {
		if !j.cancelled {
			kept = append(kept, j)
		}
	}
	clear(js[len(kept):])
	return kept
}

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
		}
		s.submit(j)
		defer s.release(j)
		started := time.Now()
		created := time.Now().Unix()

		if !req.Stream {
			var text strings.Builder
			if err := s.wait(r, j, func(from, to int) error {
				for i := from; i < to; i++ {
					text.WriteString(outputWord(seed, i))
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
				if err := chunk(piece(outputWord(seed, i), nil), nil); err != nil {
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

// wait hands newly produced tokens [from, to) to deliver until j is done; it returns an error
// when the client goes away or a write fails, after which j is abandoned.
func (s *Server) wait(r *http.Request, j *job, deliver func(from, to int) error) error {
	sent := 0
	for {
		select {
		case <-r.Context().Done():
			return fmt.Errorf("client left request %s: %w", j.id, r.Context().Err())
		case <-j.notify:
		}
		s.mu.Lock()
		produced, done := j.produced, j.done
		s.mu.Unlock()
		if produced > sent {
			if err := deliver(sent, produced); err != nil {
				return err
			}
			sent = produced
		}
		if done {
			return nil
		}
	}
}

func (s *Server) completed(j *job, started time.Time) {
	s.mu.Lock()
	s.stats.RequestsServed++
	s.stats.PromptTokens += int64(j.prompt)
	s.stats.OutputTokens += int64(j.generate)
	s.stats.CachedTokens += int64(j.cached)
	if j.seq != nil {
		s.cache.insert(j.seq)
		s.observe(j)
	}
	s.mu.Unlock()
	if s.opts.Logf != nil {
		s.opts.Logf("request %s prompt_tokens=%d completion_tokens=%d elapsed=%s", j.id, j.prompt, j.generate, time.Since(started).Round(time.Microsecond))
	}
}

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{"object": "list", "data": []any{map[string]any{
		"id": s.opts.ModelName, "object": "model", "created": 0, "owned_by": "simengine", "max_model_len": s.opts.ContextLength,
	}}})
}

// handleHealthGenerate generates one token through the scheduler, as SGLang does, so it answers
// only when the engine really makes progress.
func (s *Server) handleHealthGenerate(w http.ResponseWriter, r *http.Request) {
	j := &job{id: "health", prompt: 1, generate: 1, jitter: 1, notify: make(chan struct{}, 1)}
	s.submit(j)
	defer s.release(j)
	if err := s.wait(r, j, func(int, int) error { return nil }); err != nil {
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Content *string `json:"content"`
		Prompt  *string `json:"prompt"` // vLLM's spelling
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 64<<20)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("invalid JSON body: %v", err))
		return
	}
	text := req.Content
	if text == nil {
		text = req.Prompt
	}
	if text == nil {
		writeError(w, http.StatusBadRequest, `"content" is required`)
		return
	}
	tokens := Tokenize(*text)
	if tokens == nil {
		tokens = []int{}
	}
	writeJSON(w, map[string]any{"tokens": tokens, "count": len(tokens), "max_model_len": s.opts.ContextLength})
}

// handleFlush mimics SGLang: the radix cache is only flushed when no request is queued or running.
func (s *Server) handleFlush(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		writeError(w, http.StatusMethodNotAllowed, "use POST")
		return
	}
	s.mu.Lock()
	busy := s.stats.InFlight > 0
	if busy {
		s.stats.FlushesRejected++
	} else {
		s.stats.Flushes++
	}
	s.mu.Unlock()
	if busy {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprint(w, "Cache not flushed. Please check if the server is idle.\n")
		return
	}
	_, _ = fmt.Fprint(w, "Cache flushed.\n")
}

func (s *Server) handleServerInfo(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{
		"model_path":           s.opts.ModelName,
		"served_model_name":    s.opts.ModelName,
		"version":              s.opts.Version,
		"max_total_num_tokens": s.opts.MaxTotalTokens,
		"max_running_requests": s.opts.Model.Slots,
		"context_length":       s.opts.ContextLength,
		"tp_size":              1,
	})
}
