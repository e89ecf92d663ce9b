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
	t.Parallel()
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
		// SGLang 2026: /v1/loads (entrypoints/v1_loads.py get_loads()), a wrapper with one
		// LoadSnapshot.to_dict() per DP rank. Busy here means decoding with nothing waiting:
		// the case a check of waiting requests alone takes for idle.
		{"SGLang loads decoding", SGLang, "/v1/loads",
			`{"timestamp":1767225600.5,"version":"0.5.10","accelerator":"cuda","num_accelerators":2,"loads":[` +
				`{"dp_rank":0,"num_running_reqs":0,"num_waiting_reqs":0,"num_used_tokens":0},{"dp_rank":1,"num_running_reqs":2,"num_waiting_reqs":0,"num_used_tokens":812}]}`,
			`{"timestamp":1767225601.5,"version":"0.5.10","loads":[{"dp_rank":0,"num_running_reqs":0,"num_waiting_reqs":0},{"dp_rank":1,"num_running_reqs":0,"num_waiting_reqs":0}]}`},
		{"SGLang loads waiting", SGLang, "/v1/loads",
			`{"timestamp":1767225600.5,"version":"0.5.10","loads":[{"dp_rank":0,"num_running_reqs":0,"num_waiting_reqs":3}]}`,
			`{"timestamp":1767225601.5,"version":"0.5.10","loads":[{"dp_rank":0,"num_running_reqs":0,"num_waiting_reqs":0}]}`},
		// SGLang 0.5.x: only /get_load, a bare list whose num_reqs counts running and waiting.
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
			t.Parallel()
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
	t.Run("unknown engine is idle but unverified", func(t *testing.T) {
		t.Parallel()
		c, _ := NewClient(ClientConfig{BaseURL: "http://127.0.0.1:9", Model: "m"})
		if err := c.WaitIdle(context.Background(), ""); err != nil || !c.IdleUnverified() {
			t.Fatalf("err = %v, unverified = %v; want nil and true", err, c.IdleUnverified())
		}
	})
	t.Run("cancelled while busy", func(t *testing.T) {
		t.Parallel()
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
		t.Parallel()
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
}

// A source that answers 200 without the fields to tell running and waiting work passes the
// question on: /v1/loads → /get_load → /metrics. Each case's sources answer as listed; the
// last answering one says busy, so WaitIdle must reach it and report ErrBusy naming it.
func TestWaitIdleFallsBack(t *testing.T) {
	t.Parallel()
	const (
		loadsNoFields  = `{"timestamp":1767225600.5,"version":"0.5.10","loads":[{"dp_rank":0,"num_used_tokens":10}]}`
		loadsEmpty     = `{"timestamp":1767225600.5,"version":"0.5.10","loads":[]}`
		loadsOnlyWait  = `{"loads":[{"dp_rank":0,"num_waiting_reqs":0}]}`
		proxyPage      = `<html>gateway</html>`
		legacyBusy     = `[{"dp_rank":0,"num_reqs":1,"num_waiting_reqs":0}]`
		metricsBusy    = "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{model_name=\"m\"} 1\n# TYPE sglang:num_queue_reqs gauge\nsglang:num_queue_reqs{model_name=\"m\"} 0\n"
		metricsRunOnly = "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{model_name=\"m\"} 0\n"
	)
	cases := []struct {
		name    string
		answers map[string]string // path → 200 body; other paths 404
		want    string            // the source named in the busy error; "" for unverified idle
	}{
		{"loads without counts, legacy busy", map[string]string{"/v1/loads": loadsNoFields, "/get_load": legacyBusy}, "/get_load"},
		{"empty loads, metrics busy", map[string]string{"/v1/loads": loadsEmpty, "/get_load": loadsEmpty, "/metrics": metricsBusy}, "sglang:num_running_reqs"},
		{"loads without running count, metrics busy", map[string]string{"/v1/loads": loadsOnlyWait, "/metrics": metricsBusy}, "sglang:num_running_reqs"},
		{"proxy page, metrics busy", map[string]string{"/v1/loads": proxyPage, "/get_load": proxyPage, "/metrics": metricsBusy}, "sglang:num_running_reqs"},
		// Running without queue gauges cannot rule out waiting work: no signal, so unverified.
		{"metrics without queue gauge", map[string]string{"/metrics": metricsRunOnly}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, ok := tc.answers[r.URL.Path]
				if !ok {
					http.NotFound(w, r)
					return
				}
				w.Write([]byte(body))
			}))
			defer srv.Close()
			c, _ := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m", IdleTimeout: 30 * time.Millisecond})
			err := c.WaitIdle(context.Background(), SGLang)
			if tc.want == "" {
				if err != nil || !c.IdleUnverified() {
					t.Fatalf("err = %v, unverified = %v; want nil and true", err, c.IdleUnverified())
				}
				return
			}
			if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "1 running") {
				t.Fatalf("err = %v, want ErrBusy from %s with 1 running", err, tc.want)
			}
			if c.IdleUnverified() {
				t.Error("a busy answer counted as no signal")
			}
		})
	}
}
