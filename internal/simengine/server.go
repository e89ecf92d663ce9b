package simengine

import (
	"encoding/json"
	"fmt"
	"net/http"
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
	// CachedPrefill makes the prefix cache do what a real one does for conversations: a
	// request's prefill costs only the prompt tokens the cache does not hold, and a chat
	// answer enters the cache after its prompt (as the next turn sends it back), so a
	// conversation's later turn prefills only its new message. Needs a Protocol (the cache
	// is modelled only there). Off: every prompt token is prefilled, as before.
	CachedPrefill bool
	// LazyPipelines is what the first prefill of each new shape costs on top of its work, as
	// on an engine that compiles its kernels on first use: llama.cpp's Vulkan backend builds a
	// matmul pipeline per alignment class of the token count the first time it meets one
	// (1.9 to 3.7 s each for a 515-518-token prompt on an H200, driver 580.159.04, where a
	// compiled one takes 5 ms). A shape here is the batch's prompt tokens modulo 4 with its
	// size rounded to a power of two; a flush does not forget them. 0: every shape is ready.
	LazyPipelines time.Duration
	// FlushFault makes the cache flush refuse or ignore every call.
	FlushFault FlushFault
	// OutputFault makes every generated text broken (see OutputFault); empty: healthy.
	OutputFault OutputFault
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
	compiled     map[[2]int]bool // prefill shapes met so far (Options.LazyPipelines)
	ttft         histogram
	e2e          histogram
	queue        histogram
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
	switch opts.OutputFault {
	case "", OutputExclamation, OutputEmpty, OutputSame, OutputUnknownToken:
	default:
		return nil, fmt.Errorf("simengine: unknown output fault %q (exclamation, empty, same or unk)", opts.OutputFault)
	}
	if opts.Version == "" {
		opts.Version = "simengine-1"
	}
	s := &Server{opts: opts, mux: http.NewServeMux()}
	s.ready.Store(true)
	switch opts.Protocol {
	case "":
	case SGLang04, SGLang04Early, SGLang, VLLM, LlamaCpp:
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
