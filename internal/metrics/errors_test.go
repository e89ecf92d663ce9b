package metrics

import (
	"reflect"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

func TestErrorSummary(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	ok := func(osl int) load.RequestResult {
		return load.RequestResult{HTTPStatus: 200, Sent: t0, FirstContent: t0.Add(time.Second), LastContent: t0.Add(2 * time.Second),
			UsageReported: true, CompletionTokens: osl, FinishReason: "length", RequestedOutputTokens: 100}
	}
	failed := func(kind load.FailureKind, status int, msg string) load.RequestResult {
		return load.RequestResult{HTTPStatus: status, Failure: kind, Err: msg, Sent: t0, Done: t0.Add(time.Second)}
	}
	tests := []struct {
		name    string
		records []load.RequestResult
		want    []results.ErrorCount
	}{
		{name: "all fine", records: []load.RequestResult{ok(100), ok(97)}, want: nil},
		{
			name: "by kind and status, most frequent first, first example kept",
			records: []load.RequestResult{
				ok(100),
				failed(load.FailHTTPStatus, 503, "HTTP 503 a"),
				failed(load.FailStalled, 200, "stalled 1"),
				failed(load.FailHTTPStatus, 429, "HTTP 429"),
				failed(load.FailHTTPStatus, 503, "HTTP 503 b"),
				failed(load.FailStalled, 200, "stalled 2"),
				failed(load.FailStalled, 200, "stalled 3"),
			},
			want: []results.ErrorCount{
				{Kind: "stalled", Count: 3, Example: "stalled 1"},
				{Kind: "http_status", HTTPStatus: 503, Count: 2, Example: "HTTP 503 a"},
				{Kind: "http_status", HTTPStatus: 429, Count: 1, Example: "HTTP 429"},
			},
		},
		{
			name: "warmups and cancelled requests are not counted",
			records: []load.RequestResult{
				{Warmup: true, HTTPStatus: 500, Failure: load.FailHTTPStatus, Err: "warmup"},
				{Cancelled: true, Sent: t0},
				failed(load.FailReset, 0, "reset"),
			},
			want: []results.ErrorCount{{Kind: "reset", Count: 1, Example: "reset"}},
		},
		{
			name: "no content and length mismatch (tolerance min(5 %, 50) of 100 = 5)",
			records: []load.RequestResult{
				{HTTPStatus: 200, Sent: t0, Done: t0, FinishReason: "stop"},
				ok(94), ok(95), ok(106),
			},
			want: []results.ErrorCount{
				{Kind: "length_mismatch", Count: 2, Example: `requested 100 output tokens, the server generated 94 (finish_reason "length")`},
				{Kind: "no_content", Count: 1, Example: `HTTP 200 stream finished without a content chunk (finish_reason "stop")`},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ErrorSummary(tc.records, 0)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ErrorSummary =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestDescribeErrors(t *testing.T) {
	t.Parallel()
	in := []results.ErrorCount{{Kind: "http_status", HTTPStatus: 503, Count: 3, Example: "h1"}, {Kind: "stalled", Count: 1, Example: "s1"}}
	if d := DescribeErrors(in); d != `3 HTTP 503 (e.g. "h1"), 1 stalled (e.g. "s1")` {
		t.Fatalf("DescribeErrors = %s", d)
	}
}
