package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// holdServerEnv makes the test binary act as a streaming server that holds every stream
// open after its first chunk, so the memory benchmark measures the client alone.
const holdServerEnv = "LOAD_BENCH_HOLD_SERVER"

// fidelityServerEnv makes the test binary act as the timing-fidelity server, so the client
// process runs nothing but the client, as it does against a real engine.
const fidelityServerEnv = "LOAD_BENCH_FIDELITY_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(holdServerEnv) == "1" {
		runHoldServer()
		return
	}
	if n, err := strconv.Atoi(os.Getenv(fidelityServerEnv)); err == nil && n > 0 {
		runFidelityServer(n)
		return
	}
	if n, err := strconv.Atoi(os.Getenv(burstServerEnv)); err == nil && n > 0 {
		runBurstServer(n)
		return
	}
	if n, err := strconv.Atoi(os.Getenv(ceilingServerEnv)); err == nil && n > 0 {
		runCeilingServer(n)
		return
	}
	os.Exit(m.Run())
}

func runHoldServer() {
	raiseNoFile()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	chunk := []byte("data: " + contentChunk("hello") + "\n\n")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(chunk)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})}
	// The parent closes stdin when it is done; exit then.
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	_ = srv.Serve(ln)
}

// runFidelityServer serves fidelityHandler's n streams in this (child) process; GET /emits
// returns, per prompt, the wall-clock UnixNano right after its first chunk was flushed.
func runFidelityServer(n int) {
	raiseNoFile()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	var mu sync.Mutex
	emitted := make(map[string]int64, n)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /emits", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		_ = json.NewEncoder(w).Encode(emitted)
	})
	mux.Handle("/", fidelityHandler(n, func(p string, at time.Time) {
		mu.Lock()
		emitted[p] = at.UnixNano() // wall clock: compared across processes
		mu.Unlock()
	}))
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	_ = (&http.Server{Handler: mux}).Serve(ln)
}

// BenchmarkTimingFidelityServerProcess is BenchmarkTimingFidelity with the server in a child
// process, as a real engine is: client FirstContent minus the server's first-chunk flush, both
// read from the system's wall clock, over 512 concurrent streams on loopback.
func BenchmarkTimingFidelityServerProcess(b *testing.B) {
	const streams = 512
	raiseNoFile()
	var diffs []time.Duration
	for i := 0; i < b.N; i++ {
		diffs = append(diffs, fidelityProcessRound(b, streams)...)
	}
	sort.Slice(diffs, func(i, j int) bool { return diffs[i] < diffs[j] })
	b.ReportMetric(float64(pctDur(diffs, 50).Nanoseconds())/1e3, "p50_us")
	b.ReportMetric(float64(pctDur(diffs, 99).Nanoseconds())/1e3, "p99_us")
	b.ReportMetric(float64(diffs[len(diffs)-1].Nanoseconds())/1e3, "max_us")
}

