package simengine

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Protocol is the HTTP face of one engine release, written from that release's source so the
// provider's engine client can be tested against each without a GPU. Each behaviour below
// cites the engine version and file it follows; ENGINES.md in the team's notes lists the same
// sources.
type Protocol string

// The protocol doubles. The zero value is the historical generic face (SGLang-like, used by
// tests that predate the doubles).
const (
	// SGLang04 is the 0.4.x layout (sglang python/sglang/srt/entrypoints/http_server.py
	// @9c0549b): /get_server_info only, /health is "HTTP up", no tokenize endpoint, no load
	// endpoint, /flush_cache answers the same "Cache flushed" text with 200 and with the 400
	// that means nothing was flushed, internal_states without the effective running cap.
	SGLang04 Protocol = "sglang-0.4"
	// SGLang04Early is an early 0.4.x release (http_server.py @9c0549b layout, before the flush
	// was awaited): @app.post("/flush_cache") calls tokenizer_manager.flush_cache() without
	// awaiting it and always answers 200 "Cache flushed"; the scheduler skips the flush while
	// requests run, so a flush while busy silently does nothing. POST only.
	SGLang04Early Protocol = "sglang-0.4-early"
	// SGLang is the 2026 layout (http_server.py after PRs #21413, #21463, #21490):
	// /server_info canonical with /get_server_info a deprecated alias, /v1/loads (the
	// entrypoints/v1_loads.py wrapper) with /get_load the deprecated list-shaped alias,
	// /tokenize and /v1/tokenize, /flush_cache?timeout= waiting for idle, a 400
	// that carries the failure message, --admin-api-key guarding /flush_cache.
	SGLang Protocol = "sglang"
	// VLLM is vLLM 0.11-era (vllm/entrypoints/openai/api_server.py @0001948b,
	// serve/cache/api_router.py, serve/instrumentator/server_info.py @09cb327f, v1/metrics/
	// loggers.py): /version, /server_info and /reset_prefix_cache only in dev mode, a reset
	// that answers 200 even when blocks in use kept it from resetting.
	VLLM Protocol = "vllm"
	// LlamaCpp is llama-server (tools/server/README.md @00dc8057, server-context.cpp): /props
	// with the per-slot n_ctx, /slots, /metrics with --metrics, /tokenize {"content"}, slot
	// erase answering 501 without --slot-save-path, cache_prompt per request, timings.cache_n.
	// Checked against a real llama-server (Debian llama.cpp, build b11669): /props n_ctx 2048
	// per slot for --ctx-size 4096 --parallel 2; usage.prompt_tokens_details.cached_tokens and
	// timings.cache_n both reported, 0 with cache_prompt false; /metrics has
	// prompt_tokens_cached_total.
	LlamaCpp Protocol = "llamacpp"
)

// FlushFault makes a double's cache flush misbehave, so tests can show the provider notices.
type FlushFault string

// Flush faults.
const (
	// FlushRefused: the flush always answers as a busy server does (SGLang 400).
	FlushRefused FlushFault = "refuse"
	// FlushIgnored: the flush answers success and empties nothing.
	FlushIgnored FlushFault = "ignore"
)

// chatTemplatePrefix is how many leading tokens every chat prompt shares through the chat
// template (a Qwen template's "<|im_start|>user\n"); a radix cache matches them on every
// request, which is why the proof of a cold cache allows that many cached tokens.
const chatTemplatePrefix = 3

// vllmBlockSize is vLLM's default KV block size: its prefix cache hits whole blocks only.
const vllmBlockSize = 16

// prefixCache remembers the token sequences of served prompts; a new prompt's cached tokens
// are its longest common prefix with any of them.
type prefixCache struct {
	seqs [][]int
}

const prefixCacheCap = 4096

func (c *prefixCache) lookup(seq []int) int {
	best := 0
	for _, s := range c.seqs {
		n := 0
		for n < len(s) && n < len(seq) && s[n] == seq[n] {
			n++
		}
		best = max(best, n)
	}
	return best
}

