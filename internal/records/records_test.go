package records

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/degenerate"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
)

// A record written and read back keeps every time difference to the nanosecond, nulls for
// events that never happened, and the second chunk from the chunk offsets.
func TestLineRoundTrip(t *testing.T) {
	t.Parallel()
	sent := time.Now() // with a monotonic reading, as the client's
	recs := []load.RequestResult{
		{Index: 0, Warmup: true, Sent: sent, Done: sent.Add(time.Second), HTTPStatus: 503, Err: "HTTP 503 from http://h/v1", Failure: load.FailHTTPStatus},
		{Index: 1, Sent: sent.Add(3 * time.Nanosecond), Headers: sent.Add(5 * time.Millisecond), FirstContent: sent.Add(100*time.Millisecond + 7),
			SecondContent: sent.Add(130 * time.Millisecond), LastContent: sent.Add(400 * time.Millisecond), Done: sent.Add(401 * time.Millisecond),
			ContentChunks: 3, UsageReported: true, PromptTokens: 60, CompletionTokens: 9, FinishReason: "length", HTTPStatus: 200,
			Connect: 2 * time.Millisecond, ChunkOffsets: []time.Duration{100*time.Millisecond + 4, 130*time.Millisecond - 3, 400*time.Millisecond - 3}},
		{Index: 2, Sent: sent.Add(time.Millisecond), Done: sent.Add(2 * time.Millisecond), Cancelled: true},
	}
	lines := FromLoad(Trial{Workload: "w", Concurrency: 2, Index: 1, ChunkTimes: true}, recs)
	if *lines[1].SentNs-*lines[0].SentNs != 3 || *lines[1].FirstTokenNs-*lines[1].SentNs != int64(100*time.Millisecond+4) {
		t.Fatalf("differences not kept: %+v", lines[1])
	}
	if lines[0].Kind != KindWarmup || lines[0].FirstTokenNs != nil || lines[0].PromptTokens != nil || *lines[0].ErrorKind != "http_status" || *lines[0].HTTPStatus != 503 {
		t.Fatalf("warmup line %+v", lines[0])
	}
	if *lines[2].ErrorKind != ErrorKindCancelled || lines[2].HTTPStatus != nil || lines[2].Error != nil {
		t.Fatalf("cancelled line %+v", lines[2])
	}
	path := filepath.Join(t.TempDir(), "a", "b.jsonl")
	sum, err := Write(filepath.Dir(filepath.Dir(path)), "a/b.jsonl", lines)
	if err != nil {
		t.Fatal(err)
	}
	back, sum2, err := Read(path)
	if err != nil || sum2 != sum || len(back) != 3 {
		t.Fatalf("read back %d lines, %v, sums %s %s", len(back), err, sum, sum2)
	}
	r := back[1].RequestResult()
	orig := recs[1]
	for name, pair := range map[string][2]time.Duration{
		"ttft":    {r.FirstContent.Sub(r.Sent), orig.FirstContent.Sub(orig.Sent)},
		"latency": {r.LastContent.Sub(r.Sent), orig.LastContent.Sub(orig.Sent)},
		"second":  {r.SecondContent.Sub(r.FirstContent), 30*time.Millisecond - 7},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s: %v, want %v", name, pair[0], pair[1])
		}
	}
	if !r.UsageReported || r.CompletionTokens != 9 || r.ContentChunks != 3 || r.Warmup || !back[0].RequestResult().Warmup || !back[2].RequestResult().Cancelled ||
		back[0].RequestResult().Failure != load.FailHTTPStatus {
		t.Errorf("record back %+v", r)
	}
	if got := FileName(0, "2K / 512", "probe", 8, 1); got != filepath.Join("01-2k-512", "probe-c008-1.jsonl") {
		t.Errorf("FileName = %q", got)
	}
}

// issueKeys are the keys of every records line, as issue 11 lists them; chunk_offsets_ns
// joins them with record_chunk_times.
var issueKeys = []string{
	"workload", "concurrency", "trial", "kind", "index", "sent_ns", "headers_ns", "first_token_ns", "last_token_ns",
	"chunks", "prompt_tokens", "completion_tokens", "cached_tokens", "finish_reason", "http_status", "error_kind", "error",
	// Since issue 29, what the degenerate-output rules read.
	"prompt_hash", "output_hash", "output_code_points", "dominant_code_point", "dominant_code_points", "output_head",
}

