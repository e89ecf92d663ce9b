package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeEngine is an OpenAI-compatible server that streams a few chunks per request and keeps
// score of what the runner did to it.
type fakeEngine struct {
	chunkDelay time.Duration
	chunks     int
	hang       func(prompt string) bool // hold the stream open until the client leaves

	mu          sync.Mutex
	inFlight    int
	maxInFlight int
	seen        []string // prompts in arrival order
	ends        map[string]time.Time
	starts      map[string]time.Time
}

func (f *fakeEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	prompt := ""
	if len(body.Messages) > 0 {
		prompt = body.Messages[0].Content
	}
	f.mu.Lock()
	if f.ends == nil {
		f.ends, f.starts = map[string]time.Time{}, map[string]time.Time{}
	}
	f.inFlight++
	if f.inFlight > f.maxInFlight {
		f.maxInFlight = f.inFlight
	}
	f.seen = append(f.seen, prompt)
	f.starts[prompt] = time.Now()
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.ends[prompt] = time.Now()
		f.mu.Unlock()
	}()

	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	for i := 0; i < f.chunks; i++ {
		select {
		case <-time.After(f.chunkDelay):
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, "data: %s\n\n", contentChunk("t"))
		fl.Flush()
		if i == 0 && f.hang != nil && f.hang(prompt) {
			<-r.Context().Done()
			return
		}
	}
	fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}]}\n\n")
	fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", f.chunks)
}

