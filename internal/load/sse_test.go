package load

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// got is a comparable summary of one parsed event.
type got struct {
	Done             bool
	Content          string
	FinishReason     string
	HasUsage         bool
	PromptTokens     int
	CompletionTokens int
	HasCachedTokens  bool
	CachedTokens     int
	HasTimings       bool
	Timings          ServerTimings
	Error            string
	Malformed        bool
}

func parseAll(t testing.TB, r io.Reader) ([]got, error) {
	t.Helper()
	sr := NewSSEReader(r)
	var out []got
	for {
		ev, err := sr.Next()
		if err == io.EOF {
			return out, nil
		}
		malformed := errors.Is(err, ErrMalformedEvent)
		if err != nil && !malformed {
			return out, err
		}
		out = append(out, got{
			Done: ev.Done, Content: string(ev.Content), FinishReason: ev.FinishReason,
			HasUsage: ev.HasUsage, PromptTokens: ev.PromptTokens, CompletionTokens: ev.CompletionTokens,
			HasCachedTokens: ev.HasCachedTokens, CachedTokens: ev.CachedTokens,
			HasTimings: ev.HasTimings, Timings: ev.Timings, Error: ev.Error, Malformed: malformed,
		})
	}
}

func TestSSEReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		input string
		want  []got
	}{
		{
			name:  "chat content then usage chunk with empty choices then done",
			input: "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"finish_reason\":null}],\"usage\":null}\n\n" + "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"length\"}]}\n\n" + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":2099,\"completion_tokens\":512,\"total_tokens\":2611}}\n\n" + "data: [DONE]\n\n",
			want: []got{
				{Content: "Hel"},
				{Content: "lo", FinishReason: "length"},
				{HasUsage: true, PromptTokens: 2099, CompletionTokens: 512},
				{Done: true},
			},
		},
		{
			// vLLM --enable-prompt-tokens-details / SGLang --enable-cache-report; a null
			// details object (the flag off) says nothing, and is not 0.
			name: "cached tokens in prompt_tokens_details",
			input: "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":32}}}\n\n" +
				"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":2,\"prompt_tokens_details\":null}}\n\n" +
				"data: {\"choices\":[],\"timings\":{\"prompt_n\":8,\"cache_n\":32}}\n\n",
			want: []got{
				{HasUsage: true, PromptTokens: 40, CompletionTokens: 2, HasCachedTokens: true, CachedTokens: 32},
				{HasUsage: true, PromptTokens: 40, CompletionTokens: 2},
				{HasTimings: true, Timings: ServerTimings{PromptN: 8, CacheN: 32, HasCacheN: true}},
			},
		},
		{
			name:  "CRLF line endings",
			input: "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\r\n\r\ndata: [DONE]\r\n\r\n",
			want:  []got{{Content: "a"}, {Done: true}},
		},
		{
			name:  "keep-alive comments and other fields are ignored",
			input: ": ping\n\nid: 7\nevent: message\nretry: 100\ndata: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n: ping - 2024\n\ndata: [DONE]\n\n",
			want:  []got{{Content: "x"}, {Done: true}},
		},
		{
			name:  "multi-line data joined with newline",
			input: "data: {\"choices\":[{\"delta\":\ndata: {\"content\":\"ab\"}}]}\n\n",
			want:  []got{{Content: "ab"}},
		},
		{
			name:  "no space after colon",
			input: "data:{\"choices\":[{\"text\":\"t\"}]}\n\n",
			want:  []got{{Content: "t"}},
		},
		{
			name:  "completions text field and escapes",
			input: `data: {"choices":[{"text":"a\"b\\c\n\u00e9\ud83d\ude00\/"}]}` + "\n\n",
			want:  []got{{Content: "a\"b\\c\n\u00e9\U0001F600/"}},
		},
		{
			name:  "reasoning_content counts as content, empty content does not add",
			input: "data: {\"choices\":[{\"delta\":{\"content\":\"\",\"reasoning_content\":\"think\"}}]}\n\n" + "data: {\"choices\":[{\"delta\":{\"content\":null,\"reasoning\":\"more\"}}]}\n\n" + "data: {\"choices\":[{\"delta\":{\"content\":\"\"}}]}\n\n",
			want:  []got{{Content: "think"}, {Content: "more"}, {}},
		},
		{
			name:  "llama.cpp timings in the final chunk",
			input: `data: {"choices":[{"finish_reason":"length","index":0,"delta":{}}],"usage":{"completion_tokens":32,"prompt_tokens":130,"total_tokens":162},"timings":{"prompt_n":130,"prompt_ms":201.5,"prompt_per_token_ms":1.55,"predicted_n":32,"predicted_ms":640.25,"predicted_per_token_ms":20.0078125,"predicted_per_second":49.98}}` + "\n\n",
			want: []got{{FinishReason: "length", HasUsage: true, PromptTokens: 130, CompletionTokens: 32, HasTimings: true,
				Timings: ServerTimings{PromptMs: 201.5, PromptN: 130, PredictedMs: 640.25, PredictedN: 32, PredictedPerTokenMs: 20.0078125}}},
		},
		{
			name:  "error object inside the stream",
			input: `data: {"error":{"message":"context length exceeded","type":"invalid_request_error","code":400}}` + "\n\n",
			want:  []got{{Error: "context length exceeded"}},
		},
		{
			name:  "vLLM error shape",
			input: `data: {"object":"error","message":"out of KV cache","type":"InternalServerError","code":500}` + "\n\n",
			want:  []got{{Error: "out of KV cache"}},
		},
		{
			name:  "string error and event: error",
			input: "data: {\"error\":\"boom\"}\n\nevent: error\ndata: {\"detail\":\"bad\"}\n\n",
			want:  []got{{Error: "boom"}, {Error: `{"detail":"bad"}`}},
		},
		{
			name:  "last event without trailing blank line is dispatched at EOF",
			input: "data: {\"choices\":[{\"delta\":{\"content\":\"z\"}}]}",
			want:  []got{{Content: "z"}},
		},
		{
			name:  "two choices concatenate",
			input: `data: {"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]}` + "\n\n",
			want:  []got{{Content: "ab"}},
		},
		{
			name:  "data lines without blank separators still decode each chunk",
			input: "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\ndata: [DONE]\n",
			want:  []got{{Content: "ab", Done: true}},
		},
		{
			name:  "unknown members of every kind are skipped",
			input: `data: {"id":"x","created":1.5e3,"ok":true,"n":null,"arr":[{"a":"]}"},[1,2]],"choices":[{"logprobs":{"content":[{"token":"q"}]},"delta":{"tool_calls":[],"content":"k"}}]}` + "\n\n",
			want:  []got{{Content: "k"}},
		},
		{
			name:  "malformed chunk is reported and the reader continues",
			input: "data: {\"choices\":[{\"delta\":{\"content\":\"a\"\n\ndata: not json\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n",
			want:  []got{{Malformed: true}, {Malformed: true}, {Content: "b"}},
		},
		{
			name:  "usage counts written as floats",
			input: `data: {"choices":[],"usage":{"prompt_tokens":10.0,"completion_tokens":3}}` + "\n\n",
			want:  []got{{HasUsage: true, PromptTokens: 10, CompletionTokens: 3}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []string{"whole", "one byte"} {
				var r io.Reader = strings.NewReader(tc.input)
				if mode == "one byte" {
					r = iotest.OneByteReader(r)
				}
				evs, err := parseAll(t, r)
				if err != nil {
					t.Fatalf("%s: unexpected error %v", mode, err)
				}
				// Malformed events may carry partial content; compare only the flag.
				for i := range evs {
					if evs[i].Malformed {
						evs[i] = got{Malformed: true}
					}
				}
				if len(evs) != len(tc.want) {
					t.Fatalf("%s: got %d events %+v, want %d %+v", mode, len(evs), evs, len(tc.want), tc.want)
				}
				for i := range evs {
					if evs[i] != tc.want[i] {
						t.Errorf("%s: event %d = %+v, want %+v", mode, i, evs[i], tc.want[i])
					}
				}
			}
		})
	}
}