// Every line of a written file has exactly the promised keys, whatever happened to its
// request: chunk_offsets_ns on every line with chunk times ([] where nothing streamed), on
// none without; no end-of-response or connection time, although the records hold them.
func TestRecordsFileKeys(t *testing.T) {
	t.Parallel()
	sent := time.Now()
	cached := 7
	none, two := degenerate.Of(""), degenerate.Of("ab")
	recs := []load.RequestResult{
		{Index: 0, Warmup: true, Sent: sent, Done: sent.Add(time.Second), HTTPStatus: 503, Err: "HTTP 503", Failure: load.FailHTTPStatus, Connect: time.Millisecond, Output: &none},
		{Index: 1, Sent: sent.Add(time.Millisecond), Headers: sent.Add(2 * time.Millisecond), FirstContent: sent.Add(3 * time.Millisecond),
			SecondContent: sent.Add(4 * time.Millisecond), LastContent: sent.Add(5 * time.Millisecond), Done: sent.Add(6 * time.Millisecond),
			ContentChunks: 2, UsageReported: true, PromptTokens: 9, CompletionTokens: 2, CachedTokens: &cached, FinishReason: "length",
			HTTPStatus: 200, Connect: time.Millisecond, TLSHandshake: time.Millisecond, ChunkOffsets: []time.Duration{2 * time.Millisecond, 3 * time.Millisecond},
			PromptHash: 1, OutputHash: 2, Output: &two},
		{Index: 2, Sent: sent.Add(time.Millisecond), Err: "connection refused", Failure: load.FailReset, Output: &none},
		{Index: 3, Sent: sent.Add(time.Millisecond), Done: sent.Add(time.Millisecond), Cancelled: true, Output: &none},
	}
	for _, chunkTimes := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunk_times=%t", chunkTimes), func(t *testing.T) {
			in := slices.Clone(recs)
			if !chunkTimes {
				in[1].ChunkOffsets = nil // the client records none
			}
			dir := t.TempDir()
			if _, err := Write(dir, "t.jsonl", FromLoad(Trial{Workload: "w", Concurrency: 4, Index: 1, ChunkTimes: chunkTimes}, in)); err != nil {
				t.Fatal(err)
			}
			body, err := os.ReadFile(filepath.Join(dir, "t.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(issueKeys)
			if chunkTimes {
				want = append(want, "chunk_offsets_ns")
			}
			slices.Sort(want)
			raw := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
			if len(raw) != len(recs) {
				t.Fatalf("%d lines for %d requests", len(raw), len(recs))
			}
			for i, line := range raw {
				var m map[string]json.RawMessage
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("line %d: %v", i+1, err)
				}
				got := slices.Sorted(maps.Keys(m))
				if !slices.Equal(got, want) {
					t.Errorf("line %d keys %v\nwant %v", i+1, got, want)
				}
			}
			if chunkTimes && !strings.Contains(raw[1], `"chunk_offsets_ns":[2000000,3000000]`) || chunkTimes && !strings.Contains(raw[2], `"chunk_offsets_ns":[]`) {
				t.Errorf("chunk offsets:\n%s", body)
			}
		})
	}
}

// BenchmarkRecordsFileSize reports the size of a records file per 1 000 requests of 512
// output tokens streamed one token per chunk, with and without chunk times.
func BenchmarkRecordsFileSize(b *testing.B) {
	for _, chunkTimes := range []bool{false, true} {
		name := "without_chunk_times"
		if chunkTimes {
			name = "with_chunk_times"
		}
		b.Run(name, func(b *testing.B) {
			sent := time.Now()
			recs := make([]load.RequestResult, 1000)
			for i := range recs {
				s := sent.Add(time.Duration(i) * 37 * time.Millisecond)
				r := load.RequestResult{Index: i, Sent: s, Headers: s.Add(3 * time.Millisecond), FirstContent: s.Add(812 * time.Millisecond),
					LastContent: s.Add(19 * time.Second), Done: s.Add(19*time.Second + 400*time.Microsecond), ContentChunks: 512,
					UsageReported: true, PromptTokens: 2101, CompletionTokens: 512, FinishReason: "length", HTTPStatus: 200}
				if chunkTimes {
					for c := range 512 {
						r.ChunkOffsets = append(r.ChunkOffsets, 812*time.Millisecond+time.Duration(c)*35531*time.Microsecond/1000)
					}
				}
				recs[i] = r
			}
			dir := b.TempDir()
			var size int64
			for b.Loop() {
				lines := FromLoad(Trial{Workload: "2K / 512", Concurrency: 11, Index: 1, ChunkTimes: chunkTimes}, recs)
				if _, err := Write(dir, "t.jsonl", lines); err != nil {
					b.Fatal(err)
				}
				st, err := os.Stat(filepath.Join(dir, "t.jsonl"))
				if err != nil {
					b.Fatal(err)
				}
				size = st.Size()
			}
			b.ReportMetric(float64(size)/1024, "KiB/1000req")
		})
	}
}

// The hand-written encoder writes what encoding/json would (HTML characters aside, which it
// leaves unescaped), so any JSON reader reads a records file.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	sent := time.Now()
	lines := FromLoad(Trial{Workload: `q "x" \ y`, Concurrency: 3, Index: 2, ChunkTimes: true}, []load.RequestResult{
		{Index: 0, Sent: sent, FirstContent: sent.Add(5), SecondContent: sent.Add(6), LastContent: sent.Add(9), Done: sent.Add(10), ContentChunks: 2,
			UsageReported: true, PromptTokens: 4, CompletionTokens: 2, FinishReason: "length", HTTPStatus: 200, ChunkOffsets: []time.Duration{5, 9}},
		{Index: 1, Warmup: true, Sent: sent, Done: sent.Add(3), HTTPStatus: 500, Err: "HTTP 500: \"boom\"\n", Failure: load.FailHTTPStatus},
	})
	for _, l := range lines {
		want, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(l.appendJSON(nil)); got != string(want)+"\n" {
			t.Errorf("appendJSON\n got %s\nwant %s", got, want)
		}
	}
}
