package deploy

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// logsOnly is a Backend whose only answer is a log tail; tailLogs needs nothing else.
type logsOnly struct {
	Backend
	logs string
	err  error
}

func (b logsOnly) Logs(context.Context, string, int) (string, error) { return b.logs, b.err }

func TestTailLogsRedactsSecrets(t *testing.T) {
	t.Parallel()
	logs := "server_args=ServerArgs(model_path='q', api_key='sk-live-123', hf_token='hf_abc')\nready\n"
	got := tailLogs(context.Background(), logsOnly{logs: logs}, "c1", []string{"sk-live-123", "", "hf_abc"})
	want := "server_args=ServerArgs(model_path='q', api_key='[redacted]', hf_token='[redacted]')\nready\n"
	if got != want {
		t.Fatalf("tailLogs =\n%q\nwant\n%q", got, want)
	}
	if got := tailLogs(context.Background(), logsOnly{err: errors.New("no such container")}, "c1", nil); !strings.Contains(got, "logs unavailable: no such container") {
		t.Fatalf("tailLogs on error = %q", got)
	}
}

// An engine or proxy that echoes the request in its error page must not get a secret into
// the readiness failure, which is a Terraform diagnostic: the key is hidden before the body
// is cut to one line, so not even its first characters survive the cut.
func TestProbeRedactsEchoedSecrets(t *testing.T) {
	t.Parallel()
	const key, hub = "sk-live-0123456789", "hf_abcdef"
	pad := strings.Repeat("x", 190)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, pad+" "+r.Header.Get("Authorization")+" "+hub, http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	err := Probe(context.Background(), srv.URL, Readiness{Engine: engine.LlamaCpp, Model: "m", APIKey: key, Redact: []string{key, hub}})
	if err == nil {
		t.Fatal("Probe succeeded against a 503")
	}
	// 190 x, a space and "Bearer " fill 198 bytes of the 200 OneLine keeps.
	if want := pad + " Bearer [r..."; !strings.HasSuffix(err.Error(), want) {
		t.Errorf("Probe error = %q, want it to end in %q", err, want)
	}
	for _, s := range []string{"sk-", "hf_"} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("Probe error leaks %q: %v", s, err)
		}
	}
}

func TestReadinessBound(t *testing.T) {
	t.Parallel()
	ctx, cancel, interval := Readiness{}.Bound(t.Context())
	defer cancel()
	if _, ok := ctx.Deadline(); ok || interval != DefaultPollInterval {
		t.Errorf("zero readiness: deadline set %v, interval %v; want no deadline and %v", ok, interval, DefaultPollInterval)
	}
	ctx, cancel, interval = Readiness{Timeout: time.Minute, Interval: time.Second}.Bound(t.Context())
	defer cancel()
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > time.Minute || interval != time.Second {
		t.Errorf("deadline %v (set %v), interval %v; want within a minute and 1s", dl, ok, interval)
	}
}

// The readiness probe judges its completion by the rules a trial judges its outputs with: a
// server that answers "!!!!" or nothing (tokens counted) is not ready but broken, and
// WaitReady says so at once, quoting the output, instead of polling until its timeout.
func TestProbeDegenerateCompletion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fault simengine.OutputFault
		want  string // "" when the probe must pass
	}{
		{"", ""},
		// One prompt cannot show the same text for every prompt: only a trial sees that.
		{simengine.OutputSame, ""},
		{simengine.OutputExclamation, `degenerate (repeated_code_point): U+0021 '!' repeated for 16 of its 16 code points: "!!!!!!!!!!!!!!!!"`},
		{simengine.OutputEmpty, "degenerate (empty): empty output although the server counted 16 completion tokens"},
		{simengine.OutputUnknownToken, `degenerate (repeated_token): the token "<unk>" repeated for 80 of its 80 code points: "<unk><unk><unk><unk><unk><unk><unk><unk>"…`},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			t.Parallel()
			sim, err := simengine.NewServer(simengine.Options{Model: simengine.TwoSlotModel(), TimeScale: 0.01, OutputFault: tc.fault})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(sim)
			defer srv.Close()
			err = Probe(context.Background(), srv.URL, Readiness{Engine: engine.SGLang, Model: "sim-model"})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Probe of a healthy completion: %v", err)
				}
				return
			}
			var broken *DegenerateError
			if !errors.As(err, &broken) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Probe error = %v, want a DegenerateError with %q", err, tc.want)
			}
			// WaitReady stops at the first such answer, well before its timeout.
			b := &fakeBackend{st: Status{Running: true, State: "running", Endpoint: srv.URL}}
			start := time.Now()
			_, err = WaitReady(context.Background(), b, "c1", Readiness{Engine: engine.SGLang, Model: "sim-model", Timeout: time.Minute})
			if !errors.As(err, &broken) || !strings.Contains(err.Error(), "engine: out of memory") {
				t.Fatalf("WaitReady error = %v, want the DegenerateError with the log tail", err)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("WaitReady took %v: it polled on after a degenerate completion", d)
			}
		})
	}
}

// A tensor-parallel XPU server that is up but never answers its first completion (oneCCL's
// TCP transport on a Docker bridge) is reported as that, naming FI_TCP_IFACE and the
// runbook's probe, when the readiness bound ends; without a known cause the message stays
// the generic one.
func TestWaitReadyReportsUnansweredFirstCompletion(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return // 200
		}
		// The completion never returns. Its body is unread, so the server cannot see the
		// client go away: the test releases it before Close waits for it.
		<-stop
	}))
	defer srv.Close()
	defer close(stop)
	spec := engine.Spec{Engine: engine.VLLM, Accelerator: engine.XPU, TensorParallel: 2}
	for _, tt := range []struct {
		name      string
		hint      string
		want, not string
	}{
		{"xpu tp 2", spec.FirstCompletionHint(), "FI_TCP_IFACE=lo", "raise readiness_timeout"},
		{"no known cause", "", "raise readiness_timeout", "FI_TCP_IFACE"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := &fakeBackend{st: Status{Running: true, State: "running", Endpoint: srv.URL}}
			_, err := WaitReady(t.Context(), b, "c1", Readiness{Engine: engine.VLLM, Model: "m", Timeout: 300 * time.Millisecond, StallHint: tt.hint})
			if err == nil {
				t.Fatal("WaitReady succeeded against a server that never answers")
			}
			for _, s := range []string{tt.want, "health answers", "the completion did not return"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error lacks %q: %v", s, err)
				}
			}
			if strings.Contains(err.Error(), tt.not) {
				t.Errorf("error has %q: %v", tt.not, err)
			}
		})
	}
	if !strings.Contains(spec.FirstCompletionHint(), "tp_collective_probe.py") {
		t.Error("the hint does not name the runbook's probe")
	}
}