func TestSSEReaderLongLine(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 10000) // 20 000 bytes, beyond the initial buffer
	in := `data: {"choices":[{"delta":{"content":"` + long + `"}}]}` + "\n\n"
	evs, err := parseAll(t, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Content != long {
		t.Fatalf("long line not parsed whole: %d events", len(evs))
	}
}

func TestSSEReaderReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"), iotest.ErrReader(boom))
	sr := NewSSEReader(r)
	if ev, err := sr.Next(); err != nil || string(ev.Content) != "a" {
		t.Fatalf("first event: %v %v", ev, err)
	}
	if _, err := sr.Next(); !errors.Is(err, boom) {
		t.Fatalf("want read error, got %v", err)
	}
}

// FuzzSSEParse: arbitrary bytes never panic, and the events do not depend on how the
// bytes are split across reads.
func FuzzSSEParse(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\r\n\r\n: ping\n\ndata: [DONE]\n\n"))
	f.Add([]byte(`data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2},"timings":{"prompt_ms":1.5}}` + "\n\n"))
	f.Add([]byte("data: {\"error\":{\"message\":\"x\"}}\n\ndata: {\"a\":[[[{\"b\":\"\\ud800\"}]]]}\n"))
	f.Add([]byte("data: {\"choices\":[{\"text\":\"\\u12\"}]}\n\n"))
	// The fault corpus of the capacity benchmark's acceptance test: a stream cut mid-event,
	// a malformed event, an error event echoing a header, keep-alives only, many data lines.
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"con"))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\n\ndata: [DONE]\n\n"))
	f.Add([]byte("event: error\ndata: {\"error\":{\"code\":1,\"detail\":\"Authorization: Bearer sk-x\"}}\n\n"))
	f.Add([]byte(": ping\n\n: ping\r\n\r\n"))
	f.Add([]byte(strings.Repeat("data: yyyy\n", 64) + "\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		whole, err1 := parseAll(t, bytes.NewReader(in))
		split, err2 := parseAll(t, iotest.OneByteReader(bytes.NewReader(in)))
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("errors differ: %v vs %v", err1, err2)
		}
		if len(whole) != len(split) {
			t.Fatalf("event counts differ: %d vs %d", len(whole), len(split))
		}
		for i := range whole {
			if whole[i] != split[i] {
				t.Fatalf("event %d differs: %+v vs %+v", i, whole[i], split[i])
			}
		}
	})
}

