package compare

import (
	"slices"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// RecordsSamples reads a trial's successful measured requests from its records file, and
// gives nothing for a file that is missing or not the document's.
func TestRecordsSamples(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ptr64 := func(v int64) *int64 { return &v }
	ptrI := func(v int) *int { return &v }
	ptrS := func(v string) *string { return &v }
	line := func(kind string, i int, ttftMs int64, status int) records.Line {
		sent := int64(1_700_000_000_000_000_000) + int64(i)*1e9
		l := records.Line{Workload: "w", Concurrency: 2, Trial: 1, Kind: kind, Index: i,
			SentNs: ptr64(sent), HeadersNs: ptr64(sent), FirstTokenNs: ptr64(sent + ttftMs*1e6), LastTokenNs: ptr64(sent + ttftMs*1e6 + 70e6),
			Chunks: 8, PromptTokens: ptrI(64), CompletionTokens: ptrI(8), FinishReason: ptrS("length"), HTTPStatus: ptrI(status)}
		if status != 200 {
			l.ErrorKind, l.Error = ptrS("http_status"), ptrS("HTTP 503")
		}
		return l
	}
	lines := []records.Line{
		line(records.KindWarmup, 0, 999, 200), // not measured
		line(records.KindMeasured, 1, 100, 200),
		line(records.KindMeasured, 2, 120, 200),
		line(records.KindMeasured, 3, 500, 503), // failed: not a value
		line(records.KindMeasured, 4, 140, 200),
	}
	sum, err := records.Write(dir, "01-w/confirmation-c002-1.jsonl", lines)
	if err != nil {
		t.Fatal(err)
	}
	samples := RecordsSamples(dir)
	trial := results.Trial{RecordsFile: "01-w/confirmation-c002-1.jsonl", RecordsSHA256: sum}

	got, ok := samples("w", trial, results.MetricTTFT)
	slices.Sort(got)
	if !ok || !slices.Equal(got, []float64{100, 120, 140}) {
		t.Errorf("TTFT samples %v (%v), want 100, 120, 140 ms", got, ok)
	}
	// ITL = (latency − TTFT) / (8 − 1) = 70 / 7 = 10 ms for each.
	if got, ok := samples("w", trial, results.MetricITL); !ok || !slices.Equal(got, []float64{10, 10, 10}) {
		t.Errorf("ITL samples %v (%v), want 10 ms thrice", got, ok)
	}
	for name, tr := range map[string]results.Trial{
		"no file named": {},
		"another file":  {RecordsFile: "01-w/confirmation-c002-1.jsonl", RecordsSHA256: "00"},
		"missing file":  {RecordsFile: "01-w/confirmation-c003-1.jsonl"},
	} {
		if got, ok := samples("w", tr, results.MetricTTFT); ok {
			t.Errorf("%s: samples %v", name, got)
		}
	}
}