func prompts(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// checkNoLeak fails if goroutines started during the test are still running shortly after.
func checkNoLeak(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("goroutines: %d before, %d after\n%s", before, n, buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRunTrialClosedLoop(t *testing.T) {
	for _, c := range []int{1, 3, 8} {
		t.Run(fmt.Sprintf("c=%d", c), func(t *testing.T) {
			before := runtime.NumGoroutine()
			eng := &fakeEngine{chunkDelay: 2 * time.Millisecond, chunks: 3}
			srv := httptest.NewServer(eng)
			client, err := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			var events []Event
			res, err := RunTrial(context.Background(), client, TrialSpec{
				Concurrency:  c,
				Warmup:       prompts("w", 4),
				Measured:     prompts("m", 20),
				OutputTokens: 3,
				Observe:      func(e Event) bool { events = append(events, e); return false },
			})
			if err != nil {
				t.Fatal(err)
			}
			srv.Close()

			if eng.maxInFlight != c {
				t.Errorf("max in flight %d, want exactly %d", eng.maxInFlight, c)
			}
			if len(res.Requests) != 24 || res.Stopped || res.Unsent != 0 {
				t.Fatalf("records %d stopped %v unsent %d", len(res.Requests), res.Stopped, res.Unsent)
			}
			for i, r := range res.Requests {
				if r.Index != i || r.Warmup != (i < 4) || !r.OK() || r.CompletionTokens != 3 {
					t.Errorf("record %d: index %d warmup %v ok %v err %q", i, r.Index, r.Warmup, r.OK(), r.Err)
				}
			}
			if m := res.Measured(); len(m) != 20 || m[0].Prompt != "m-0" {
				t.Errorf("Measured() = %d records", len(m))
			}
			// Every warmup finished before any measured request reached the server.
			var lastWarmEnd, firstMeasStart time.Time
			for p, end := range eng.ends {
				if strings.HasPrefix(p, "w-") && end.After(lastWarmEnd) {
					lastWarmEnd = end
				}
			}
			for p, st := range eng.starts {
				if strings.HasPrefix(p, "m-") && (firstMeasStart.IsZero() || st.Before(firstMeasStart)) {
					firstMeasStart = st
				}
			}
			if !lastWarmEnd.Before(firstMeasStart) {
				t.Errorf("a warmup ended at %v, after the first measured request started at %v", lastWarmEnd, firstMeasStart)
			}
			// One first-content and one completion event per measured request, warmups unobserved.
			var first, done int
			for _, e := range events {
				if e.Result.Warmup {
					t.Fatalf("warmup event observed: %+v", e)
				}
				switch e.Kind {
				case EventFirstContent:
					first++
					if e.Result.FirstContent.IsZero() {
						t.Errorf("first-content event without FirstContent")
					}
				case EventCompleted:
					done++
				}
			}
			if first != 20 || done != 20 {
				t.Errorf("events: %d first-content, %d completed; want 20 and 20", first, done)
			}
			if res.MeasuredStart.After(res.Requests[4].Sent) || res.MeasuredEnd.Before(res.MeasuredStart) {
				t.Errorf("measured window %v..%v", res.MeasuredStart, res.MeasuredEnd)
			}
			checkNoLeak(t, before)
		})
	}
}

func TestRunTrialEarlyStop(t *testing.T) {
	before := runtime.NumGoroutine()
	// Every measured request after the first four streams one chunk and then hangs, so only
	// cancellation can end it.
	eng := &fakeEngine{chunks: 2, chunkDelay: time.Millisecond, hang: func(p string) bool {
		return p != "m-0" && p != "m-1" && p != "m-2" && p != "m-3"
	}}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	client, _ := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m"})

	completions := 0
	var stopAt time.Time
	res, err := RunTrial(context.Background(), client, TrialSpec{
		Concurrency: 4, Measured: prompts("m", 64), OutputTokens: 2,
		Observe: func(e Event) bool {
			if e.Kind == EventCompleted {
				completions++
			}
			// Stop once four have completed and the replacements are hanging mid-stream.
			if e.Kind == EventFirstContent && completions >= 4 && stopAt.IsZero() {
				stopAt = time.Now()
				return true
			}
			return false
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stopped {
		t.Fatal("trial not marked stopped")
	}
	if d := time.Since(stopAt); d > 500*time.Millisecond {
		t.Errorf("stop took %v after Observe asked", d)
	}
	cancelled := 0
	for _, r := range res.Requests {
		if r.Cancelled {
			cancelled++
			if r.Err != "" {
				t.Errorf("cancelled record has Err %q", r.Err)
			}
		}
	}
	if cancelled == 0 || cancelled > 4 {
		t.Errorf("cancelled %d records, want 1..4 (the in-flight ones)", cancelled)
	}
	if res.Unsent+len(res.Requests) != 64 || res.Unsent < 56 {
		t.Errorf("records %d unsent %d", len(res.Requests), res.Unsent)
	}
	eng.mu.Lock()
	sent := len(eng.seen)
	eng.mu.Unlock()
	// A request cancelled while still connecting has a record the server never saw.
	if sent > len(res.Requests) || len(res.Requests)-sent > 4 {
		t.Errorf("server saw %d requests, result has %d records", sent, len(res.Requests))
	}
	srv.Close()
	checkNoLeak(t, before)
}

func TestRunTrialContextCancel(t *testing.T) {
	before := runtime.NumGoroutine()
	eng := &fakeEngine{chunks: 2, chunkDelay: time.Millisecond, hang: func(string) bool { return true }}
	srv := httptest.NewServer(eng)
	client, _ := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m"})
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := RunTrial(ctx, client, TrialSpec{Concurrency: 3, Measured: prompts("m", 10), OutputTokens: 2})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("returned %v after start; cancellation should be prompt", d)
	}
	if !res.Stopped || len(res.Requests) != 3 || res.Unsent != 7 {
		t.Errorf("stopped %v records %d unsent %d", res.Stopped, len(res.Requests), res.Unsent)
	}
	for _, r := range res.Requests {
		if !r.Cancelled {
			t.Errorf("record %d not cancelled: %+v", r.Index, r)
		}
	}
	srv.Close()
	checkNoLeak(t, before)
}

// failingStreamer records how often each prompt was sent, to prove no retries.
type failingStreamer struct {
	mu    sync.Mutex
	sends map[string]int
}

func (f *failingStreamer) Stream(ctx context.Context, req Request) RequestResult {
	f.mu.Lock()
	f.sends[req.Prompt]++
	f.mu.Unlock()
	return RequestResult{HTTPStatus: 500, Err: "HTTP 500"}
}

func TestRunTrialNeverRetries(t *testing.T) {
	t.Parallel()
	fs := &failingStreamer{sends: map[string]int{}}
	res, err := RunTrial(context.Background(), fs, TrialSpec{Concurrency: 2, Warmup: prompts("w", 2), Measured: prompts("m", 6), OutputTokens: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Requests) != 8 {
		t.Fatalf("records %d", len(res.Requests))
	}
	for p, n := range fs.sends {
		if n != 1 {
			t.Errorf("prompt %s sent %d times", p, n)
		}
	}
	if len(fs.sends) != 8 {
		t.Errorf("%d distinct prompts sent, want 8", len(fs.sends))
	}
}

func TestRunTrialValidation(t *testing.T) {
	t.Parallel()
	fs := &failingStreamer{sends: map[string]int{}}
	if _, err := RunTrial(context.Background(), fs, TrialSpec{Concurrency: 0, OutputTokens: 1}); err == nil {
		t.Error("concurrency 0 accepted")
	}
	if _, err := RunTrial(context.Background(), fs, TrialSpec{Concurrency: 1, OutputTokens: 0}); err == nil {
		t.Error("output tokens 0 accepted")
	}
}

// A concurrency far beyond the prompts allocates and starts nothing in proportion to it:
// the trial runs with as many requests in flight as there are prompts.
func TestRunTrialHugeConcurrency(t *testing.T) {
	t.Parallel()
	eng := &fakeEngine{chunks: 2}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	c, err := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunTrial(context.Background(), c, TrialSpec{
		Concurrency: 1 << 62, Warmup: prompts("w", 2), Measured: prompts("m", 4), OutputTokens: 2,
		Observe: func(Event) bool { return false }, Tick: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Measured()); n != 4 {
		t.Fatalf("%d measured records, want 4", n)
	}
	if eng.maxInFlight > 4 {
		t.Fatalf("%d requests in flight, want at most 4", eng.maxInFlight)
	}
}
