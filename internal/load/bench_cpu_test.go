package load

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// burstServerEnv makes the test binary stream n content chunks per request, each flushed on
// its own, then usage and [DONE]: the client's per-chunk work at full speed.
const burstServerEnv = "LOAD_BENCH_BURST_SERVER"

func runBurstServer(n int) {
	raiseNoFile()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	stream := sampleStream(n)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for start := 0; start < len(stream); {
			end := start + 1
			for end < len(stream) && !(stream[end-1] == '\n' && stream[end-2] == '\n') {
				end++
			}
			if _, err := w.Write(stream[start:end]); err != nil {
				return
			}
			f.Flush()
			start = end
		}
	})}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	_ = srv.Serve(ln)
}

// BenchmarkClientCPUPerChunk streams 512 requests at once, 256 content chunks each, from a
// server in a child process and reports this process's CPU time (user + system) per streamed
// chunk, without and with chunk arrival times recorded. Run:
//
//	go test ./internal/load -run '^$' -bench ClientCPUPerChunk -benchtime 4x -count 5
//
// To compare the two, run each in its own process (-bench 'ClientCPUPerChunk/chunk_times$'),
// interleaved: the second subtest runs among the first's ~10 000 TIME_WAIT sockets, and read
// 5-7 % higher that way than in a process of its own.
func BenchmarkClientCPUPerChunk(b *testing.B) {
	const streams, chunks = 512, 256
	raiseNoFile()
	base, stop := startServerProcess(b, burstServerEnv+"="+strconv.Itoa(chunks))
	defer stop()
	for _, chunkTimes := range []bool{false, true} {
		name := "plain"
		if chunkTimes {
			name = "chunk_times"
		}
		b.Run(name, func(b *testing.B) {
			client, err := NewClient(ClientConfig{BaseURL: base, Model: "m", RecordChunkTimes: chunkTimes})
			if err != nil {
				b.Fatal(err)
			}
			var cpu time.Duration
			for b.Loop() {
				before := cpuTime()
				var wg sync.WaitGroup
				for i := range streams {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r := client.Do(context.Background(), "p"+strconv.Itoa(i), chunks)
						if !r.OK() || r.ContentChunks != chunks {
							b.Errorf("stream %d: %d chunks, %s", i, r.ContentChunks, r.Err)
						}
					}()
				}
				wg.Wait()
				cpu += cpuTime() - before
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*streams*chunks), "cpu_ns/chunk")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkClientRead is the client's own work per streamed chunk without the network: SSE
// framing, chunk decoding and timing of a 256-chunk stream read from memory, without and
// with chunk arrival times. It moves far less on a busy machine than the figure above, so
// it shows what chunk times add. Run:
//
//	go test ./internal/load -run '^$' -bench ClientRead -cpu 1 -count 10
func BenchmarkClientRead(b *testing.B) {
	const chunks = 256
	stream := sampleStream(chunks)
	for _, chunkTimes := range []bool{false, true} {
		name := "plain"
		if chunkTimes {
			name = "chunk_times"
		}
		b.Run(name, func(b *testing.B) {
			client, err := NewClient(ClientConfig{BaseURL: "http://127.0.0.1:1", Model: "m", RecordChunkTimes: chunkTimes})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			rd := bytes.NewReader(stream)
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(stream)
				rec := RequestResult{RequestedOutputTokens: chunks, Sent: time.Now()}
				client.read(ctx, ctx, rd, "text/event-stream", &rec, Request{})
				if rec.ContentChunks != chunks || rec.Err != "" {
					b.Fatalf("%d chunks, %s", rec.ContentChunks, rec.Err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chunks), "ns/chunk")
		})
	}
}
