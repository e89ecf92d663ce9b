package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// ServerInfo is what a running server says about itself. A zero number means the server
// did not report it; callers show it as unknown (null), never as 0.
type ServerInfo struct {
	Engine    Name
	Version   string // SGLang/vLLM package version, llama.cpp build ("b6000-abc1234")
	ModelPath string
	// InfoPath is the endpoint the server described itself at: SGLang answers /server_info
	// from 2026-03 (PR #21463) and /get_server_info before, which is how the release layout
	// is told apart.
	InfoPath string
	// MaxContext is the most tokens (prompt plus output) one request may use: SGLang
	// context_length, vLLM max_model_len, llama.cpp the per-slot n_ctx of /props.
	MaxContext int
	// TokenPool is the KV cache's capacity in tokens across the server: SGLang
	// max_total_num_tokens, vLLM num_gpu_blocks × block_size. llama.cpp does not say (its
	// per-slot n_ctx times the slots is the pool only without --kv-unified).
	TokenPool int
	// MaxRunningRequests is how many requests the server runs at once: SGLang the sum of
	// effective_max_running_requests_per_dp, vLLM max_num_seqs, llama.cpp total_slots.
	MaxRunningRequests int
	// ReportsCachedTokens: the server said it runs with cached-token reporting on (SGLang's
	// server_args enable_cache_report, --enable-cache-report). False also when it did not say:
	// vLLM's /server_info does not show --enable-prompt-tokens-details.
	ReportsCachedTokens bool
}

// CachedTokensOmittedAtZero reports whether e leaves usage.prompt_tokens_details out of a
// response whose prompt found nothing in the cache, even when cached-token reporting is on,
// so that a missing field is a 0 once the engine is known to report: SGLang
// (python/sglang/srt/entrypoints/openai/usage_processor.py _details_if_cached(), 0.5.x and
// 2026: details only for a count above 0) and vLLM (entrypoints/openai/serving_chat.py and
// serving_completion.py, 0.11-era: "if self.enable_prompt_tokens_details and
// num_cached_tokens"; newer builds test "is not None" and send the 0). llama.cpp always
// reports (timings.cache_n, and prompt_tokens_details in current builds, README @00dc8057).
func CachedTokensOmittedAtZero(e Name) bool {
	return e == SGLang || e == VLLM
}

// SGLangCurrentLayout reports whether the server is an SGLang release that serves
// /server_info, /v1/loads and /flush_cache?timeout= (S3 in ENGINES.md).
func (i ServerInfo) SGLangCurrentLayout() bool {
	return i.Engine == SGLang && i.InfoPath == sglangInfoPath
}

const (
	// sglangInfoPath is canonical since SGLang PR #21463 (2026-03-26); sglangLegacyInfoPath is
	// the deprecated alias older releases only have (python/sglang/srt/entrypoints/
	// http_server.py @0025436e, 0.5.x: get_server_info merges server_args, scheduler_info,
	// internal_states and version).
	sglangInfoPath       = "/server_info"
	sglangLegacyInfoPath = "/get_server_info"
	// vLLM's /server_info (vllm/entrypoints/serve/instrumentator/server_info.py @09cb327f)
	// dumps the VllmConfig as JSON only when asked; SGLang ignores the unknown parameter.
	vllmInfoQuery = "?config_format=json"
)

// probe is one identifying request: the path and what its 200 answer says.
type probe struct {
	path  string
	parse func(body []byte) (ServerInfo, bool)
}

// probes run in order until one recognises its answer. /server_info comes first because both
// current SGLang and vLLM serve it (told apart by the body); llama.cpp's /props and vLLM's
// /version identify the rest.
var probes = []probe{
	{sglangInfoPath + vllmInfoQuery, parseServerInfo},
	{sglangLegacyInfoPath, parseSGLangInfo},
	{"/props", parseLlamaCppProps},
	{"/version", parseVLLMVersion},
}

