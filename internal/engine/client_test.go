package engine

import (
	"context"
	"encoding/json"
	"errors"
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

// engineServer imitates the identifying endpoints of one engine.
func engineServer(t *testing.T, engine Name, extra http.HandlerFunc) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case engine == SGLang && r.URL.Path == "/get_server_info":
			io.WriteString(w, `{"model_path":"/models/qwen","context_length":262144,"max_running_requests":48,"version":"0.4.9","internal_states":[{"max_total_num_tokens":1100000}]}`)
		case engine == LlamaCpp && r.URL.Path == "/props":
			io.WriteString(w, `{"default_generation_settings":{"n_ctx":8192},"total_slots":4,"model_path":"/m/tiny.gguf","build_info":"b5000-abc"}`)
		case engine == VLLM && r.URL.Path == "/version":
			io.WriteString(w, `{"version":"0.9.1"}`)
		case engine == VLLM && r.URL.Path == "/v1/models":
			io.WriteString(w, `{"data":[{"id":"qwen","max_model_len":32768}]}`)
		case extra != nil:
			extra(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
}

func TestClientServerInfo(t *testing.T) {
	tests := []struct {
		engine Name
		want   ServerInfo
	}{
		{SGLang, ServerInfo{Engine: "sglang", Version: "0.4.9", ModelPath: "/models/qwen", MaxContext: 262144, TokenPool: 1100000, Slots: 48}},
		{LlamaCpp, ServerInfo{Engine: "llamacpp", Version: "b5000-abc", ModelPath: "/m/tiny.gguf", MaxContext: 8192, Slots: 4}},
		{VLLM, ServerInfo{Engine: "vllm", Version: "0.9.1", MaxContext: 32768}},
	}
	for _, tc := range tests {
		t.Run(string(tc.engine), func(t *testing.T) {
			srv := engineServer(t, tc.engine, nil)
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
	tests := []struct {
		name    string
		engine  Name
		handler http.HandlerFunc
		want    int
		wantErr error
	}{
		{
			name: "llama.cpp tokens list", engine: LlamaCpp, want: 3,
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
			name: "vLLM count", engine: VLLM, want: 7,
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
			name: "SGLang without tokenize", engine: SGLang, wantErr: ErrNoTokenizer,
			handler: func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
		},
		{
			name: "unknown server", engine: "other", wantErr: ErrNoTokenizer,
			handler: func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := engineServer(t, tc.engine, func(w http.ResponseWriter, r *http.Request) {
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

func TestClientFlushCache(t *testing.T) {
	t.Run("sglang retries while 400", func(t *testing.T) {
		var flushes atomic.Int32
		srv := engineServer(t, SGLang, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/flush_cache" || r.Method != http.MethodPost {
				http.NotFound(w, r)
				return
			}
			if flushes.Add(1) <= 3 {
				http.Error(w, "Cache not flushed because there are pending requests.", http.StatusBadRequest)
				return
			}
			io.WriteString(w, "Cache flushed.")
		})
		defer srv.Close()
		res, err := newTestClient(t, srv.URL, nil).FlushCache(context.Background(), FlushAuto)
		if err != nil || res.Engine != SGLang || res.RequestFields != nil {
			t.Fatalf("res %+v err %v", res, err)
		}
		if flushes.Load() != 4 {
			t.Errorf("flush attempts = %d, want 4", flushes.Load())
		}
	})
	t.Run("sglang busy until ctx ends", func(t *testing.T) {
		srv := engineServer(t, SGLang, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "pending requests", http.StatusBadRequest)
		})
		defer srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := newTestClient(t, srv.URL, nil).FlushCache(ctx, FlushSGLang)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "still refused") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("vllm reset_prefix_cache", func(t *testing.T) {
		var resets atomic.Int32
		srv := engineServer(t, VLLM, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/reset_prefix_cache" && r.Method == http.MethodPost {
				resets.Add(1)
				return
			}
			http.NotFound(w, r)
		})
		defer srv.Close()
		res, err := newTestClient(t, srv.URL, nil).FlushCache(context.Background(), FlushAuto)
		if err != nil || res.Engine != VLLM || resets.Load() != 1 {
			t.Fatalf("res %+v err %v resets %d", res, err, resets.Load())
		}
	})
	t.Run("llamacpp per-request field", func(t *testing.T) {
		srv := engineServer(t, LlamaCpp, nil)
		defer srv.Close()
		res, err := newTestClient(t, srv.URL, nil).FlushCache(context.Background(), FlushAuto)
		if err != nil || res.Engine != LlamaCpp || res.RequestFields["cache_prompt"] != false {
			t.Fatalf("res %+v err %v", res, err)
		}
	})
	t.Run("none and bad mode", func(t *testing.T) {
		c := newTestClient(t, "http://127.0.0.1:1", nil)
		if res, err := c.FlushCache(context.Background(), FlushNone); err != nil || res.Engine != "" {
			t.Fatalf("none: %+v %v", res, err)
		}
		if _, err := c.FlushCache(context.Background(), "redis"); err == nil || !strings.Contains(err.Error(), `"redis"`) {
			t.Fatalf("bad mode: %v", err)
		}
	})
	t.Run("auto on unknown server", func(t *testing.T) {
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