func fidelityProcessRound(b *testing.B, streams int) []time.Duration {
	base, stop := startServerProcess(b, fidelityServerEnv+"="+strconv.Itoa(streams))
	defer stop()
	client, err := NewClient(ClientConfig{BaseURL: base, Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	recs := streamAll(b, client, streams)
	resp, err := http.Get(base + "/emits")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var emitted map[string]int64
	if err := json.NewDecoder(resp.Body).Decode(&emitted); err != nil {
		b.Fatal(err)
	}
	out := make([]time.Duration, 0, streams)
	for i, r := range recs {
		out = append(out, time.Duration(r.FirstContent.UnixNano()-emitted["s"+strconv.Itoa(i)]))
	}
	return out
}

// fidelityHandler serves n streams for the timing-fidelity benchmarks: it waits until all n
// requests have arrived, then sends each stream's first chunk 1 ms after the previous one
// while the others keep streaming at 50 chunks/s, and calls emitted right after each first
// chunk was flushed.
func fidelityHandler(n int, emitted func(prompt string, at time.Time)) http.HandlerFunc {
	var arrived sync.WaitGroup
	arrived.Add(n)
	allArrived := make(chan struct{})
	go func() { arrived.Wait(); close(allArrived) }()
	var t0 time.Time
	var t0Once sync.Once
	first := []byte("data: " + contentChunk("first") + "\n\n")
	next := []byte("data: " + contentChunk(" tok") + "\n\n")
	return func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		p := body.Messages[0].Content
		idx, _ := strconv.Atoi(strings.TrimPrefix(p, "s"))
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		fl.Flush()
		arrived.Done()
		<-allArrived
		t0Once.Do(func() { t0 = time.Now().Add(20 * time.Millisecond) })
		time.Sleep(time.Until(t0.Add(time.Duration(idx) * time.Millisecond)))
		_, _ = w.Write(first)
		fl.Flush()
		emitted(p, time.Now())
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for k := 0; k < 20; k++ {
			<-tick.C
			_, _ = w.Write(next)
			fl.Flush()
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}
}

// startServerProcess runs this test binary as a server (env selects which, see TestMain) in
// a child process, so a benchmark measures the client alone. It returns the server's base
// URL and a stop that closes the child's stdin, which makes it exit, and waits for it.
func startServerProcess(b *testing.B, env string) (base string, stop func()) {
	return startServerCommand(b, exec.Command(os.Args[0], "-test.run=^$"), env)
}

// startServerCommand is startServerProcess with the command that runs this test binary
// given (under taskset, say).
func startServerCommand(b *testing.B, cmd *exec.Cmd, env string) (base string, stop func()) {
	cmd.Env = append(os.Environ(), env)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop = func() {
		stdin.Close()
		_ = cmd.Wait()
	}
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		b.Fatalf("server process (%s): %v", env, err)
	}
	return "http://" + strings.TrimSpace(addr), stop
}

func raiseNoFile() {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
}

// sampleStream is n chunks shaped like vLLM's/SGLang's (id, model, created, one choice with
// a short delta), ending with usage and [DONE].
func sampleStream(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `data: {"id":"chatcmpl-8c1e2f0a9b7d4e6f","object":"chat.completion.chunk","created":1718000000,"model":"qwen","choices":[{"index":0,"delta":{"content":" tok%d"},"logprobs":null,"finish_reason":null}],"usage":null}`+"\n\n", i%1000)
	}
	b.WriteString(`data: {"id":"chatcmpl-8c1e2f0a9b7d4e6f","object":"chat.completion.chunk","created":1718000000,"model":"qwen","choices":[],"usage":{"prompt_tokens":2099,"completion_tokens":512,"total_tokens":2611}}` + "\n\ndata: [DONE]\n\n")
	return b.Bytes()
}

// BenchmarkSSEParse reports chunks parsed per second; run with -cpu 1 for the per-core figure.
func BenchmarkSSEParse(b *testing.B) {
	const chunks = 4096
	stream := sampleStream(chunks)
	rd := bytes.NewReader(stream)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	b.ResetTimer()
	total := 0
	for i := 0; i < b.N; i++ {
		rd.Reset(stream)
		sr := NewSSEReader(rd)
		for {
			ev, err := sr.Next()
			if err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
			total += len(ev.Content)
		}
	}
	b.ReportMetric(float64(b.N)*(chunks+2)/b.Elapsed().Seconds(), "chunks/s")
	if total == 0 {
		b.Fatal("no content parsed")
	}
}

