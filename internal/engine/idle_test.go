package engine

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestWaitIdle(t *testing.T) {
	cases := []struct {
		name       string
		engine     Name
		path       string
		busy, idle string
	}{
		// llama-server --metrics (tools/server/README.md @00dc8057): gauges without labels.
		{"llama.cpp metrics", LlamaCpp, "/metrics",
			"# HELP llamacpp:requests_processing Number of requests processing.\n# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 1\n" +
				"# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred 2\n",
			"# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 0\n# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred 0\n"},
		// Without --metrics the server answers 501 there; /slots still tells.
		{"llama.cpp slots without metrics", LlamaCpp, "/slots",
			`[{"id":0,"is_processing":true},{"id":1,"is_processing":false}]`,
			`[{"id":0,"is_processing":false},{"id":1,"is_processing":false}]`},
		{"vLLM metrics", VLLM, "/metrics",
			"# HELP x\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 2.0\nvllm:num_requests_waiting{model_name=\"m\"} 0.0\n",
			"vllm:num_requests_running{model_name=\"m\"} 0.0\nvllm:num_requests_waiting{model_name=\"m\"} 0.0\n"},
		// SGLang 2026: /v1/loads, one entry per DP rank.
		{"SGLang loads", SGLang, "/v1/loads",
			`[{"dp_rank":0,"num_reqs":0,"num_waiting_reqs":0},{"dp_rank":1,"num_reqs":0,"num_waiting_reqs":3}]`,
			`[{"dp_rank":0,"num_reqs":0,"num_waiting_reqs":0},{"dp_rank":1,"num_reqs":0,"num_waiting_reqs":0}]`},
		// SGLang 0.5.x: only /get_load.
		{"SGLang get_load", SGLang, "/get_load",
			`[{"dp_rank":0,"num_reqs":5,"num_waiting_reqs":0}]`,
			`[{"dp_rank":0,"num_reqs":0,"num_waiting_reqs":0}]`},
		// SGLang 0.4.x with --enable-metrics.
		{"SGLang metrics", SGLang, "/metrics",
			"# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{model_name=\"m\"} 1.0\n# TYPE sglang:num_queue_reqs gauge\nsglang:num_queue_reqs{model_name=\"m\"} 0.0\n",
			"# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{model_name=\"m\"} 0.0\n# TYPE sglang:num_queue_reqs gauge\nsglang:num_queue_reqs{model_name=\"m\"} 0.0\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var polls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != tc.path {
					w.WriteHeader(http.StatusNotImplemented) // llama.cpp's answer for a disabled endpoint
					return
				}
				if polls.Add(1) <= 3 {
					w.Write([]byte(tc.busy))
					return
				}
				w.Write([]byte(tc.idle))
			}))
			defer srv.Close()
			c, err := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.WaitIdle(context.Background(), tc.engine); err != nil {
				t.Fatal(err)
			}
			if got := polls.Load(); got != 4 {
				t.Fatalf("polled %d times, want 3 busy answers then 1 idle", got)
			}
		})
	}
	t.Run("cancelled while busy", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`[{"is_processing":true}]`))
		}))
		defer srv.Close()
		c, _ := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m"})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := c.WaitIdle(ctx, LlamaCpp); err == nil {
			t.Fatal("WaitIdle on a cancelled context returned nil")
		}
	})
	t.Run("busy past the bound", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n"))
		}))
		defer srv.Close()
		c, _ := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m", IdleTimeout: 20 * time.Millisecond})
		err := c.WaitIdle(context.Background(), VLLM)
		if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "1 running") {
			t.Fatalf("err = %v, want ErrBusy naming the running count", err)
		}
	})
	t.Run("unknown engine is idle", func(t *testing.T) {
		c, _ := NewClient(ClientConfig{BaseURL: "http://127.0.0.1:9", Model: "m"})
		if err := c.WaitIdle(context.Background(), ""); err != nil {
			t.Fatal(err)
		}
	})
}