// Identify finds out which engine serves the endpoint and what it says about itself; the
// answer is kept for the client's lifetime.
func (c *Client) Identify(ctx context.Context) (ServerInfo, error) {
	c.mu.Lock()
	if c.info != nil {
		i := *c.info
		c.mu.Unlock()
		return i, nil
	}
	c.mu.Unlock()
	for _, p := range probes {
		status, body, err := c.call(ctx, http.MethodGet, p.path, nil)
		if err != nil {
			return ServerInfo{}, fmt.Errorf("identify server: %w", err)
		}
		if status != http.StatusOK {
			continue
		}
		info, ok := p.parse(body)
		if !ok || (c.engine != "" && info.Engine != c.engine) {
			continue
		}
		if info.Engine == SGLang {
			info.InfoPath = trimQuery(p.path)
		}
		c.mu.Lock()
		c.info = &info
		c.engine = info.Engine
		c.mu.Unlock()
		return info, nil
	}
	if c.engine != "" {
		// Named by configuration but silent about itself: still usable for flushing.
		return ServerInfo{Engine: c.engine}, nil
	}
	return ServerInfo{}, fmt.Errorf("identify server at %s: %w", c.redacted, ErrUnknownEngine)
}

// Engine identifies the server (see Identify).
func (c *Client) Engine(ctx context.Context) (Name, error) {
	i, err := c.Identify(ctx)
	return i.Engine, err
}