func (c *prefixCache) insert(seq []int) {
	if len(c.seqs) >= prefixCacheCap {
		c.seqs = c.seqs[1:]
	}
	c.seqs = append(c.seqs, seq)
}

func (c *prefixCache) clear() { c.seqs = nil }

// promptSequence is the token sequence the prefix cache sees: the chat template's shared
// prefix (as negative ids, which no text token has), then the prompt's own tokens.
func promptSequence(prompt string, chat bool) []int {
	var seq []int
	if chat {
		for i := range chatTemplatePrefix {
			seq = append(seq, -1-i)
		}
	}
	return append(seq, Tokenize(prompt)...)
}

// cachedTokens is what the engine reuses for seq under this protocol; callers hold s.mu.
func (s *Server) cachedTokens(seq []int, cachePrompt bool) int {
	n := s.cache.lookup(seq)
	switch s.opts.Protocol {
	case VLLM:
		n = n / vllmBlockSize * vllmBlockSize
	case LlamaCpp:
		if !cachePrompt {
			n = 0
		}
	}
	if n >= len(seq) {
		n = len(seq) - 1 // every engine recomputes at least the last prompt token
	}
	return max(n, 0)
}

// reportsCachedTokens says whether usage carries prompt_tokens_details.cached_tokens: SGLang
// only with --enable-cache-report (server_args.py), vLLM only with
// --enable-prompt-tokens-details (serving_completion.py), llama.cpp always.
func (s *Server) reportsCachedTokens() bool {
	switch s.opts.Protocol {
	case SGLang04, SGLang04Early, SGLang, VLLM:
		return !s.opts.NoCacheReport
	case LlamaCpp:
		return true
	}
	return false
}

// histogram is a Prometheus histogram in seconds with fixed bounds.
type histogram struct {
	counts []float64 // per bound, not cumulative; the last is +Inf
	sum    float64
	n      float64
}

var histogramBounds = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

func (h *histogram) observe(seconds float64) {
	if h.counts == nil {
		h.counts = make([]float64, len(histogramBounds)+1)
	}
	i := sort.SearchFloat64s(histogramBounds, seconds)
	h.counts[i]++
	h.sum += seconds
	h.n++
}

// snapshot is a copy of h that later observations do not change: the struct copy alone
// would share its counts with h, and a scrape would read them while a request writes them.
func (h histogram) snapshot() histogram {
	h.counts = slices.Clone(h.counts)
	return h
}

func (h *histogram) write(b *strings.Builder, name, labels string) {
	fmt.Fprintf(b, "# TYPE %s histogram\n", name)
	cum := 0.0
	for i, ub := range histogramBounds {
		if h.counts != nil {
			cum += h.counts[i]
		}
		fmt.Fprintf(b, "%s_bucket{%sle=\"%g\"} %g\n", name, labels, ub, cum)
	}
	fmt.Fprintf(b, "%s_bucket{%sle=\"+Inf\"} %g\n%s_sum{%s} %g\n%s_count{%s} %g\n",
		name, labels, h.n, name, strings.TrimSuffix(labels, ","), h.sum, name, strings.TrimSuffix(labels, ","), h.n)
}

