package load

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// surfaceFaults are the faults a server can show a measured request, as the fault-injecting
// endpoint of the acceptance tests serves them.
var surfaceFaults = []struct {
	name    string
	handler http.HandlerFunc
}{
	{"reset", func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}},
	{"5xx", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}},
	{"429", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "rate limited", http.StatusTooManyRequests)
	}},
	{"stall-before-headers", func(w http.ResponseWriter, r *http.Request) { hangFor(r, time.Hour) }},
	{"stall-mid-stream", func(w http.ResponseWriter, r *http.Request) {
		streamChunks(w, contentChunk("a"))
		hangFor(r, time.Hour)
	}},
	{"trickle-past-request-timeout", func(w http.ResponseWriter, r *http.Request) {
		for {
			streamChunks(w, contentChunk("a"))
			select {
			case <-r.Context().Done():
				return
			case <-time.After(400 * time.Millisecond): // under every stall bound
			}
		}
	}},
	{"truncated", func(w http.ResponseWriter, r *http.Request) { streamChunks(w, contentChunk("a")) }},
	{"malformed", func(w http.ResponseWriter, r *http.Request) {
		streamChunks(w, contentChunk("a"), `{"choices":[{"delta":{"content":`, "[DONE]")
	}},
	{"oversized-event", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"choices":[{"delta":{"content":"`)
		chunk := strings.Repeat("x", 64<<10)
		for i := 0; i < 64; i++ {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	}},
}

func hangFor(r *http.Request, d time.Duration) {
	_, _ = io.Copy(io.Discard, r.Body)
	select {
	case <-r.Context().Done():
	case <-time.After(d):
	}
}

// BenchmarkFaultSurface reports how long each fault takes to fail its request ("s/surface"),
// with short bounds (stall 1 s, request 3 s) and with the defaults (stall 5 min, request
// 30 min: those sub-benchmarks take as long as their bound). Run one iteration each:
//
//	go test -run '^$' -bench 'FaultSurface/short' -benchtime 1x ./internal/load
//	go test -run '^$' -bench 'FaultSurface/defaults' -benchtime 1x -timeout 40m ./internal/load
func BenchmarkFaultSurface(b *testing.B) {
	for _, bounds := range []struct {
		name         string
		stall, total time.Duration
	}{{"short", time.Second, 3 * time.Second}, {"defaults", 0, 0}} {
		b.Run(bounds.name, func(b *testing.B) {
			for _, f := range surfaceFaults {
				b.Run(f.name, func(b *testing.B) {
					srv := httptest.NewServer(f.handler)
					defer srv.Close()
					c, err := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m", StallTimeout: bounds.stall, RequestTimeout: bounds.total})
					if err != nil {
						b.Fatal(err)
					}
					var total time.Duration
					for i := 0; i < b.N; i++ {
						start := time.Now()
						rec := c.Do(context.Background(), "p", 8)
						total += time.Since(start)
						if rec.Err == "" || rec.Cancelled {
							b.Fatalf("the fault did not fail the request: %+v", rec)
						}
						if i == 0 {
							b.Logf("%s: %s", rec.Failure, rec.Err)
						}
					}
					b.ReportMetric(total.Seconds()/float64(b.N), "s/surface")
				})
			}
		})
	}
}
