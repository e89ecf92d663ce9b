package load

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Each fault a server can show ends the request within its bound, with the failure kind
// and a message that names the bound where one applies.
func TestClientFaultKinds(t *testing.T) {
	t.Parallel()
	const stall, total = 150 * time.Millisecond, 600 * time.Millisecond
	tests := []struct {
		name    string
		handler http.HandlerFunc
		kind    FailureKind
		wantErr []string
		within  time.Duration // the request must end before this
	}{
		{
			name: "stall before headers",
			handler: func(w http.ResponseWriter, r *http.Request) {
				hang(r)
			},
			kind: FailStalled, wantErr: []string{"stalled while waiting for the response", "for 150ms (trial.stall_timeout)"},
			within: stall + 300*time.Millisecond,
		},
		{
			name: "stall mid-stream",
			handler: func(w http.ResponseWriter, r *http.Request) {
				streamChunks(w, contentChunk("a"), contentChunk("b"))
				hang(r)
			},
			kind: FailStalled, wantErr: []string{"stalled while streaming (after 2 content chunks)", "(trial.stall_timeout)"},
			within: stall + 300*time.Millisecond,
		},
		{
			name: "trickle past the request timeout",
			handler: func(w http.ResponseWriter, r *http.Request) {
				// A chunk every 50 ms never stalls, but never ends either.
				for {
					streamChunks(w, contentChunk("a"))
					select {
					case <-r.Context().Done():
						return
					case <-time.After(50 * time.Millisecond):
					}
				}
			},
			kind: FailTimeout, wantErr: []string{"not finished after 600ms (trial.request_timeout)"},
			within: total + 300*time.Millisecond,
		},
		{
			name: "keep-alive comments hold a stream open within bounds",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				for i := 0; i < 4; i++ {
					io.WriteString(w, ": ping\n\n")
					w.(http.Flusher).Flush()
					time.Sleep(100 * time.Millisecond)
				}
				streamChunks(w, contentChunk("a"), `{"choices":[{"delta":{},"finish_reason":"length"}]}`, "[DONE]")
			},
			within: total,
		},
		{
			name: "5xx",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "overloaded", http.StatusServiceUnavailable)
			},
			kind: FailHTTPStatus, wantErr: []string{"HTTP 503", "overloaded"}, within: time.Second,
		},
		{
			name: "429",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "rate limited", http.StatusTooManyRequests)
			},
			kind: FailHTTPStatus, wantErr: []string{"HTTP 429", "rate limited"}, within: time.Second,
		},
		{
			name: "reset mid-stream",
			handler: func(w http.ResponseWriter, r *http.Request) {
				streamChunks(w, contentChunk("a"))
				conn, _, _ := w.(http.Hijacker).Hijack()
				conn.Close()
			},
			kind: FailReset, wantErr: []string{"read stream from"}, within: time.Second,
		},
		{
			name: "reset before any response",
			handler: func(w http.ResponseWriter, r *http.Request) {
				conn, _, _ := w.(http.Hijacker).Hijack()
				conn.Close()
			},
			kind: FailReset, wantErr: []string{"send request to"}, within: time.Second,
		},
		{
			name: "truncated stream",
			handler: func(w http.ResponseWriter, r *http.Request) {
				streamChunks(w, contentChunk("a"))
			},
			kind: FailTruncated, wantErr: []string{"ended without [DONE] or a finish_reason after 1 content chunks"}, within: time.Second,
		},
		{
			name: "malformed event",
			handler: func(w http.ResponseWriter, r *http.Request) {
				streamChunks(w, contentChunk("a"), `{"choices":[{"delta":{"content":`, "[DONE]")
			},
			kind: FailMalformed, wantErr: []string{"malformed stream event"}, within: time.Second,
		},
		{
			name: "oversized event",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, `data: {"choices":[{"delta":{"content":"`)
				chunk := strings.Repeat("x", 64<<10)
				// 32 MiB unless the client gives up; it must give up at 1 MiB.
				for i := 0; i < 512; i++ {
					if _, err := io.WriteString(w, chunk); err != nil {
						return
					}
				}
			},
			kind: FailMalformed, wantErr: []string{"larger than 1 MiB"}, within: 2 * time.Second,
		},
		{
			name: "oversized event across many data lines",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				line := "data: " + strings.Repeat("y", 1000) + "\n"
				for i := 0; i < 4096; i++ {
					if _, err := io.WriteString(w, line); err != nil {
						return
					}
				}
			},
			kind: FailMalformed, wantErr: []string{"larger than 1 MiB"}, within: 2 * time.Second,
		},
		{
			name: "error event inside the stream",
			handler: func(w http.ResponseWriter, r *http.Request) {
				streamChunks(w, contentChunk("a"), `{"error":{"message":"KV cache exhausted"}}`, "[DONE]")
			},
			kind: FailServerError, wantErr: []string{"server error in stream: KV cache exhausted"}, within: time.Second,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			c, err := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m", StallTimeout: stall, RequestTimeout: total})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			rec := c.Do(context.Background(), "p", 8)
			took := time.Since(start)
			if took > tc.within {
				t.Errorf("request took %v, want under %v", took, tc.within)
			}
			if rec.Cancelled {
				t.Fatalf("a server fault is a failure, not a cancellation: %+v", rec)
			}
			if rec.Failure != tc.kind {
				t.Errorf("Failure = %q, want %q (Err %q)", rec.Failure, tc.kind, rec.Err)
			}
			if tc.kind == "" && rec.Err != "" {
				t.Errorf("unexpected error %q", rec.Err)
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(rec.Err, s) {
					t.Errorf("Err %q does not contain %q", rec.Err, s)
				}
			}
		})
	}
}