// registerProtocol adds the routes of the configured engine release.
func (s *Server) registerProtocol() {
	m := s.mux
	gen := func(chat bool) http.HandlerFunc { return s.authed(s.ready503(s.handleGenerate(chat))) }
	m.HandleFunc("POST /v1/chat/completions", gen(true))
	m.HandleFunc("POST /v1/completions", gen(false))
	m.HandleFunc("GET /v1/models", s.authed(s.ready503(s.handleModels)))
	switch s.opts.Protocol {
	case SGLang04, SGLang04Early:
		// 0.4.x: /health answers as soon as HTTP is up.
		m.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
		m.HandleFunc("GET /health_generate", s.ready503(s.handleHealthGenerate))
		m.HandleFunc("GET /get_server_info", s.authed(s.ready503(s.handleSGLangInfo)))
		if s.opts.Protocol == SGLang04Early {
			m.HandleFunc("POST /flush_cache", s.authed(s.handleSGLangEarlyFlush))
		} else {
			m.HandleFunc("/flush_cache", s.authed(s.handleSGLangFlush))
		}
		m.HandleFunc("GET /metrics", s.handleMetrics)
	case SGLang:
		m.HandleFunc("GET /health", s.ready503(s.handleHealthGenerate))
		m.HandleFunc("GET /health_generate", s.ready503(s.handleHealthGenerate))
		m.HandleFunc("GET /server_info", s.authed(s.ready503(s.handleSGLangInfo)))
		m.HandleFunc("GET /get_server_info", s.authed(s.ready503(s.deprecated(s.handleSGLangInfo))))
		m.HandleFunc("GET /v1/loads", s.authed(s.handleSGLangLoads))
		m.HandleFunc("GET /get_load", s.authed(s.deprecated(s.handleSGLangLegacyLoad)))
		m.HandleFunc("POST /tokenize", s.authed(s.ready503(s.handleSGLangTokenize)))
		m.HandleFunc("POST /v1/tokenize", s.authed(s.ready503(s.handleSGLangTokenize)))
		m.HandleFunc("/flush_cache", s.adminAuthed(s.handleSGLangFlush))
		m.HandleFunc("GET /metrics", s.handleMetrics)
	case VLLM:
		// The API key middleware guards /v1/* only (api_server.py).
		m.HandleFunc("GET /health", s.ready503(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
		m.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, map[string]any{"version": s.opts.Version}) })
		m.HandleFunc("POST /tokenize", s.ready503(s.handleTokenize))
		m.HandleFunc("GET /metrics", s.handleMetrics)
		if s.opts.DevMode {
			m.HandleFunc("GET /server_info", s.handleVLLMInfo)
			m.HandleFunc("POST /reset_prefix_cache", s.handleVLLMReset)
		}
	case LlamaCpp:
		// /health is public even with an API key (README @00dc8057).
		m.HandleFunc("GET /health", s.ready503(func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, map[string]any{"status": "ok"}) }))
		m.HandleFunc("GET /props", s.authed(s.ready503(s.handleProps)))
		m.HandleFunc("GET /slots", s.authed(s.ready503(s.handleSlots)))
		m.HandleFunc("POST /slots/{id}", s.authed(func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, http.StatusNotImplemented, "This server does not support slots action. Start it with `--slot-save-path`")
		}))
		m.HandleFunc("POST /tokenize", s.authed(s.ready503(s.handleTokenize)))
		m.HandleFunc("GET /metrics", s.authed(func(w http.ResponseWriter, r *http.Request) {
			if s.opts.NoMetrics {
				writeError(w, http.StatusNotImplemented, "This server does not support metrics endpoint. Start it with `--metrics`")
				return
			}
			s.handleMetrics(w, r)
		}))
	}
}

// deprecated counts calls to an alias the engine logs a warning for on every call.
func (s *Server) deprecated(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.stats.DeprecatedCalls++
		s.mu.Unlock()
		h(w, r)
	}
}