// ServerInfo identifies the server and completes what its identifying answer left out: vLLM's
// version from /version, and the context length from /v1/models where the info path has none.
// Missing figures stay zero: an engine that does not report them still serves.
func (c *Client) ServerInfo(ctx context.Context) (ServerInfo, error) {
	info, err := c.Identify(ctx)
	if err != nil {
		return info, fmt.Errorf("server info: %w", err)
	}
	if info.Engine == VLLM && info.Version == "" {
		if status, body, err := c.call(ctx, http.MethodGet, "/version", nil); err == nil && status == http.StatusOK {
			if v, ok := parseVLLMVersion(body); ok {
				info.Version = v.Version
			}
		}
	}
	if info.Engine == VLLM && info.MaxRunningRequests == 0 {
		// /version identified it (older builds serve /server_info only in dev mode).
		if status, body, err := c.call(ctx, http.MethodGet, sglangInfoPath+vllmInfoQuery, nil); err == nil && status == http.StatusOK {
			if v, ok := parseServerInfo(body); ok && v.Engine == VLLM {
				v.Version = info.Version
				info = v
			}
		}
	}
	if info.MaxContext == 0 && info.Engine != LlamaCpp {
		// The OpenAI model lists of vLLM and SGLang carry max_model_len (SGLang: the model
		// config's context_len, which /server_info shows only when --context-length was set).
		// llama.cpp's list has only n_ctx_train, the training context, not the server's.
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

// parseServerInfo reads a /server_info answer: vLLM's has vllm_config, SGLang's is its
// get_server_info shape.
func parseServerInfo(body []byte) (ServerInfo, bool) {
	var v struct {
		Config json.RawMessage `json:"vllm_config"`
	}
	if json.Unmarshal(body, &v) == nil && len(v.Config) > 0 {
		return parseVLLMConfig(v.Config), true
	}
	return parseSGLangInfo(body)
}

// parseSGLangInfo reads SGLang's server info: server_args and scheduler_info flattened into
// one object, plus internal_states (one per data-parallel rank) and version
// (http_server.py @0025436e get_server_info; the same shape at /server_info in 2026).
func parseSGLangInfo(body []byte) (ServerInfo, bool) {
	var v struct {
		Version            string  `json:"version"`
		ModelPath          string  `json:"model_path"`
		ContextLength      *int    `json:"context_length"`       // the CLI value: null unless set
		MaxRunningRequests *int    `json:"max_running_requests"` // the CLI value: null unless set
		MaxTotalNumTokens  int     `json:"max_total_num_tokens"` // scheduler_info
		TPSize             *int    `json:"tp_size"`
		InternalStates     []state `json:"internal_states"`
		EnableCacheReport  bool    `json:"enable_cache_report"` // server_args, --enable-cache-report
	}
	if json.Unmarshal(body, &v) != nil || (v.InternalStates == nil && v.TPSize == nil) {
		return ServerInfo{}, false
	}
	info := ServerInfo{Engine: SGLang, Version: v.Version, ModelPath: v.ModelPath, TokenPool: v.MaxTotalNumTokens, ReportsCachedTokens: v.EnableCacheReport}
	if v.ContextLength != nil {
		info.MaxContext = *v.ContextLength
	}
	// The effective cap is per DP rank (scheduler.py sets it from the memory pool when the
	// flag is unset); the top-level value is only the flag.
	for _, s := range v.InternalStates {
		info.MaxRunningRequests += s.EffectiveMaxRunningRequestsPerDP
		if info.TokenPool == 0 {
			info.TokenPool = s.MaxTotalNumTokens
		}
	}
	if info.MaxRunningRequests == 0 && v.MaxRunningRequests != nil {
		info.MaxRunningRequests = *v.MaxRunningRequests
	}
	return info, true
}

type state struct {
	EffectiveMaxRunningRequestsPerDP int `json:"effective_max_running_requests_per_dp"`
	MaxTotalNumTokens                int `json:"max_total_num_tokens"`
}

// parseVLLMConfig reads the JSON VllmConfig dump of vLLM's /server_info?config_format=json.
func parseVLLMConfig(raw json.RawMessage) ServerInfo {
	var c struct {
		Model struct {
			Model       string `json:"model"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"model_config"`
		Scheduler struct {
			MaxNumSeqs int `json:"max_num_seqs"`
		} `json:"scheduler_config"`
		Cache struct {
			NumGPUBlocks *int `json:"num_gpu_blocks"` // set once the engine has profiled memory
			BlockSize    int  `json:"block_size"`
		} `json:"cache_config"`
	}
	info := ServerInfo{Engine: VLLM}
	// A text dump (older builds ignore config_format) still identifies vLLM.
	if json.Unmarshal(raw, &c) == nil {
		info.ModelPath, info.MaxContext, info.MaxRunningRequests = c.Model.Model, c.Model.MaxModelLen, c.Scheduler.MaxNumSeqs
		if c.Cache.NumGPUBlocks != nil {
			info.TokenPool = *c.Cache.NumGPUBlocks * c.Cache.BlockSize
		}
	}
	return info
}

// parseVLLMVersion reads vLLM's GET /version, {"version": "x.y.z"}.
func parseVLLMVersion(body []byte) (ServerInfo, bool) {
	var v struct {
		Version *string `json:"version"`
	}
	if json.Unmarshal(body, &v) != nil || v.Version == nil {
		return ServerInfo{}, false
	}
	return ServerInfo{Engine: VLLM, Version: *v.Version}, true
}

// parseLlamaCppProps reads llama-server's GET /props (tools/server/README.md @00dc8057):
// default_generation_settings.n_ctx is the context of one slot (--ctx-size divided among
// --parallel slots unless the KV cache is unified), total_slots is --parallel.
func parseLlamaCppProps(body []byte) (ServerInfo, bool) {
	var p struct {
		BuildInfo  string `json:"build_info"`
		ModelPath  string `json:"model_path"`
		TotalSlots *int   `json:"total_slots"`
		Settings   *struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if json.Unmarshal(body, &p) != nil || (p.TotalSlots == nil && p.Settings == nil) {
		return ServerInfo{}, false
	}
	info := ServerInfo{Engine: LlamaCpp, Version: p.BuildInfo, ModelPath: p.ModelPath}
	if p.TotalSlots != nil {
		info.MaxRunningRequests = *p.TotalSlots
	}
	if p.Settings != nil {
		info.MaxContext = p.Settings.NCtx
	}
	return info, true
}

func trimQuery(p string) string {
	for i := range len(p) {
		if p[i] == '?' {
			return p[:i]
		}
	}
	return p
}