// hang holds a request open until the client goes away. The body is read first: the server
// notices a closed connection only once the handler has consumed the request body.
func hang(r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

// The caller's cancellation during a stall is a cancellation, not a stall.
func TestClientCancelDuringStallIsCancelled(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hang(r) }))
	defer srv.Close()
	c, _ := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m", StallTimeout: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	rec := c.Do(ctx, "p", 8)
	if !rec.Cancelled || rec.Err != "" || rec.Failure != "" {
		t.Fatalf("record %+v, want cancelled without error", rec)
	}
}

// A key echoed so that it straddles the quote's cut must not leave its first characters
// in the message: redaction happens before truncation.
func TestClientRedactsBeforeTruncating(t *testing.T) {
	t.Parallel()
	for _, offset := range []int{0, 190, 195, 199, 200, 505, 510} {
		t.Run(fmt.Sprint(offset), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, strings.Repeat("e", offset)+key+strings.Repeat("z", 600))
			}))
			defer srv.Close()
			c, _ := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m", APIKey: testKey})
			rec := c.Do(context.Background(), "p", 8)
			if rec.HTTPStatus != 401 || rec.Failure != FailHTTPStatus {
				t.Fatalf("record %+v", rec)
			}
			for n := 4; n <= len(testKey); n++ {
				if strings.Contains(rec.Err, testKey[:n]) {
					t.Fatalf("Err carries the key's first %d characters: %q", n, rec.Err)
				}
			}
		})
	}
}

// An error event echoing the key is redacted before the decoder summarises it.
func TestClientRedactsStreamError(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		streamChunks(w, `{"error":{"code":1,"detail":"`+strings.Repeat("d", 190)+key+`"}}`)
	}))
	defer srv.Close()
	c, _ := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m", APIKey: testKey})
	rec := c.Do(context.Background(), "p", 8)
	if rec.Failure != FailServerError {
		t.Fatalf("record %+v", rec)
	}
	for n := 4; n <= len(testKey); n++ {
		if strings.Contains(rec.Err, testKey[:n]) {
			t.Fatalf("Err carries the key's first %d characters: %q", n, rec.Err)
		}
	}
}