// adminAuthed guards an admin endpoint the way SGLang's @auth_level(ADMIN_OPTIONAL) does: with
// --admin-api-key set only that key passes; without it the ordinary key rules apply.
func (s *Server) adminAuthed(h http.HandlerFunc) http.HandlerFunc {
	if s.opts.AdminAPIKey == "" {
		return s.authed(h)
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+s.opts.AdminAPIKey {
			writeError(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		h(w, r)
	}
}

func (s *Server) handleSGLangInfo(w http.ResponseWriter, _ *http.Request) {
	state := map[string]any{"last_gen_throughput": 0.0}
	if s.opts.Protocol == SGLang {
		state["effective_max_running_requests_per_dp"] = s.opts.Model.Slots
	}
	writeJSON(w, map[string]any{
		// server_args, flattened; flags left unset are null.
		"model_path": s.opts.ModelName, "served_model_name": s.opts.ModelName, "tp_size": 1, "dp_size": 1,
		"context_length": nil, "max_running_requests": nil, "enable_metrics": !s.opts.NoMetrics,
		"enable_cache_report": !s.opts.NoCacheReport,
		// scheduler_info
		"max_total_num_tokens": s.opts.MaxTotalTokens, "max_req_input_len": s.opts.ContextLength - 5,
		"internal_states": []any{state},
		"version":         s.opts.Version,
	})
}

// handleSGLangLoads is /v1/loads (entrypoints/v1_loads.py get_loads(), 2026): a wrapper with
// one LoadSnapshot.to_dict() per DP rank, running and waiting counted apart; no num_reqs.
func (s *Server) handleSGLangLoads(w http.ResponseWriter, _ *http.Request) {
	running, waiting := s.load()
	writeJSON(w, map[string]any{
		"timestamp": float64(time.Now().UnixNano()) / 1e9, "version": s.opts.Version,
		"accelerator": "cpu", "num_accelerators": 1,
		"loads": []any{map[string]any{"dp_rank": 0, "num_running_reqs": running, "num_waiting_reqs": waiting,
			"num_used_tokens": 0, "max_total_num_tokens": s.opts.MaxTotalTokens}},
	})
}

// handleSGLangLegacyLoad is /get_load: 0.5.x's list (tokenizer_manager get_load) and the 2026
// deprecated shim, which maps num_reqs = running + waiting.
func (s *Server) handleSGLangLegacyLoad(w http.ResponseWriter, _ *http.Request) {
	running, waiting := s.load()
	writeJSON(w, []any{map[string]any{"dp_rank": 0, "num_reqs": running + waiting, "num_waiting_reqs": waiting,
		"num_tokens": 0, "num_pending_tokens": 0, "ts_tic": time.Now().Unix()}})
}

// load is how many requests the scheduler runs (admitted, prefilling or decoding) and how
// many wait for admission.
func (s *Server) load() (running, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.running), len(s.waiting)
}

// handleSGLangTokenize follows serving_tokenize.py @0351c1fa: JSON only (validate_json_request
// answers 400 otherwise), "prompt" a string, plain tokenizer.encode without a chat template.
func (s *Server) handleSGLangTokenize(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		writeError(w, http.StatusBadRequest, "Unsupported Media Type: Only 'application/json' is allowed")
		return
	}
	s.handleTokenize(w, r)
}

// sglangFlushText is what 0.4/0.5 answer to every flush, done or not (http_server.py
// @0025436e): only the status tells.
const sglangFlushText = "Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n"

func (s *Server) handleSGLangFlush(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		writeError(w, http.StatusMethodNotAllowed, "Method Not Allowed")
		return
	}
	if s.opts.Protocol == SGLang {
		// PR #21413: ?timeout= defers the flush until the scheduler is idle, or fails at the
		// deadline. The 0.4 layout ignores the parameter.
		if t, err := strconv.ParseFloat(r.URL.Query().Get("timeout"), 64); err == nil && t > 0 {
			deadline := time.Now().Add(time.Duration(t * float64(time.Second)))
			for s.busy() && time.Now().Before(deadline) && r.Context().Err() == nil {
				time.Sleep(2 * time.Millisecond)
			}
		}
	}
	s.mu.Lock()
	busy := s.stats.InFlight > 0 || s.opts.FlushFault == FlushRefused
	switch {
	case busy:
		s.stats.FlushesRejected++
	case s.opts.FlushFault == FlushIgnored:
		s.stats.FlushesIgnored++
	default:
		s.stats.Flushes++
		s.cache.clear()
	}
	s.mu.Unlock()
	if !busy {
		_, _ = fmt.Fprint(w, sglangFlushText)
		return
	}
	w.WriteHeader(http.StatusBadRequest)
	if s.opts.Protocol == SGLang04 {
		_, _ = fmt.Fprint(w, sglangFlushText)
		return
	}
	// PR #21490: the 400 carries the scheduler's failure message.
	_, _ = fmt.Fprint(w, "Cache not flushed: there are running or waiting requests.\n")
}

// handleSGLangEarlyFlush follows early 0.4.x: the handler does not await the scheduler, so it
// answers 200 with the usual text whatever happens; a busy scheduler flushes nothing.
func (s *Server) handleSGLangEarlyFlush(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	if s.stats.InFlight > 0 || s.opts.FlushFault != "" {
		s.stats.FlushesIgnored++
	} else {
		s.stats.Flushes++
		s.cache.clear()
	}
	s.mu.Unlock()
	_, _ = fmt.Fprint(w, sglangFlushText)
}

