package engine

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

func TestWaitIdle(t *testing.T) {
	cases := []struct {
		name       string
		engine     Name
		path       string
		busy, idle string
	}{
		{"llama.cpp slots", LlamaCpp, "/slots",
			`[{"id":0,"is_processing":true},{"id":1,"is_processing":false}]`,
			`[{"id":0,"is_processing":false},{"id":1,"is_processing":false}]`},
		{"vLLM metrics", VLLM, "/metrics",
			"# HELP x\nvllm:num_requests_running{model_name=\"m\"} 2.0\nvllm:num_requests_waiting{model_name=\"m\"} 0.0\n",
			"vllm:num_requests_running{model_name=\"m\"} 0.0\nvllm:num_requests_waiting{model_name=\"m\"} 0.0\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var polls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != tc.path {
					http.NotFound(w, r)
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
	t.Run("unknown engine is idle", func(t *testing.T) {
		c, _ := NewClient(ClientConfig{BaseURL: "http://127.0.0.1:9", Model: "m"})
		if err := c.WaitIdle(context.Background(), ""); err != nil {
			t.Fatal(err)
		}
	})
}
