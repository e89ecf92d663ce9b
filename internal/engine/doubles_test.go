package engine_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// decoding serves a protocol double with one streamed request decoding (admitted, nothing
// waiting) until the returned stop is called.
func decoding(t *testing.T, opts simengine.Options) (url string, stop func()) {
	t.Helper()
	opts.Model = simengine.Model{Slots: 2, PrefillPerToken: 100 * time.Microsecond, PrefillOverhead: time.Millisecond, DecodeStep: 10 * time.Millisecond}
	opts.TimeScale, opts.ModelName = 0.01, "m"
	eng, err := simengine.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(eng)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/completions",
		strings.NewReader(`{"prompt":"decode for a while","max_tokens":30000,"ignore_eos":true,"stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, resp.Body); resp.Body.Close(); close(done) }()
	for deadline := time.Now().Add(5 * time.Second); eng.Stats().InFlight == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the request was never admitted")
		}
	}
	return srv.URL, func() { cancel(); <-done }
}

// While a request decodes and none waits, every engine's idle wait says busy (the current
// SGLang /v1/loads wrapper counts it in num_running_reqs, which a check of waiting requests
// alone misses); once it ends, the wait returns with the idle verified.
func TestWaitIdleAgainstDoubles(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		engine engine.Name
		opts   simengine.Options
		source string
	}{
		{"sglang /v1/loads", engine.SGLang, simengine.Options{Protocol: simengine.SGLang, NoMetrics: true}, "/v1/loads"},
		{"sglang 0.4 metrics", engine.SGLang, simengine.Options{Protocol: simengine.SGLang04}, "sglang:num_running_reqs"},
		{"vllm metrics", engine.VLLM, simengine.Options{Protocol: simengine.VLLM}, "vllm:num_requests_running"},
		{"llama.cpp metrics", engine.LlamaCpp, simengine.Options{Protocol: simengine.LlamaCpp}, "llamacpp:requests_processing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url, stop := decoding(t, tc.opts)
			c, err := engine.NewClient(engine.ClientConfig{BaseURL: url, Model: "m", IdleTimeout: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			err = c.WaitIdle(context.Background(), tc.engine)
			if !errors.Is(err, engine.ErrBusy) || !strings.Contains(err.Error(), tc.source) || !strings.Contains(err.Error(), "1 running") {
				stop()
				t.Fatalf("while decoding: err = %v, want ErrBusy from %s with 1 running", err, tc.source)
			}
			stop()
			if err := c.WaitIdle(context.Background(), tc.engine); err != nil || c.IdleUnverified() {
				t.Fatalf("after the request ended: err = %v, unverified = %v", err, c.IdleUnverified())
			}
		})
	}
	// SGLang 0.4.x without --enable-metrics offers no signal at all: taken as idle, and said so.
	t.Run("sglang 0.4 without metrics", func(t *testing.T) {
		t.Parallel()
		url, stop := decoding(t, simengine.Options{Protocol: simengine.SGLang04, NoMetrics: true})
		defer stop()
		c, _ := engine.NewClient(engine.ClientConfig{BaseURL: url, Model: "m", IdleTimeout: 100 * time.Millisecond})
		if err := c.WaitIdle(context.Background(), engine.SGLang); err != nil || !c.IdleUnverified() {
			t.Fatalf("err = %v, unverified = %v; want nil and true", err, c.IdleUnverified())
		}
	})
}