// BenchmarkSSEParseEncodingJSON is the reflection-based baseline the targeted decoder is
// measured against.
func BenchmarkSSEParseEncodingJSON(b *testing.B) {
	const chunks = 4096
	stream := sampleStream(chunks)
	type chunk struct {
		Choices []struct {
			Delta struct {
				Content          string `json:"content"`
				ReasoningContent string `json:"reasoning_content"`
			} `json:"delta"`
			Text         string  `json:"text"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sc := bufio.NewScanner(bytes.NewReader(stream))
		for sc.Scan() {
			line := sc.Bytes()
			if !bytes.HasPrefix(line, []byte("data: ")) || bytes.Equal(line[6:], []byte("[DONE]")) {
				continue
			}
			var c chunk
			if err := json.Unmarshal(line[6:], &c); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N)*(chunks+2)/b.Elapsed().Seconds(), "chunks/s")
}

// BenchmarkTimingFidelity: 512 concurrent streams on loopback, each decoding a chunk every
// 20 ms (50 tokens/s per user, 25 600 chunks/s in all). The server notes the time right after
// writing and flushing a stream's first content chunk (first chunks are spread 1 ms apart, as a
// busy server emits them); the figure is the client's FirstContent minus that emit time.
func BenchmarkTimingFidelity(b *testing.B) {
	const streams = 512
	raiseNoFile()
	var diffs []time.Duration
	for i := 0; i < b.N; i++ {
		diffs = append(diffs, fidelityRound(b, streams)...)
	}
	sort.Slice(diffs, func(i, j int) bool { return diffs[i] < diffs[j] })
	b.ReportMetric(float64(pctDur(diffs, 50).Nanoseconds())/1e3, "p50_us")
	b.ReportMetric(float64(pctDur(diffs, 99).Nanoseconds())/1e3, "p99_us")
	b.ReportMetric(float64(diffs[len(diffs)-1].Nanoseconds())/1e3, "max_us")
}

func pctDur(sorted []time.Duration, p float64) time.Duration {
	rank := p / 100 * float64(len(sorted)-1)
	lo := int(rank)
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	frac := rank - float64(lo)
	return sorted[lo] + time.Duration(frac*float64(sorted[lo+1]-sorted[lo]))
}

func fidelityRound(b *testing.B, streams int) []time.Duration {
	var mu sync.Mutex
	emitted := make(map[string]time.Time, streams)
	srv := httptest.NewServer(fidelityHandler(streams, func(p string, at time.Time) {
		mu.Lock()
		emitted[p] = at
		mu.Unlock()
	}))
	defer srv.Close()
	client, err := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	recs := streamAll(b, client, streams)
	out := make([]time.Duration, 0, streams)
	for i, r := range recs {
		out = append(out, r.FirstContent.Sub(emitted["s"+strconv.Itoa(i)]))
	}
	return out
}

// streamAll opens the fidelity benchmarks' streams "s0".."s<n-1>" at once and waits for all.
func streamAll(b *testing.B, client *Client, streams int) []RequestResult {
	recs := make([]RequestResult, streams)
	var wg sync.WaitGroup
	for i := 0; i < streams; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			recs[i] = client.Do(context.Background(), "s"+strconv.Itoa(i), 21)
		}()
	}
	wg.Wait()
	for i, r := range recs {
		if !r.OK() {
			b.Fatalf("stream %d failed: %s", i, r.Err)
		}
	}
	return recs
}

// BenchmarkOpenStreams10k holds 10 000 streams open mid-response against a server in a child
// process and reports the client's memory per open stream.
func BenchmarkOpenStreams10k(b *testing.B) {
	const streams = 10000
	raiseNoFile()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < streams+200 {
		b.Skipf("RLIMIT_NOFILE %d is below %d", lim.Cur, streams+200)
	}
	// With chunk times every stream reserves its offsets (max_tokens 1000: 8 KB) up front.
	for _, chunkTimes := range []bool{false, true} {
		name := "plain"
		if chunkTimes {
			name = "chunk_times"
		}
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				heap, rss := openStreamsRound(b, streams, chunkTimes)
				b.ReportMetric(heap/streams, "heap_B/stream")
				b.ReportMetric(rss/streams, "rss_B/stream")
				b.ReportMetric(heap/(1<<20), "heap_MiB_total")
				b.ReportMetric(rss/(1<<20), "rss_MiB_total")
			}
		})
	}
}

func openStreamsRound(b *testing.B, streams int, chunkTimes bool) (heapDelta, rssDelta float64) {
	base, stop := startServerProcess(b, holdServerEnv+"=1")
	defer stop()
	client, err := NewClient(ClientConfig{BaseURL: base, Model: "m", RecordChunkTimes: chunkTimes})
	if err != nil {
		b.Fatal(err)
	}

	runtime.GC()
	debug.FreeOSMemory()
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	rss0 := rssBytes()

	ctx, cancel := context.WithCancel(context.Background())
	var open, done sync.WaitGroup
	open.Add(streams)
	done.Add(streams)
	var failed sync.Once
	for i := 0; i < streams; i++ {
		go func() {
			defer done.Done()
			opened := false
			rec := client.Stream(ctx, Request{Prompt: "p" + strconv.Itoa(i), MaxTokens: 1000, OnFirstContent: func(RequestResult) {
				opened = true
				open.Done()
			}})
			if !opened {
				failed.Do(func() { b.Errorf("stream %d ended before its first chunk: %s", i, rec.Err) })
				open.Done()
			}
		}()
		if i%500 == 499 {
			time.Sleep(20 * time.Millisecond) // stay under the listen backlog
		}
	}
	open.Wait()
	runtime.GC()
	var ms1 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	rss1 := rssBytes()
	cancel()
	done.Wait()

	// Heap in use plus goroutine stacks: what the open streams hold.
	heapDelta = float64((ms1.HeapInuse + ms1.StackInuse) - (ms0.HeapInuse + ms0.StackInuse))
	rssDelta = float64(rss1 - rss0)
	return heapDelta, rssDelta
}

func rssBytes() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseUint(f[1], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}
