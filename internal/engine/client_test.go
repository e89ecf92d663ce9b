package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const testKey = "sk-test-secret-0123456789"

func newTestClient(t *testing.T, url string, mut func(*ClientConfig)) *Client {
	t.Helper()
	cfg := ClientConfig{BaseURL: url, Model: "qwen", APIKey: testKey, RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond, FlushPoll: time.Millisecond}
	if mut != nil {
		mut(&cfg)
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClientHealthRetriesThenSucceeds(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+testKey {
			t.Errorf("control call without the API key")
		}
		if calls.Add(1) <= 2 {
			http.Error(w, `{"error":"Loading model"}`, http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, `{"status":"ok"}`)
	}))
	defer srv.Close()
	if err := newTestClient(t, srv.URL, nil).Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 3 {
		t.Errorf("calls = %d, want 3 (two 503s then 200)", calls.Load())
	}
}

func TestClientHealthGivesUp(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Loading model", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	err := newTestClient(t, srv.URL, func(c *ClientConfig) { c.RetryMax = 2 }).Health(context.Background())
	if err == nil || !strings.Contains(err.Error(), "HTTP 503") || !strings.Contains(err.Error(), "Loading model") {
		t.Fatalf("err = %v", err)
	}
}

func TestClientAuthErrors(t *testing.T) {
	t.Parallel()
	for _, status := range []int{401, 403} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// A careless proxy echoing the header must not leak the key through our errors.
			http.Error(w, "bad auth: "+r.Header.Get("Authorization"), status)
		}))
		_, err := newTestClient(t, srv.URL, nil).Models(context.Background())
		srv.Close()
		if !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("%d: err = %v, want ErrUnauthorized", status, err)
		}
		msg := err.Error()
		for _, want := range []string{"api_key is missing or wrong", "/v1/models", "HTTP"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%d: %q lacks %q", status, msg, want)
			}
		}
		if strings.Contains(msg, testKey) {
			t.Errorf("error leaks the key: %q", msg)
		}
	}
}

func TestClientUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	err := newTestClient(t, url, func(c *ClientConfig) { c.RetryMax = 1 }).Health(context.Background())
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{url + "/health", "check the endpoint URL", "running"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

func TestClientVerifyModel(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"id":"llama","max_model_len":4096},{"id":"gemma"}]}`)
	}))
	defer srv.Close()
	err := newTestClient(t, srv.URL, nil).VerifyModel(context.Background())
	if !errors.Is(err, ErrModelNotFound) || !strings.Contains(err.Error(), `"gemma", "llama"`) || !strings.Contains(err.Error(), `not "qwen"`) {
		t.Fatalf("err = %v", err)
	}
	if err := newTestClient(t, srv.URL, func(c *ClientConfig) { c.Model = "gemma" }).VerifyModel(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Identifying answers, shaped after each engine's source (see info.go for the files).
const (
	// SGLang 0.5.x /get_server_info: server_args flattened (context_length and
	// max_running_requests null because the flags were not set), scheduler_info's
	// max_total_num_tokens, one internal state per DP rank.
	sglang05Info = `{"model_path":"/models/qwen","tp_size":4,"context_length":null,"max_running_requests":null,` +
		`"max_total_num_tokens":1100000,"max_req_input_len":262139,"version":"0.5.2",` +
		`"internal_states":[{"effective_max_running_requests_per_dp":48,"last_gen_throughput":0.0}]}`
	// SGLang 2026 /server_info: the same shape; two DP ranks here, plus kv_events.
	sglang26Info = `{"model_path":"/models/qwen","tp_size":4,"dp_size":2,"context_length":131072,"max_running_requests":null,"enable_cache_report":true,` +
		`"max_total_num_tokens":900000,"version":"0.5.10","kv_events":null,` +
		`"internal_states":[{"effective_max_running_requests_per_dp":24},{"effective_max_running_requests_per_dp":24}]}`
	llamaProps = `{"default_generation_settings":{"n_ctx":2048},"total_slots":4,"model_path":"/m/tiny.gguf","build_info":"b5000-abc"}`
	vllmConfig = `{"vllm_config":{"model_config":{"model":"Qwen/Qwen3-8B","max_model_len":32768},"scheduler_config":{"max_num_seqs":256},` +
		`"cache_config":{"block_size":16,"num_gpu_blocks":2000}},"vllm_env":{},"system_env":{}}`
)

// engineServer imitates the identifying endpoints of one engine release: "sglang-0.5",
// "sglang-2026", "llamacpp", "vllm" (with dev mode) or "vllm-nodev".
func engineServer(t *testing.T, release string, extra http.HandlerFunc) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case release == "sglang-0.5" && r.URL.Path == "/get_server_info":
			io.WriteString(w, sglang05Info)
		case release == "sglang-2026" && (r.URL.Path == "/server_info" || r.URL.Path == "/get_server_info"):
			io.WriteString(w, sglang26Info)
		case strings.HasPrefix(release, "sglang") && r.URL.Path == "/v1/models":
			io.WriteString(w, `{"data":[{"id":"qwen","max_model_len":262144}]}`)
		case release == "llamacpp" && r.URL.Path == "/props":
			io.WriteString(w, llamaProps)
		case release == "llamacpp" && r.URL.Path == "/v1/models":
			io.WriteString(w, `{"data":[{"id":"qwen","meta":{"n_ctx_train":131072}}]}`)
		case release == "vllm" && r.URL.Path == "/server_info" && r.URL.Query().Get("config_format") == "json":
			io.WriteString(w, vllmConfig)
		case strings.HasPrefix(release, "vllm") && r.URL.Path == "/version":
			io.WriteString(w, `{"version":"0.11.0"}`)
		case strings.HasPrefix(release, "vllm") && r.URL.Path == "/v1/models":
			io.WriteString(w, `{"data":[{"id":"qwen","max_model_len":16384}]}`)
		case extra != nil:
			extra(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
}

func TestClientServerInfo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		release string
		want    ServerInfo
	}{
		// Context from /v1/models (the flag was not set); slots the effective cap, not null.
		{"sglang-0.5", ServerInfo{Engine: SGLang, Version: "0.5.2", ModelPath: "/models/qwen", InfoPath: "/get_server_info", MaxContext: 262144, TokenPool: 1100000, MaxRunningRequests: 48}},
		// 24 per DP rank × 2 ranks.
		{"sglang-2026", ServerInfo{Engine: SGLang, Version: "0.5.10", ModelPath: "/models/qwen", InfoPath: "/server_info", MaxContext: 131072, TokenPool: 900000, MaxRunningRequests: 48, ReportsCachedTokens: true}},
		// n_ctx per slot is the per-request context; the pool is not reported (n_ctx_train is
		// the training context and must not be taken).
		{"llamacpp", ServerInfo{Engine: LlamaCpp, Version: "b5000-abc", ModelPath: "/m/tiny.gguf", MaxContext: 2048, MaxRunningRequests: 4}},
		// 2000 blocks × 16 tokens.
		{"vllm", ServerInfo{Engine: VLLM, Version: "0.11.0", ModelPath: "Qwen/Qwen3-8B", MaxContext: 32768, TokenPool: 32000, MaxRunningRequests: 256}},
		{"vllm-nodev", ServerInfo{Engine: VLLM, Version: "0.11.0", MaxContext: 16384}},
	}
	for _, tc := range tests {
		t.Run(tc.release, func(t *testing.T) {
			srv := engineServer(t, tc.release, nil)
			defer srv.Close()
			info, err := newTestClient(t, srv.URL, nil).ServerInfo(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if info != tc.want {
				t.Errorf("info = %+v, want %+v", info, tc.want)
			}
		})
	}
	srv := engineServer(t, "other", nil)
	defer srv.Close()
	if _, err := newTestClient(t, srv.URL, nil).ServerInfo(context.Background()); !errors.Is(err, ErrUnknownEngine) {
		t.Errorf("unknown server: err = %v", err)
	}
}

func TestClientCountTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		release string
		handler http.HandlerFunc
		want    int
		wantErr error
	}{
		{
			name: "llama.cpp tokens list", release: "llamacpp", want: 3,
			handler: func(w http.ResponseWriter, r *http.Request) {
				var b map[string]any
				_ = json.NewDecoder(r.Body).Decode(&b)
				if b["content"] != "a b c" || b["add_special"] != false {
					t.Errorf("llama.cpp tokenize body %v", b)
				}
				io.WriteString(w, `{"tokens":[11,12,13]}`)
			},
		},
		{
			name: "vLLM count", release: "vllm", want: 7,
			handler: func(w http.ResponseWriter, r *http.Request) {
				var b map[string]any
				_ = json.NewDecoder(r.Body).Decode(&b)
				if b["prompt"] != "a b c" || b["model"] != "qwen" || b["add_special_tokens"] != false {
					t.Errorf("vLLM tokenize body %v", b)
				}
				io.WriteString(w, `{"count":7,"max_model_len":32768,"tokens":[1,2,3,4,5,6,7]}`)
			},
		},
		{
			name: "SGLang 0.4 without tokenize", release: "sglang-0.5", wantErr: ErrNoTokenizer,
			handler: func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
		},
		{
			name: "unknown server", release: "other", wantErr: ErrNoTokenizer,
			handler: func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := engineServer(t, tc.release, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/tokenize" && r.Method == http.MethodPost {
					tc.handler(w, r)
					return
				}
				http.NotFound(w, r)
			})
			defer srv.Close()
			n, err := newTestClient(t, srv.URL, nil).CountTokens(context.Background(), "a b c")
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil || n != tc.want {
				t.Fatalf("n, err = %d, %v; want %d", n, err, tc.want)
			}
		})
	}
}

// onFlush serves h at /flush_cache only.
func onFlush(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/flush_cache" {
			h(w, r)
			return
		}
		http.NotFound(w, r)
	}
}

func TestClientFlushCache(t *testing.T) {
	t.Parallel()
	const admin = "sk-admin-0123456789"
	const flushedBody = "Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n"
	t.Run("sglang 0.5 retries while 400 with the misleading body", func(t *testing.T) {
		t.Parallel()
		var flushes atomic.Int32
		srv := engineServer(t, "sglang-0.5", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/flush_cache" || r.Method != http.MethodPost {
				http.NotFound(w, r)
				return
			}
			if r.URL.Query().Get("timeout") != "10" {
				t.Errorf("flush without ?timeout=10: %s", r.URL)
			}
			w.WriteHeader(map[bool]int{true: http.StatusBadRequest, false: http.StatusOK}[flushes.Add(1) <= 3])
			io.WriteString(w, flushedBody)
		})
		defer srv.Close()
		res, err := newTestClient(t, srv.URL, nil).FlushCache(context.Background(), FlushAuto)
		if err != nil || res.Engine != SGLang || res.RequestFields != nil || !res.Auto {
			t.Fatalf("res %+v err %v", res, err)
		}
		if flushes.Load() != 4 {
			t.Errorf("flush attempts = %d, want 4", flushes.Load())
		}
		if p := res.Policy(); !strings.Contains(p, "/flush_cache") || !strings.Contains(p, `"auto"`) || !strings.Contains(p, "sglang") {
			t.Errorf("policy %q does not say what auto picked", p)
		}
	})
	failures := []struct {
		name     string
		release  string
		mut      func(*ClientConfig)
		handler  http.HandlerFunc
		contains []string
	}{
		{"sglang refuses past the bound", "sglang-2026", nil, onFlush(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "Another flush_cache is already in progress.", http.StatusBadRequest)
		}), []string{"refused", "Another flush_cache is already in progress"}},
		{"sglang 200 that is not a flush", "sglang-2026", nil, onFlush(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"object":"error","message":"upstream"}`)
		}), []string{"without saying the cache was flushed"}},
		{"sglang admin key missing", "sglang-2026", nil, onFlush(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
		}), []string{"admin_api_key", "--admin-api-key"}},
		{"vllm without dev mode", "vllm-nodev", nil, nil, []string{"VLLM_SERVER_DEV_MODE=1", `llmserve_inference_server with engine = "vllm"`, `cache_flush = "none"`}},
	}
	for _, tc := range failures {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := engineServer(t, tc.release, tc.handler)
			defer srv.Close()
			c := newTestClient(t, srv.URL, func(c *ClientConfig) { c.IdleTimeout = 30 * time.Millisecond })
			_, err := c.FlushCache(context.Background(), FlushAuto)
			if err == nil {
				t.Fatal("flush succeeded")
			}
			if !errors.Is(err, ErrFlushFailed) && !errors.Is(err, ErrUnauthorized) {
				t.Errorf("err %v is neither ErrFlushFailed nor ErrUnauthorized", err)
			}
			for _, s := range tc.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
	// The context can end in the backoff wait or during the next POST; both must say what
	// the flush was waiting for, so each is forced here rather than left to timing: the
	// call case cancels from inside the second POST, the wait case backs off for a minute
	// so a deadline a second away can only land in the wait.
	for _, tc := range []struct {
		name  string
		block bool
	}{{"sglang busy until ctx ends in the wait", false}, {"sglang busy until ctx ends in the call", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			var flushes atomic.Int32
			srv := engineServer(t, "sglang-2026", onFlush(func(w http.ResponseWriter, r *http.Request) {
				if flushes.Add(1) > 1 && tc.block {
					cancel()
					<-r.Context().Done()
					return
				}
				http.Error(w, "requests are running", http.StatusBadRequest)
			}))
			defer srv.Close()
			c := newTestClient(t, srv.URL, func(c *ClientConfig) {
				c.IdleTimeout = time.Hour
				if !tc.block {
					c.FlushPoll = time.Minute
				}
			})
			_, err := c.FlushCache(ctx, FlushSGLang)
			if err == nil || !errors.Is(err, ctx.Err()) {
				t.Fatalf("err %v does not wrap the context's end (%v)", err, ctx.Err())
			}
			for _, s := range []string{"still refused after 1 attempts", "requests are running"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
	t.Run("sglang sends the admin key to flush_cache only", func(t *testing.T) {
		t.Parallel()
		srv := engineServer(t, "sglang-2026", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/flush_cache" && r.Header.Get("Authorization") == "Bearer "+admin {
				io.WriteString(w, flushedBody)
				return
			}
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
		})
		defer srv.Close()
		c := newTestClient(t, srv.URL, func(c *ClientConfig) { c.AdminAPIKey = admin })
		if _, err := c.FlushCache(context.Background(), FlushSGLang); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("vllm resets only once idle", func(t *testing.T) {
		t.Parallel()
		var polls, resetAfter atomic.Int32
		srv := engineServer(t, "vllm", func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path == "/metrics":
				running := 0
				if polls.Add(1) <= 2 {
					running = 1
				}
				fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"qwen\",engine=\"0\"} %d.0\n"+
					"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"qwen\",engine=\"0\"} 0.0\n", running)
			case r.URL.Path == "/reset_prefix_cache" && r.Method == http.MethodPost && r.URL.Query().Get("reset_running_requests") == "true":
				resetAfter.Store(polls.Load())
			default:
				http.NotFound(w, r)
			}
		})
		defer srv.Close()
		res, err := newTestClient(t, srv.URL, nil).FlushCache(context.Background(), FlushAuto)
		if err != nil || res.Engine != VLLM {
			t.Fatalf("res %+v err %v", res, err)
		}
		if resetAfter.Load() != 3 {
			t.Errorf("reset after %d metric polls, want 3 (two busy, one idle)", resetAfter.Load())
		}
	})
	t.Run("llamacpp per-request field", func(t *testing.T) {
		t.Parallel()
		srv := engineServer(t, "llamacpp", nil)
		defer srv.Close()
		res, err := newTestClient(t, srv.URL, nil).FlushCache(context.Background(), FlushAuto)
		if err != nil || res.Engine != LlamaCpp || res.RequestFields["cache_prompt"] != false {
			t.Fatalf("res %+v err %v", res, err)
		}
	})
	t.Run("none and bad mode", func(t *testing.T) {
		t.Parallel()
		c := newTestClient(t, "http://127.0.0.1:1", nil)
		if res, err := c.FlushCache(context.Background(), FlushNone); err != nil || res.Engine != "" {
			t.Fatalf("none: %+v %v", res, err)
		}
		if _, err := c.FlushCache(context.Background(), "redis"); err == nil || !strings.Contains(err.Error(), `"redis"`) {
			t.Fatalf("bad mode: %v", err)
		}
	})
	t.Run("auto on unknown server", func(t *testing.T) {
		t.Parallel()
		srv := engineServer(t, "other", nil)
		defer srv.Close()
		_, err := newTestClient(t, srv.URL, nil).FlushCache(context.Background(), FlushAuto)
		if !errors.Is(err, ErrUnknownEngine) || !strings.Contains(err.Error(), `"none"`) {
			t.Fatalf("err = %v", err)
		}
	})
}