func (s *Server) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats.InFlight > 0
}

// handleVLLMInfo is /server_info: the VllmConfig as JSON with ?config_format=json, as its str()
// otherwise.
func (s *Server) handleVLLMInfo(w http.ResponseWriter, r *http.Request) {
	var cfg any = fmt.Sprintf("model=%s, max_seq_len=%d", s.opts.ModelName, s.opts.ContextLength)
	if r.URL.Query().Get("config_format") == "json" {
		cfg = map[string]any{
			"model_config":     map[string]any{"model": s.opts.ModelName, "max_model_len": s.opts.ContextLength},
			"scheduler_config": map[string]any{"max_num_seqs": s.opts.Model.Slots},
			"cache_config":     map[string]any{"block_size": vllmBlockSize, "num_gpu_blocks": s.opts.MaxTotalTokens / vllmBlockSize},
		}
	}
	writeJSON(w, map[string]any{"vllm_config": cfg, "vllm_env": map[string]any{"VLLM_SERVER_DEV_MODE": "1"}, "system_env": map[string]any{}})
}

// handleVLLMReset is /reset_prefix_cache: the scheduler refuses while blocks are in use but the
// endpoint answers 200 regardless ("we currently do not check if the prefix cache is
// successfully reset", PR #12284); reset_running_requests=true (PR #28827) preempts the
// running requests so the reset happens.
func (s *Server) handleVLLMReset(w http.ResponseWriter, r *http.Request) {
	force := r.URL.Query().Get("reset_running_requests") == "true"
	s.mu.Lock()
	switch {
	case s.opts.FlushFault == FlushIgnored || s.opts.FlushFault == FlushRefused || (s.stats.InFlight > 0 && !force):
		s.stats.FlushesIgnored++
	default:
		s.stats.Flushes++
		s.cache.clear()
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (s *Server) handleProps(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{
		// n_ctx of a slot: --ctx-size divided among --parallel slots.
		"default_generation_settings": map[string]any{"n_ctx": s.opts.ContextLength, "params": map[string]any{"n_predict": -1}},
		"total_slots":                 s.opts.Model.Slots,
		"model_path":                  "/models/" + s.opts.ModelName + ".gguf",
		"chat_template":               "{{ messages }}",
		"build_info":                  s.opts.Version,
		"is_sleeping":                 false,
	})
}

func (s *Server) handleSlots(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	busy := len(s.running) + len(s.waiting)
	s.mu.Unlock()
	slots := make([]any, s.opts.Model.Slots)
	for i := range slots {
		slots[i] = map[string]any{"id": i, "n_ctx": s.opts.ContextLength, "is_processing": i < busy}
	}
	writeJSON(w, slots)
}

// seriesNames are one engine's Prometheus names for the quantities SGLang and vLLM both
// expose; labels is its label set, with %q for the model name.
type seriesNames struct {
	labels, running, waiting, usage, prompt, cached, ttft, e2e, queue string
}

var sglangSeries = seriesNames{
	labels:  "model_name=%q,",
	running: "sglang:num_running_reqs", waiting: "sglang:num_queue_reqs", usage: "sglang:token_usage",
	prompt: "sglang:prompt_tokens", cached: "sglang:cached_tokens",
	ttft: "sglang:time_to_first_token_seconds", e2e: "sglang:e2e_request_latency_seconds", queue: "sglang:queue_time_seconds",
}

var metricNames = map[Protocol]seriesNames{
	SGLang04:      sglangSeries,
	SGLang04Early: sglangSeries,
	SGLang:        sglangSeries,
	VLLM: {
		labels:  `engine="0",model_name=%q,`,
		running: "vllm:num_requests_running", waiting: "vllm:num_requests_waiting", usage: "vllm:kv_cache_usage_perc",
		prompt: "vllm:prefix_cache_queries", cached: "vllm:prefix_cache_hits",
		ttft: "vllm:time_to_first_token_seconds", e2e: "vllm:e2e_request_latency_seconds", queue: "vllm:request_queue_time_seconds",
	},
}

// handleMetrics writes the engine's Prometheus series (names from SGLang metrics/collector.py
// @00ae9c15, vLLM v1/metrics/loggers.py, llama.cpp README @00dc8057). SGLang serves them only
// with --enable-metrics: without it the route answers 404 as an unknown path.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if s.opts.NoMetrics && s.opts.Protocol != LlamaCpp {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	running, waiting := float64(len(s.running)), float64(len(s.waiting))
	used := 0
	for _, j := range s.running {
		used += j.prompt + j.produced
	}
	usage := float64(used) / float64(s.opts.MaxTotalTokens)
	ttft, e2e, queue := s.ttft.snapshot(), s.e2e.snapshot(), s.queue.snapshot()
	prompt, cached := s.stats.PromptTokens, s.stats.CachedTokens
	s.mu.Unlock()
	var b strings.Builder
	gauge := func(name, labels string, v float64) {
		fmt.Fprintf(&b, "# TYPE %s gauge\n%s{%s} %g\n", name, name, strings.TrimSuffix(labels, ","), v)
	}
	counter := func(name, labels string, v float64) {
		fmt.Fprintf(&b, "# TYPE %s counter\n%s_total{%s} %g\n", name, name, strings.TrimSuffix(labels, ","), v)
	}
	switch s.opts.Protocol {
	case SGLang04, SGLang04Early, SGLang, VLLM:
		n := metricNames[s.opts.Protocol]
		l := fmt.Sprintf(n.labels, s.opts.ModelName)
		gauge(n.running, l, running)
		gauge(n.waiting, l, waiting)
		gauge(n.usage, l, usage)
		counter(n.prompt, l, float64(prompt))
		counter(n.cached, l, float64(cached))
		ttft.write(&b, n.ttft, l)
		e2e.write(&b, n.e2e, l)
		queue.write(&b, n.queue, l)
	case LlamaCpp:
		fmt.Fprintf(&b, "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing %g\n", running)
		fmt.Fprintf(&b, "# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred %g\n", waiting)
		fmt.Fprintf(&b, "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total %d\n", prompt)
		fmt.Fprintf(&b, "# TYPE llamacpp:prompt_tokens_cached_total counter\nllamacpp:prompt_tokens_cached_total %d\n", cached)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = fmt.Fprint(w, b.String())
}

// usageFor is the usage object of a finished request under this protocol.
func (s *Server) usageFor(promptTokens, generate, cached int) map[string]any {
	u := map[string]any{"prompt_tokens": promptTokens, "completion_tokens": generate, "total_tokens": promptTokens + generate}
	switch {
	case !s.reportsCachedTokens() || (cached == 0 && s.opts.Protocol != LlamaCpp):
		// SGLang and vLLM leave the details out when nothing was cached, even with the flag:
		// SGLang openai/usage_processor.py _details_if_cached() returns them only for a count
		// above 0; vLLM serving_chat.py / serving_completion.py fill them only "if
		// self.enable_prompt_tokens_details and num_cached_tokens". vLLM's usage object
		// carries the field as null.
		if s.opts.Protocol == VLLM {
			u["prompt_tokens_details"] = nil
		}
	default:
		u["prompt_tokens_details"] = map[string]any{"cached_tokens": cached}
	}
	return u
}

// observe records a finished request's server-side latencies; callers hold s.mu.
func (s *Server) observe(j *job) {
	if j.submitted.IsZero() {
		return
	}
	if !j.admitted.IsZero() {
		s.queue.observe(j.admitted.Sub(j.submitted).Seconds())
	}
	if !j.first.IsZero() {
		s.ttft.observe(j.first.Sub(j.submitted).Seconds())
	}
	s.e2e.observe(time.Since(j.submitted).Seconds())
}

// decodeCachePrompt reads llama.cpp's per-request cache_prompt (default true).
func decodeCachePrompt(raw json.RawMessage) bool {
	var v bool
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return true
	}
	return v
}
