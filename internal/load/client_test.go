package load

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const testKey = "sk-test-secret-0123456789"

// streamChunks writes each payload as an SSE event and flushes, as a real server does.
func streamChunks(w http.ResponseWriter, payloads ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	for _, p := range payloads {
		fmt.Fprintf(w, "data: %s\n\n", p)
		fl.Flush()
	}
}

func contentChunk(s string) string {
	b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": s}}}})
	return string(b)
}

func TestClientStreamRecord(t *testing.T) {
	t.Parallel()
	var body map[string]any
	var auth string
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		auth = r.Header.Get("Authorization")
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		streamChunks(w,
			`{"choices":[{"index":0,"delta":{"role":"assistant"}}]}`,
			`{"choices":[{"index":0,"delta":{"reasoning_content":"Hm"}}]}`,
			contentChunk("Hel"),
			contentChunk("lo é"),
			`{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":4}}`,
			`[DONE]`)
	}))
	defer srv.Close()

	c, err := NewClient(ClientConfig{BaseURL: srv.URL + "/", Model: "qwen", APIKey: testKey,
		ExtraBody: map[string]any{"cache_prompt": false}})
	if err != nil {
		t.Fatal(err)
	}
	rec := c.Do(context.Background(), "say \"hi\"", 4)

	if !rec.OK() {
		t.Fatalf("record not OK: %+v", rec)
	}
	if requests.Load() != 1 {
		t.Fatalf("server saw %d requests, want 1", requests.Load())
	}
	if auth != "Bearer "+testKey {
		t.Errorf("Authorization = %q", auth)
	}
	wantBody := map[string]any{
		"model":          "qwen",
		"messages":       []any{map[string]any{"role": "user", "content": "say \"hi\""}},
		"max_tokens":     float64(4),
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
		"temperature":    float64(0),
		"ignore_eos":     true,
		"cache_prompt":   false,
	}
	if fmt.Sprint(body) != fmt.Sprint(wantBody) {
		t.Errorf("request body\n got %v\nwant %v", body, wantBody)
	}
	// "Hm" + "Hel" + "lo é": three content chunks, 2+3+5 = 10 bytes (é is two).
	if rec.ContentChunks != 3 || rec.ContentBytes != 10 {
		t.Errorf("chunks/bytes = %d/%d, want 3/10", rec.ContentChunks, rec.ContentBytes)
	}
	h := fnv.New64a()
	h.Write([]byte("HmHello é"))
	if rec.OutputHash != h.Sum64() {
		t.Errorf("OutputHash = %x, want %x", rec.OutputHash, h.Sum64())
	}
	if !rec.UsageReported || rec.PromptTokens != 12 || rec.CompletionTokens != 4 || rec.FinishReason != "length" {
		t.Errorf("usage/finish = %v %d %d %q", rec.UsageReported, rec.PromptTokens, rec.CompletionTokens, rec.FinishReason)
	}
	if rec.HTTPStatus != 200 || rec.Prompt != "say \"hi\"" || rec.RequestedOutputTokens != 4 {
		t.Errorf("status/prompt/max = %d %q %d", rec.HTTPStatus, rec.Prompt, rec.RequestedOutputTokens)
	}
	if rec.Sent.IsZero() || rec.FirstContent.Before(rec.Sent) || rec.LastContent.Before(rec.FirstContent) || rec.Done.Before(rec.LastContent) {
		t.Errorf("timestamps out of order: sent %v first %v last %v done %v", rec.Sent, rec.FirstContent, rec.LastContent, rec.Done)
	}
	// Every request dials afresh (keep-alives off); plain HTTP has no handshake.
	if rec.Connect <= 0 || rec.TLSHandshake != 0 {
		t.Errorf("connect %v, TLS handshake %v", rec.Connect, rec.TLSHandshake)
	}
}

func TestClientCompletionsAPI(t *testing.T) {
	t.Parallel()
	var body map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" {
			http.NotFound(w, r)
			return
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		streamChunks(w, `{"choices":[{"text":"ab","index":0}]}`, `{"choices":[{"text":"c","finish_reason":"length"}]}`, `[DONE]`)
	}))
	defer srv.Close()
	c, err := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m", API: APICompletions})
	if err != nil {
		t.Fatal(err)
	}
	rec := c.Do(context.Background(), "p", 3)
	if !rec.OK() || rec.ContentChunks != 2 || rec.ContentBytes != 3 {
		t.Fatalf("record %+v", rec)
	}
	if body["prompt"] != "p" || body["messages"] != nil {
		t.Errorf("body %v", body)
	}
	if rec.UsageReported {
		t.Errorf("usage reported although the server sent none")
	}
}

func TestClientFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler http.HandlerFunc
		wantErr []string // substrings
		status  int
	}{
		{
			name: "non-200 body is summarised",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `{"error":"server overloaded"}`+strings.Repeat("x", 2000))
			},
			wantErr: []string{"HTTP 503", `{"error":"server overloaded"}`, "..."},
			status:  503,
		},
		{
			name: "HTML error page is one line",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusNotFound)
				io.WriteString(w, "<html>\r\n<head><title>404 Not Found</title></head>\r\n<body><h1>404 Not Found</h1>"+strings.Repeat("<p>padding</p>\n", 100)+"</body></html>")
			},
			wantErr: []string{"HTTP 404", ": 404 Not Found"},
			status:  404,
		},
		{
			name: "server not streaming",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"choices":[{"message":{"content":"hi"}}]}`)
			},
			wantErr: []string{"ended without [DONE]", "application/json", "streaming"},
			status:  200,
		},
		{
			name: "error inside the stream",
			handler: func(w http.ResponseWriter, r *http.Request) {
				streamChunks(w, contentChunk("a"), `{"error":{"message":"KV cache exhausted"}}`, `[DONE]`)
			},
			wantErr: []string{"server error in stream: KV cache exhausted"},
			status:  200,
		},
		{
			name: "connection cut mid-stream",
			handler: func(w http.ResponseWriter, r *http.Request) {
				streamChunks(w, contentChunk("a"))
				conn, _, _ := w.(http.Hijacker).Hijack()
				conn.Close()
			},
			wantErr: []string{"read stream from"},
			status:  200,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var requests atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				tc.handler(w, r)
			}))
			defer srv.Close()
			c, err := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m", APIKey: testKey})
			if err != nil {
				t.Fatal(err)
			}
			rec := c.Do(context.Background(), "p", 8)
			if rec.OK() || rec.Cancelled {
				t.Fatalf("record should be a failure, not cancelled: %+v", rec)
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(rec.Err, s) {
					t.Errorf("Err %q does not contain %q", rec.Err, s)
				}
			}
			if strings.Contains(rec.Err, testKey) {
				t.Errorf("Err leaks the API key: %q", rec.Err)
			}
			if strings.ContainsAny(rec.Err, "\r\n") {
				t.Errorf("Err spans several lines: %q", rec.Err)
			}
			if rec.HTTPStatus != tc.status {
				t.Errorf("HTTPStatus = %d, want %d", rec.HTTPStatus, tc.status)
			}
			// Measured requests are never retried, whatever the failure.
			if n := requests.Load(); n != 1 {
				t.Errorf("server saw %d requests, want exactly 1", n)
			}
		})
	}
}

func TestClientUnreachableIsErrorNotCancel(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, err := NewClient(ClientConfig{BaseURL: url, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	rec := c.Do(context.Background(), "p", 1)
	if rec.Cancelled || !strings.Contains(rec.Err, "send request to "+url) || rec.HTTPStatus != 0 {
		t.Fatalf("record %+v", rec)
	}
}

func TestClientCancelMidStream(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		streamChunks(w, contentChunk("a"))
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	c, _ := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m"})
	ctx, cancel := context.WithCancel(context.Background())
	firstSeen := make(chan struct{})
	go func() {
		<-firstSeen
		cancel()
	}()
	start := time.Now()
	rec := c.Stream(ctx, Request{Prompt: "p", MaxTokens: 10, OnFirstContent: func(partial RequestResult) {
		if partial.FirstContent.IsZero() || partial.Sent.IsZero() {
			t.Errorf("partial record lacks timestamps: %+v", partial)
		}
		close(firstSeen)
	}})
	if !rec.Cancelled || rec.Err != "" || rec.ContentChunks != 1 {
		t.Fatalf("record %+v", rec)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancel took %v", d)
	}
}

func TestNewClientValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  ClientConfig
		want string
	}{
		{"no scheme", ClientConfig{BaseURL: "localhost:8080", Model: "m"}, "is not an http:// or https:// URL"},
		{"password redacted", ClientConfig{BaseURL: "ftp://u:hunter2@h", Model: "m"}, "ftp://REDACTED@h"},
		{"no model", ClientConfig{BaseURL: "http://h", Model: ""}, "model is empty"},
		{"bad api", ClientConfig{BaseURL: "http://h", Model: "m", API: "responses"}, `api "responses"`},
		{"extra overrides max_tokens", ClientConfig{BaseURL: "http://h", Model: "m", ExtraBody: map[string]any{"max_tokens": 1}}, `"max_tokens"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewClient(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("password leaked: %v", err)
			}
		})
	}
}
