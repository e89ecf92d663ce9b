package simengine

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fast is a small engine scaled 100x: 2 slots, decode steps of 0.1 ms.
func fast(t *testing.T, mutate func(*Options)) (*Server, *httptest.Server) {
	t.Helper()
	opts := Options{Model: Model{Slots: 2, PrefillPerToken: 100 * time.Microsecond, PrefillOverhead: ms, DecodeStep: 10 * ms}, TimeScale: 0.01, ModelName: "m"}
	if mutate != nil {
		mutate(&opts)
	}
	s, err := NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

type chunk struct {
	Choices []struct {
		Delta struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

type stream struct {
	status  int
	chunks  []chunk
	done    bool
	text    string
	content int // chunks with non-empty content or text
	finish  string
}

func post(t *testing.T, ctx context.Context, url, key, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return http.DefaultClient.Do(req)
}

func streamed(t *testing.T, url, body string) stream {
	t.Helper()
	resp, err := post(t, context.Background(), url, "", body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	st := stream{status: resp.StatusCode}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			st.done = true
			continue
		}
		var c chunk
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("chunk %q: %v", line, err)
		}
		st.chunks = append(st.chunks, c)
		for _, ch := range c.Choices {
			piece := ch.Text
			if ch.Delta.Content != nil {
				piece += *ch.Delta.Content
			}
			if piece != "" {
				st.content++
				st.text += piece
			}
			if ch.FinishReason != nil {
				st.finish = *ch.FinishReason
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestChatStream(t *testing.T) {
	_, ts := fast(t, nil)
	// "Say hello, please!" is 3 words + 2 marks = 5 tokens, plus 11 for the chat template.
	st := streamed(t, ts.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"Say hello, please!"}],
		"max_tokens":7,"ignore_eos":true,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`)
	if st.status != 200 || !st.done {
		t.Fatalf("status %d, [DONE] %v", st.status, st.done)
	}
	first := st.chunks[0].Choices[0]
	if first.Delta.Role != "assistant" || first.Delta.Content == nil || *first.Delta.Content != "" {
		t.Errorf("first chunk = %+v, want the role with empty content", first)
	}
	if st.content != 7 || st.finish != "length" {
		t.Errorf("content chunks %d finish %q, want 7 and length", st.content, st.finish)
	}
	last := st.chunks[len(st.chunks)-1]
	if len(last.Choices) != 0 || last.Usage == nil || last.Usage.PromptTokens != 16 || last.Usage.CompletionTokens != 7 {
		t.Errorf("usage chunk = %+v, want empty choices and 16/7 tokens", last)
	}
	if CountTokens(st.text) != 7 {
		t.Errorf("output %q is not 7 tokens", st.text)
	}
	for _, r := range st.text {
		if r < ' ' || r > '~' {
			t.Fatalf("output %q is not printable ASCII", st.text)
		}
	}
}

func TestCompletionsStream(t *testing.T) {
	_, ts := fast(t, nil)
	st := streamed(t, ts.URL+"/v1/completions", `{"model":"m","prompt":"one two three","max_tokens":4,"ignore_eos":true,"stream":true}`)
	if st.status != 200 || !st.done || st.content != 4 || st.finish != "length" {
		t.Fatalf("status %d done %v content %d finish %q", st.status, st.done, st.content, st.finish)
	}
	for _, c := range st.chunks {
		if c.Usage != nil {
			t.Errorf("usage sent without stream_options.include_usage")
		}
	}
	st = streamed(t, ts.URL+"/v1/completions", `{"prompt":"one two three","max_tokens":4,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`)
	if u := st.chunks[len(st.chunks)-1].Usage; u == nil || u.PromptTokens != 3 {
		t.Errorf("completions usage = %+v, want 3 prompt tokens (no template)", u)
	}
}

func TestOutputs(t *testing.T) {
	_, ts := fast(t, nil)
	body := func(prompt string, temp float64, ignoreEOS bool) string {
		return fmt.Sprintf(`{"prompt":%q,"max_tokens":300,"ignore_eos":%v,"temperature":%g,"stream":true}`, prompt, ignoreEOS, temp)
	}
	u := ts.URL + "/v1/completions"
	a, b := streamed(t, u, body("alpha", 0, true)), streamed(t, u, body("alpha", 0, true))
	if a.text != b.text {
		t.Errorf("temperature 0 gave two outputs for one prompt")
	}
	if c := streamed(t, u, body("beta", 0, true)); c.text == a.text {
		t.Errorf("two prompts gave the same output")
	}
	if d := streamed(t, u, body("alpha", 1, true)); d.text == a.text {
		t.Errorf("temperature 1 repeated the greedy output")
	}
	// Without ignore_eos the text ends by itself before 300 tokens (at 16 + hash % 240).
	if e := streamed(t, u, body("alpha", 0, false)); e.finish != "stop" || e.content >= 300 || e.content < 16 {
		t.Errorf("without ignore_eos: %d tokens, finish %q; want an early stop", e.content, e.finish)
	}
}

func TestNonStreaming(t *testing.T) {
	_, ts := fast(t, nil)
	resp, err := post(t, context.Background(), ts.URL+"/v1/chat/completions", "", `{"messages":[{"role":"user","content":[{"type":"text","text":"a b"}]}],"max_tokens":3,"ignore_eos":true}`)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if CountTokens(got.Choices[0].Message.Content) != 3 || got.Usage.PromptTokens != 13 || got.Usage.CompletionTokens != 3 {
		t.Errorf("response = %+v, want 3 output tokens and 2+11 prompt tokens", got)
	}
}

func TestErrors(t *testing.T) {
	_, ts := fast(t, func(o *Options) { o.APIKey = "k"; o.ContextLength = 100 })
	tests := []struct {
		name, path, key, body string
		want                  int
	}{
		{"no key", "/v1/completions", "", `{"prompt":"x","stream":true}`, 401},
		{"wrong key", "/v1/completions", "nope", `{"prompt":"x","stream":true}`, 401},
		{"unknown model", "/v1/completions", "k", `{"model":"other","prompt":"x"}`, 404},
		{"over context", "/v1/completions", "k", `{"prompt":"x","max_tokens":100}`, 400},
		{"zero max tokens", "/v1/completions", "k", `{"prompt":"x","max_tokens":0}`, 400},
		{"empty messages", "/v1/chat/completions", "k", `{"messages":[]}`, 400},
		{"bad json", "/v1/chat/completions", "k", `{`, 400},
		{"tokenize without key", "/tokenize", "", `{"content":"x"}`, 401},
		{"ok", "/v1/completions", "k", `{"prompt":"x","max_tokens":2}`, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := post(t, context.Background(), ts.URL+tt.path, tt.key, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
	resp, err := http.Get(ts.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/health needs no key, got %d", resp.StatusCode)
	}
}

func TestControlEndpoints(t *testing.T) {
	s, ts := fast(t, func(o *Options) { o.ContextLength = 4096 })
	get := func(path string) (int, string) {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/v1/models"); code != 200 || !strings.Contains(body, `"id":"m"`) {
		t.Errorf("/v1/models = %d %s", code, body)
	}
	if code, body := get("/get_server_info"); code != 200 || !strings.Contains(body, `"max_total_num_tokens":8192`) {
		t.Errorf("/get_server_info = %d %s, want 2 slots x 4096", code, body)
	}
	if code, _ := get("/health_generate"); code != 200 {
		t.Errorf("/health_generate = %d", code)
	}
	resp, err := post(t, context.Background(), ts.URL+"/tokenize", "", `{"content":"Hello, world!"}`)
	if err != nil {
		t.Fatal(err)
	}
	var tok struct{ Tokens []int }
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(tok.Tokens) != 4 {
		t.Errorf("/tokenize gave %v, want 4 tokens", tok.Tokens)
	}
	s.SetReady(false)
	if code, _ := get("/health"); code != 503 {
		t.Errorf("/health while starting = %d, want 503", code)
	}
	if code, _ := get("/v1/models"); code != 503 {
		t.Errorf("/v1/models while starting = %d, want 503", code)
	}
	s.SetReady(true)
	if code, _ := get("/health"); code != 200 {
		t.Errorf("/health when ready = %d", code)
	}
}

// TestConcurrencyAndFlush runs 4 streams on 2 slots and flushes the cache during and after.
func TestConcurrencyAndFlush(t *testing.T) {
	s, ts := fast(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	started := make(chan struct{}, 4)
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := post(t, ctx, ts.URL+"/v1/completions", "", fmt.Sprintf(`{"prompt":"user %d","max_tokens":200,"ignore_eos":true,"stream":true}`, i))
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			started <- struct{}{}
			_, err = io.Copy(io.Discard, resp.Body)
			errs <- err
		}()
	}
	for range 4 {
		<-started
	}
	resp, err := post(t, ctx, ts.URL+"/flush_cache", "", "")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("flush while running = %d, want 400", resp.StatusCode)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	resp, err = post(t, ctx, ts.URL+"/flush_cache", "", "")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("flush when idle = %d, want 200", resp.StatusCode)
	}
	st := s.Stats()
	if st.MaxInFlight != 4 || st.RequestsServed != 4 || st.Flushes != 1 || st.FlushesRejected != 1 || st.InFlight != 0 || st.OutputTokens != 800 {
		t.Errorf("stats = %+v", st)
	}
}

// TestClientCancel abandons a stream: the server drops the job and its scheduler goroutine ends.
func TestClientCancel(t *testing.T) {
	s, ts := fast(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := post(t, ctx, ts.URL+"/v1/completions", "", `{"prompt":"x","max_tokens":30000,"ignore_eos":true,"stream":true}`)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	_, _ = bufio.NewReader(resp.Body).ReadString('\n')
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		idle := !s.schedRunning && s.stats.InFlight == 0
		s.mu.Unlock()
		if idle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("scheduler still running 5 s after the client left")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := s.Stats(); st.Cancelled != 1 || st.RequestsServed != 0 {
		t.Errorf("stats = %+v, want one cancelled request", st)
	}
}

// TestTimingFollowsModel checks the real-time face against the virtual one: a lone request's
// TTFT is its prefill (1 ms + 100 tokens x 0.1 ms = 11 ms model time) scaled by 0.1.
func TestTimingFollowsModel(t *testing.T) {
	var mu sync.Mutex
	var emitted time.Time
	_, ts := fast(t, func(o *Options) {
		o.TimeScale = 0.1
		o.OnFirstChunk = func(_ string, at time.Time) { mu.Lock(); emitted = at; mu.Unlock() }
	})
	prompt := strings.TrimSpace(strings.Repeat("w ", 100))
	start := time.Now()
	resp, err := post(t, context.Background(), ts.URL+"/v1/completions", "", fmt.Sprintf(`{"prompt":%q,"max_tokens":2,"ignore_eos":true,"stream":true}`, prompt))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, err = bufio.NewReader(resp.Body).ReadString('\n')
	ttft := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	if ttft < 1100*time.Microsecond || ttft > 200*ms {
		t.Errorf("TTFT %s, want about 1.1 ms (and never less)", ttft)
	}
	mu.Lock()
	defer mu.Unlock()
	if emitted.IsZero() || emitted.Before(start) {
		t.Errorf("OnFirstChunk not called in time: %v", emitted)
	}
}
