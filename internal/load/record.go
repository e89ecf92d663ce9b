package load

import "time"

// Record is what one streamed request produced. Timestamps come from time.Now and carry
// Go's monotonic clock reading, so differences between them are immune to wall-clock steps.
type Record struct {
	Index  int  // position within the trial: warmups first, then measured requests
	Warmup bool // warmup requests are sent but not measured

	Prompt                string // the exact prompt text (or chat user message) sent
	RequestedOutputTokens int    // max_tokens sent

	Sent         time.Time // request written to the connection
	FirstContent time.Time // first chunk with non-empty content/reasoning_content/text; zero if none
	// SecondContent is the second chunk with non-empty content (time to second token, as
	// AIPerf names it, is measured from the first); zero if none.
	SecondContent time.Time
	LastContent   time.Time // last chunk with non-empty content; zero if none
	Done          time.Time // response fully received ([DONE], EOF or error)

	ContentChunks int    // chunks that carried non-empty content
	ContentBytes  int    // UTF-8 bytes of all content received
	OutputHash    uint64 // FNV-1a of the concatenated content, to count unique outputs

	UsageReported    bool // the server sent a usage object
	PromptTokens     int  // usage.prompt_tokens
	CompletionTokens int  // usage.completion_tokens (the output sequence length, OSL)
	FinishReason     string

	HTTPStatus int    // 0 when no response arrived
	Err        string // empty on success; otherwise what failed, for diagnostics
	Cancelled  bool   // stopped by the runner (early decision or context cancellation)

	ServerTimings *ServerTimings // llama.cpp "timings" when the server reports them
}

// ServerTimings is the server's own account of a request (llama.cpp reports these).
type ServerTimings struct {
	PromptMs            float64
	PromptN             int
	PredictedMs         float64
	PredictedN          int
	PredictedPerTokenMs float64
}

// OK reports whether the request completed with HTTP 200 and no transport or stream error.
func (r Record) OK() bool { return r.HTTPStatus == 200 && r.Err == "" && !r.Cancelled }
