package load

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The ceiling of one load-generator process on one core: how many streams it holds, and
// how many chunks a second it reads, before what it adds to the time to first token passes
// 1 ms and 5 ms at the 99th percentile. A server in a child process (on other CPUs) keeps a
// closed loop of streams busy, each decoding a chunk every 20 ms (50 tokens/s per user, as a
// GPU decodes a mid-sized model); every request's first chunk carries the server's wall
// clock just before it was written, and the client's addition is its FirstContent minus
// that. Run on a machine with at least two CPUs, the client alone on one:
//
//	taskset -c 0 go test ./internal/load -run '^$' -bench ClientCeiling -cpu 1 -benchtime 1x \
//	    -args -ceiling.server-cpus 1-15
//
// Each sub-benchmark is one level of streams; chunks/s is what the client read, cpu_% its
// CPU time over the round's wall clock (100: the whole core).

// ceilingServerEnv makes the test binary the ceiling benchmark's server: its value is the
// chunks per response.
const ceilingServerEnv = "LOAD_BENCH_CEILING_SERVER"

// ceilingChunkEvery is each stream's decode step.
const ceilingChunkEvery = 20 * time.Millisecond

// runCeilingServer streams n content chunks per request, one every ceilingChunkEvery, the
// first carrying "T<unix ns>" taken just before it is written, then usage and [DONE].
func runCeilingServer(n int) {
	raiseNoFile()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	next := []byte("data: " + contentChunk(" tok") + "\n\n")
	end := []byte(`data: {"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":` + strconv.Itoa(n) + `,"total_tokens":` + strconv.Itoa(n+8) + "}}\n\ndata: [DONE]\n\n")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		first := "data: " + contentChunk("T"+strconv.FormatInt(time.Now().UnixNano(), 10)) + "\n\n"
		if _, err := io.WriteString(w, first); err != nil {
			return
		}
		fl.Flush()
		tick := time.NewTicker(ceilingChunkEvery)
		defer tick.Stop()
		for range n - 1 {
			select {
			case <-tick.C:
			case <-r.Context().Done():
				return
			}
			if _, err := w.Write(next); err != nil {
				return
			}
			fl.Flush()
		}
		_, _ = w.Write(end)
	})}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	_ = srv.Serve(ln)
}

var ceilingServerCPUs = flag.String("ceiling.server-cpus", "", "CPUs (taskset list) the ceiling benchmark's server runs on; empty: any")

// BenchmarkClientCeiling sweeps the streams one process holds; see the notes above.
func BenchmarkClientCeiling(b *testing.B) {
	const chunks = 50 // a second of decoding a request: first tokens keep coming
	raiseNoFile()
	base, stop := startCeilingServer(b, chunks)
	defer stop()
	for _, streams := range []int{1, 16, 64, 256, 512, 1024, 2048, 4096} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			var added []time.Duration
			var read int
			var cpu, wall time.Duration
			for b.Loop() {
				a, n, c, w := ceilingRound(b, base, streams, chunks)
				added, read, cpu, wall = append(added, a...), read+n, cpu+c, wall+w
			}
			slices.Sort(added)
			b.ReportMetric(float64(read)/wall.Seconds(), "chunks/s")
			b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "cpu_%")
			b.ReportMetric(float64(pctDur(added, 50))/1e3, "ttft_added_p50_us")
			b.ReportMetric(float64(pctDur(added, 99))/1e3, "ttft_added_p99_us")
			b.ReportMetric(float64(added[len(added)-1])/1e3, "ttft_added_max_us")
		})
	}
}

// ceilingRound runs a closed loop of streams for three responses a stream (48 at least)
// after a first wave, and returns what the client added to each measured first token, the chunks it read
// and its CPU time over the measured phase's wall clock.
func ceilingRound(b *testing.B, base string, streams, chunks int) (added []time.Duration, read int, cpu, wall time.Duration) {
	client, err := NewClient(ClientConfig{BaseURL: base, Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	prompts := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "p" + strconv.Itoa(i)
		}
		return out
	}
	var cpu0 time.Duration
	spec := TrialSpec{Concurrency: streams, Warmup: prompts(streams), Measured: prompts(max(3*streams, 48)), OutputTokens: chunks,
		BeforeMeasured: func() { cpu0 = cpuTime() }}
	res, err := RunTrial(b.Context(), keepText{client}, spec)
	if err != nil {
		b.Fatal(err)
	}
	cpu = cpuTime() - cpu0
	wall = res.MeasuredEnd.Sub(res.MeasuredStart)
	for _, r := range res.Measured() {
		if !r.OK() {
			b.Fatalf("stream failed: %s", r.Err)
		}
		read += r.ContentChunks
		stamp, ok := strings.CutPrefix(strings.SplitN(r.Text, " ", 2)[0], "T")
		ns, err := strconv.ParseInt(stamp, 10, 64)
		if !ok || err != nil {
			b.Fatalf("first chunk %q carries no server time", r.Text)
		}
		added = append(added, time.Duration(r.FirstContent.UnixNano()-ns))
	}
	return added, read, cpu, wall
}

// keepText asks the client to keep each response's text, where the server's time is.
type keepText struct{ c *Client }

func (k keepText) Stream(ctx context.Context, req Request) RequestResult {
	req.KeepText = true
	return k.c.Stream(ctx, req)
}

// startCeilingServer starts the server child, on ceiling.server-cpus when given.
func startCeilingServer(b *testing.B, chunks int) (string, func()) {
	if *ceilingServerCPUs == "" {
		return startServerProcess(b, ceilingServerEnv+"="+strconv.Itoa(chunks))
	}
	path, err := exec.LookPath("taskset")
	if err != nil {
		b.Fatalf("-ceiling.server-cpus needs taskset: %v", err)
	}
	return startServerCommand(b, exec.Command(path, "-c", *ceilingServerCPUs, os.Args[0], "-test.run=^$"), ceilingServerEnv+"="+strconv.Itoa(chunks))
}