// A proxy's HTML error page becomes one line naming the call and the page's title.
func TestClientErrorBodyIsOneLine(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, "<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
	}))
	defer srv.Close()
	err := newTestClient(t, srv.URL, nil).VerifyModel(context.Background())
	want := "GET " + srv.URL + "/v1/models: HTTP 404: 404 Not Found"
	if err == nil || !strings.HasSuffix(err.Error(), want) || strings.ContainsAny(err.Error(), "\r\n<") {
		t.Fatalf("err = %q, want one line ending in %q", err, want)
	}
}

// Calibration survives one 503: tokenize and the usage probe are control calls, retried.
func TestClientCalibrationRetriesTransientFailures(t *testing.T) {
	t.Parallel()
	var tokenizeCalls, probeCalls atomic.Int32
	srv := engineServer(t, "vllm", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/tokenize":
			if tokenizeCalls.Add(1) == 1 {
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return
			}
			io.WriteString(w, `{"count":3,"tokens":[1,2,3]}`)
		case "/v1/chat/completions":
			if probeCalls.Add(1) == 1 {
				http.Error(w, "rate limited", http.StatusTooManyRequests)
				return
			}
			var b map[string]any
			_ = json.NewDecoder(r.Body).Decode(&b)
			if b["stream"] != false || b["max_tokens"] != float64(1) || b["cache_prompt"] != false {
				t.Errorf("probe body %v", b)
			}
			io.WriteString(w, `{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":14,"completion_tokens":1}}`)
		default:
			http.NotFound(w, r)
		}
	})
	defer srv.Close()
	c := newTestClient(t, srv.URL, nil)
	if n, err := c.CountTokens(context.Background(), "a b c"); err != nil || n != 3 {
		t.Fatalf("CountTokens after a 503 = %d, %v", n, err)
	}
	if n, err := c.PromptTokens(context.Background(), true, "a b c", map[string]any{"cache_prompt": false}); err != nil || n != 14 {
		t.Fatalf("PromptTokens after a 429 = %d, %v", n, err)
	}
	if tokenizeCalls.Load() != 2 || probeCalls.Load() != 2 {
		t.Errorf("calls: tokenize %d, probe %d; want one retry each", tokenizeCalls.Load(), probeCalls.Load())
	}
}