// FuzzSSEContentRoundTrip: any content encoded by encoding/json, in either line-ending
// style, comes back exactly as encoding/json decodes it.
func FuzzSSEContentRoundTrip(f *testing.F) {
	f.Add("hello", false, uint8(1))
	f.Add("a\"b\\c\n\u2028\U0001F600\x00", true, uint8(3))
	f.Add("\xff\xfe invalid utf8", false, uint8(2))
	f.Fuzz(func(t *testing.T, content string, crlf bool, parts uint8) {
		nl := "\n"
		if crlf {
			nl = "\r\n"
		}
		n := int(parts%8) + 1
		var b strings.Builder
		var want strings.Builder
		for i := 0; i < n; i++ {
			chunk, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"delta": map[string]any{"content": content}}}})
			b.WriteString("data: " + string(chunk) + nl + nl)
			var back struct {
				Choices []struct {
					Delta struct{ Content string } `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(chunk, &back); err != nil {
				t.Fatal(err)
			}
			want.WriteString(back.Choices[0].Delta.Content)
		}
		b.WriteString("data: [DONE]" + nl + nl)
		evs, err := parseAll(t, strings.NewReader(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		var gotContent strings.Builder
		for _, ev := range evs {
			if ev.Malformed || ev.Error != "" {
				t.Fatalf("unexpected event %+v", ev)
			}
			gotContent.WriteString(ev.Content)
		}
		if gotContent.String() != want.String() {
			t.Fatalf("content %q, want %q", gotContent.String(), want.String())
		}
		if len(evs) != n+1 || !evs[n].Done {
			t.Fatalf("got %d events, want %d content events and [DONE]", len(evs), n)
		}
	})
}
