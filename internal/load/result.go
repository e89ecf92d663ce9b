package load

import (
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/degenerate"
)

// RequestResult is what one streamed request produced. Timestamps come from time.Now and carry
// Go's monotonic clock reading, so differences between them are immune to wall-clock steps.
type RequestResult struct {
	Index  int  // position within the trial: warmups first, then measured requests
	Warmup bool // warmup requests are sent but not measured

	Prompt                string // the exact prompt text (or chat user message) sent
	PromptHash            uint64 // FNV-1a of Prompt: which requests asked the same (records keep it, not the text)
	RequestedOutputTokens int    // max_tokens sent

	// Due is when an open-loop trial's schedule wanted the request sent, Dispatched when the
	// runner started it (Due plus the send lateness plus CapWait), and CapWait how long the
	// request waited for the in-flight cap (OpenSpec.MaxInFlight) before it could go. All
	// three are zero in a closed-loop trial.
	Due        time.Time
	Dispatched time.Time
	CapWait    time.Duration

	Sent         time.Time // request written to the connection
	Headers      time.Time // response status and headers received; zero if none
	FirstContent time.Time // first chunk with non-empty content/reasoning_content/text; zero if none
	// SecondContent is the second chunk with non-empty content (time to second token, as
	// AIPerf names it, is measured from the first); zero if none.
	SecondContent time.Time
	LastContent   time.Time // last chunk with non-empty content; zero if none
	Done          time.Time // response fully received ([DONE], EOF or error)

	// Connect and TLSHandshake are the connection set-up before Sent (zero on a reused
	// connection); TTFT as AIPerf counts it is TTFT + Connect + TLSHandshake.
	Connect      time.Duration
	TLSHandshake time.Duration
	// Lookup is the name resolution before Sent (zero for an address or a reused connection).
	Lookup time.Duration

	// Ready is when the runner was ready to send the request (Request.Ready): a closed
	// loop's slot freeing, an open-loop request's due time plus its wait for the in-flight
	// cap, a conversation's turn at the end of its think time. Zero when the runner did not
	// say. SendDelay is what the client itself took from there to sending it.
	Ready time.Time
	// ReadLagMax is how far behind the client read its response at worst: the longest time
	// data had been waiting in the socket's receive queue when a read took it (the kernel's
	// receive timestamp of the newest data a read returned, against the read's return).
	// ReadsTimed counts the reads that carried a timestamp; 0 where none could (not Linux,
	// or a caller's own HTTP client), and then ReadLagMax means nothing.
	ReadLagMax time.Duration
	ReadsTimed int
	// ChunkOffsets are each content chunk's arrival after Sent, when the client records them.
	ChunkOffsets []time.Duration

	ContentChunks int    // chunks that carried non-empty content
	ContentBytes  int    // UTF-8 bytes of all content received
	OutputHash    uint64 // FNV-1a of the concatenated content, to count unique outputs
	// Output is what the degenerate-output rules need of the content (code points, the
	// dominant one, the head to quote), gathered as it streamed; nil when unknown (a records
	// file from before it was recorded), and then the output is not judged.
	Output *degenerate.Output

	UsageReported    bool // the server sent a usage object
	PromptTokens     int  // usage.prompt_tokens
	CompletionTokens int  // usage.completion_tokens (the output sequence length, OSL)
	// CachedTokens is how many prompt tokens the server says it served from its prefix
	// cache (usage.prompt_tokens_details.cached_tokens, or llama.cpp's timings.cache_n); nil
	// when the server did not say, which is not the same as 0.
	CachedTokens *int
	FinishReason string

	HTTPStatus int         // 0 when no response arrived
	Err        string      // empty on success; otherwise what failed, for diagnostics
	Failure    FailureKind // why the request failed; empty when Err is empty
	Cancelled  bool        // stopped by the runner (early decision or context cancellation)

	ServerTimings *ServerTimings // llama.cpp "timings" when the server reports them

	// User, Conversation and Turn place a request of a users trial (RunUsers): the virtual
	// user (0-based), the conversation's number in the trial (1-based, in the order they
	// started) and the turn within it (1-based). All zero outside a users trial.
	User         int
	Conversation int
	Turn         int
	// Pod is the load generator that sent the request when a trial is spread over several
	// (the runner pod's index; 0 for the one that runs the search, and wherever one sends).
	Pod int
	// Text is the content received, kept only when the request asked for it
	// (Request.KeepText): a conversation sends it back as the assistant's message.
	Text string
}

// ServerTimings is the server's own account of a request (llama.cpp reports these).
type ServerTimings struct {
	PromptMs            float64
	PromptN             int
	PredictedMs         float64
	PredictedN          int
	PredictedPerTokenMs float64
	// CacheN is how many prompt tokens were reused from the slot's cache (HasCacheN: the
	// server reported it).
	CacheN    int
	HasCacheN bool
}

// SendDelay is how long the client took to send the request once the runner was ready to
// (Ready to Sent), less the connection set-up (name lookup, TCP connect, TLS handshake):
// those are the network's and the server's, the rest is the client's own. ok is false
// when the runner gave no Ready or the request was never sent.
func (r RequestResult) SendDelay() (d time.Duration, ok bool) {
	if r.Ready.IsZero() || r.Sent.IsZero() {
		return 0, false
	}
	return max(0, r.Sent.Sub(r.Ready)-r.Lookup-r.Connect-r.TLSHandshake), true
}

// OK reports whether the request completed with HTTP 200 and no transport or stream error.
func (r RequestResult) OK() bool { return r.HTTPStatus == 200 && r.Err == "" && !r.Cancelled }

// FailureKind classifies a failed request so a trial can say how many failed for which
// reason without quoting every message.
type FailureKind string

// Failure kinds, as they appear in results documents and diagnostics.
const (
	// FailHTTPStatus: the server answered with a status other than 200.
	FailHTTPStatus FailureKind = "http_status"
	// FailStalled: no byte arrived for the stall timeout, before or during the stream.
	FailStalled FailureKind = "stalled"
	// FailTimeout: the whole request took longer than the request timeout.
	FailTimeout FailureKind = "request_timeout"
	// FailReset: the connection failed: refused, reset or closed while the request was
	// being sent or its stream read.
	FailReset FailureKind = "reset"
	// FailTruncated: the stream ended cleanly but before [DONE] or a finish_reason.
	FailTruncated FailureKind = "truncated_stream"
	// FailMalformed: the stream is not the server-sent events the protocol promises: an
	// event that is not JSON, or one larger than MaxEventBytes.
	FailMalformed FailureKind = "malformed_stream"
	// FailServerError: the server reported an error inside a 200 stream.
	FailServerError FailureKind = "server_error"
	// FailNoContent: a 200 stream that finished without any content chunk. The client
	// does not set it (such a stream is not an error on the wire); metrics classify it.
	FailNoContent FailureKind = "no_content"
	// FailLengthMismatch: a successful request whose output length is further from the
	// requested one than tolerated. Not a failure on the wire either; metrics classify it.
	FailLengthMismatch FailureKind = "length_mismatch"
	// FailDegenerate: a successful request whose output is broken text (package
	// degenerate); metrics classify it, and a trial where most outputs are is an error.
	FailDegenerate FailureKind = "degenerate_output"
	// FailOther: anything else (a request that could not even be built).
	FailOther FailureKind = "other"
)
