package load

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/degenerate"
	"github.com/llmserve/terraform-provider-llmserve/internal/endpoint"
	"github.com/llmserve/terraform-provider-llmserve/internal/httpbody"
)

// API styles of OpenAI-compatible servers.
const (
	APIChat        = "chat"        // POST /v1/chat/completions
	APICompletions = "completions" // POST /v1/completions
)

// ClientConfig configures the streaming client for measured requests.
type ClientConfig struct {
	BaseURL string // e.g. http://gpu-host.example.com:30000 (no /v1)
	Model   string
	API     string // APIChat (default) or APICompletions
	APIKey  string // sent as "Authorization: Bearer"; never logged or put in errors

	// ExtraBody holds per-request body fields merged into every request, e.g. llama.cpp's
	// "cache_prompt": false from Control.FlushCache. They cannot override the fields the
	// measurement depends on (model, prompt, stream, max_tokens, ...).
	ExtraBody map[string]any

	// RecordChunkTimes keeps each content chunk's arrival (RequestResult.ChunkOffsets), for
	// per-request records; off, a request allocates nothing per chunk.
	RecordChunkTimes bool

	// HTTPClient, when set, is used as is (its transport decides the connection policy).
	// When nil the client builds one with keep-alives disabled; see the package notes.
	HTTPClient *http.Client

	// StallTimeout fails a request as stalled when no byte of its response arrives for
	// that long: not the headers, not a stream chunk, not even a keep-alive comment.
	// Zero means DefaultStallTimeout.
	StallTimeout time.Duration
	// RequestTimeout bounds one whole request, from sending it to the end of its stream.
	// Zero means DefaultRequestTimeout.
	RequestTimeout time.Duration
}

// Per-request bounds used when the configuration gives none. They are sized for the
// heaviest case the provider targets, 16K tokens in and 2K out on a GPU already serving
// many requests, where nothing else bounds a request but timeouts.create (24 h).
const (
	// DefaultStallTimeout: a 16K-token prefill takes seconds to tens of seconds on one
	// accelerator, and a request queued behind a full batch waits for a slot for at most a
	// few minutes at the concurrencies an SLO search visits (probes past the boundary are
	// stopped early). Five minutes without a single byte is therefore not load but a
	// stalled server, and surfaces well within ten minutes.
	DefaultStallTimeout = 5 * time.Minute
	// DefaultRequestTimeout: 2K output tokens at a slow 200 ms per token under load is
	// about 7 minutes, plus the stall allowance for the first token; 30 minutes leaves
	// room for slower hardware while keeping a stuck request from holding an apply for
	// hours.
	DefaultRequestTimeout = 30 * time.Minute
)

// Client sends streamed completion requests and records what happened and when.
// It is safe for concurrent use.
type Client struct {
	url        string
	redacted   string // url for messages: no user info
	auth       string
	apiKey     string             // only to size the read of an error body
	secrets    *httpbody.Redactor // the key, out of any text a server might echo
	http       *http.Client
	bodyPrefix []byte // JSON up to the prompt value
	bodyMid    []byte // JSON between the prompt and max_tokens value
	// bodyMessages is the JSON up to the first message of a chat request, for a request with
	// History; nil for the completions API, which has no messages.
	bodyMessages []byte

	stall, total time.Duration
	chunkTimes   bool
}

// NewClient validates cfg and prepares the request template.
func NewClient(cfg ClientConfig) (*Client, error) {
	base, err := endpoint.Parse(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("load client: endpoint %w", err)
	}
	if cfg.Model == "" {
		return nil, errors.New("load client: model is empty")
	}
	api := cfg.API
	if api == "" {
		api = APIChat
	}
	var path, promptKey, promptOpen, promptClose string
	switch api {
	case APIChat:
		path, promptKey = "/v1/chat/completions", "messages"
		promptOpen, promptClose = `[{"role":"user","content":`, `}]`
	case APICompletions:
		path, promptKey = "/v1/completions", "prompt"
	default:
		return nil, fmt.Errorf("load client: api %q is not %q or %q", api, APIChat, APICompletions)
	}

	fixed := map[string]any{
		"model":          cfg.Model,
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
		"temperature":    0,
		"ignore_eos":     true,
	}
	merged := make(map[string]any, len(cfg.ExtraBody)+len(fixed))
	for k, v := range cfg.ExtraBody {
		switch k {
		case promptKey, "max_tokens":
			return nil, fmt.Errorf("load client: extra body field %q would replace the measured request's own", k)
		}
		merged[k] = v
	}
	for k, v := range fixed {
		merged[k] = v
	}
	head, err := json.Marshal(merged)
	if err != nil {
		return nil, fmt.Errorf("load client: encode extra body fields: %w", err)
	}
	// head is {...}; the prompt and max_tokens are spliced in per request so the fixed part
	// is encoded once.
	prefix := append([]byte(nil), head[:len(head)-1]...)
	var messages []byte
	if api == APIChat {
		messages = append(append([]byte(nil), prefix...), `,"messages":[`...)
	}
	prefix = append(prefix, `,"`+promptKey+`":`+promptOpen...)

	if cfg.StallTimeout < 0 || cfg.RequestTimeout < 0 {
		return nil, fmt.Errorf("load client: stall timeout %s and request timeout %s must not be negative", cfg.StallTimeout, cfg.RequestTimeout)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: NewTransport()}
	}
	c := &Client{
		url:          base.String() + path,
		redacted:     base.Redacted() + path,
		http:         hc,
		bodyPrefix:   prefix,
		bodyMid:      []byte(promptClose + `,"max_tokens":`),
		bodyMessages: messages,
		stall:        cmp.Or(cfg.StallTimeout, DefaultStallTimeout),
		total:        cmp.Or(cfg.RequestTimeout, DefaultRequestTimeout),
		chunkTimes:   cfg.RecordChunkTimes,
	}
	if cfg.APIKey != "" {
		c.auth = "Bearer " + cfg.APIKey
		c.apiKey = cfg.APIKey
		c.secrets = httpbody.NewRedactor(cfg.APIKey)
	}
	return c, nil
}

// NewTransport returns the transport measured requests use: a fresh connection per request
// (see the package notes), no response compression (a gzip layer buffers stream chunks), no
// proxy from the environment (a proxy in the path would be measured too), small buffers
// because one benchmark may hold thousands of streams open, and reads timed against the
// kernel's receive timestamps where it gives them (RequestResult.ReadLagMax).
func NewTransport() *http.Transport {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		// Each connection times its reads (readlag.go): how long its data waited in the
		// socket before the client took it.
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return timeReads(conn), nil
		},
		DisableKeepAlives:   true,
		DisableCompression:  true,
		MaxIdleConnsPerHost: -1,
		TLSHandshakeTimeout: 30 * time.Second,
		ReadBufferSize:      4096,
		WriteBufferSize:     4096,
		ForceAttemptHTTP2:   false,
	}
}

// Request is one streamed request.
type Request struct {
	Prompt    string
	MaxTokens int

	// OnFirstContent, when set, is called once from the request's goroutine as soon as the
	// first content chunk has been recorded, with the result so far (Sent and FirstContent
	// set). It should return quickly: the stream is not read while it runs.
	OnFirstContent func(partial RequestResult)

	// OnSent, when set, is called from the request's goroutine with the Sent timestamp as
	// soon as the request is about to be written, so a runner knows how long it has waited.
	OnSent func(sent time.Time)
	// Ready is when the runner was ready to send it (RequestResult.Ready), so the client's
	// own delay in sending it is measured (RequestResult.SendDelay); zero when it has none.
	Ready time.Time

	// History is what a conversation sent and received before this turn (a system prompt,
	// earlier user messages, the server's answers), sent as chat messages before Prompt,
	// which is the new user message. Chat API only.
	History []Message
	// KeepText keeps the content received in RequestResult.Text, for the next turn's history.
	KeepText bool
}

// Message is one chat message of a conversation's history.
type Message struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}

// Do sends prompt with max_tokens = maxTokens and records the streamed response.
func (c *Client) Do(ctx context.Context, prompt string, maxTokens int) RequestResult {
	return c.Stream(ctx, Request{Prompt: prompt, MaxTokens: maxTokens})
}

// Stream sends one request and reads its stream to the end. It never retries. Failures are
// reported in the result, not as an error: a failed request is a measurement. A request
// stopped by ctx has Cancelled set and Err empty, so error and cancellation counts never
// overlap. The request fails as stalled when no byte arrives for the stall timeout and as
// timed out after the request timeout; both messages name the bound.
func (c *Client) Stream(ctx context.Context, req Request) RequestResult {
	rec := c.stream(ctx, req)
	// Server text is redacted before it is cut short (Redactor.OneLine); this catches the
	// key anywhere else a message might carry it.
	rec.Err = c.secrets.String(rec.Err)
	if rec.Err != "" && rec.Failure == "" {
		rec.Failure = FailOther
	}
	return rec
}

// maxPreallocatedChunks bounds the chunk offsets reserved up front (128 KiB a stream); a
// longer stream grows its slice as it goes.
const maxPreallocatedChunks = 16 << 10

// Causes of a request's own context ending, told apart from the caller's cancellation.
var (
	errStalled        = errors.New("stalled")
	errRequestTimeout = errors.New("request timeout")
)

func (c *Client) stream(ctx context.Context, req Request) RequestResult {
	rec := RequestResult{Prompt: req.Prompt, PromptHash: fnv1a(req.Prompt), RequestedOutputTokens: req.MaxTokens, Ready: req.Ready}

	body, err := c.body(req.History, req.Prompt, req.MaxTokens)
	if err != nil {
		rec.Err = err.Error()
		rec.Done = time.Now()
		return rec
	}
	reqCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	reqCtx, cancelTotal := context.WithTimeoutCause(reqCtx, c.total, errRequestTimeout)
	defer cancelTotal()
	// The watchdog runs from the start: a server that accepts the connection and never
	// answers is as stalled as one that stops mid-stream.
	watchdog := watchStalls(c.stall, func() { cancel(errStalled) })
	defer watchdog.stop()

	hreq, err := http.NewRequestWithContext(reqCtx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		rec.Err = fmt.Sprintf("build request for %s: %v", c.redacted, err)
		rec.Done = time.Now()
		return rec
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	if c.auth != "" {
		hreq.Header.Set("Authorization", c.auth)
	}
	// Sent is when a connection is ready and the request is about to be written, so TCP
	// and TLS set-up are not counted as server latency; they are recorded apart (AIPerf
	// counts them in TTFT: add them to compare).
	// The connect and TLS callbacks run on the transport's dial goroutine, which may outlive
	// a cancelled request: they keep their figures apart from rec, and GotConn (on this
	// goroutine, after the dial that produced the connection) takes them over.
	// A dual-stack host name is dialled on two addresses at once (happy eyeballs), so
	// connect starts are kept per address: the one that connects reports its own time.
	var connectStarts sync.Map // network+" "+address → time.Time
	var tlsStart time.Time
	var lookupStart, lookup, connect, handshake atomic.Int64
	var reads *timedReads // the connection's read timing, when the transport keeps one
	origin := time.Now()
	trace := &httptrace.ClientTrace{
		DNSStart: func(httptrace.DNSStartInfo) { lookupStart.Store(int64(time.Since(origin)) + 1) },
		DNSDone: func(httptrace.DNSDoneInfo) {
			if t := lookupStart.Load(); t != 0 {
				lookup.Store(int64(time.Since(origin)) + 1 - t)
			}
		},
		ConnectStart: func(network, addr string) { connectStarts.Store(network+" "+addr, time.Now()) },
		ConnectDone: func(network, addr string, err error) {
			if start, ok := connectStarts.Load(network + " " + addr); ok && err == nil {
				connect.Store(int64(time.Since(start.(time.Time))))
			}
		},
		TLSHandshakeStart: func() { tlsStart = time.Now() },
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			if err == nil && !tlsStart.IsZero() {
				handshake.Store(int64(time.Since(tlsStart)))
			}
		},
		GotConn: func(info httptrace.GotConnInfo) {
			rec.Connect, rec.TLSHandshake = time.Duration(connect.Load()), time.Duration(handshake.Load())
			rec.Lookup = time.Duration(lookup.Load())
			if reads = readTiming(info.Conn); reads != nil {
				reads.reset()
			}
			rec.Sent = time.Now()
			watchdog.kick()
			if req.OnSent != nil {
				req.OnSent(rec.Sent)
			}
		},
		GotFirstResponseByte: watchdog.kick,
	}
	hreq = hreq.WithContext(httptrace.WithClientTrace(reqCtx, trace))
	before := time.Now()

	resp, err := c.http.Do(hreq)
	if rec.Sent.IsZero() {
		rec.Sent = before
	}
	if err != nil {
		rec.Done = time.Now()
		c.fail(ctx, reqCtx, &rec, "waiting for the response", func() {
			rec.Failure = FailReset
			rec.Err = fmt.Sprintf("send request to %s: %v", c.redacted, httpbody.StripURL(err))
		})
		return rec
	}
	defer resp.Body.Close()
	rec.Headers = time.Now()
	rec.HTTPStatus = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		// Enough for an error page's title, and a little more so a key that straddles the
		// end of what is read is still whole when it is redacted.
		head, _ := io.ReadAll(io.LimitReader(resp.Body, int64(4096+len(c.apiKey))))
		rec.Done = time.Now()
		if ctx.Err() != nil {
			rec.Cancelled = true
			return rec
		}
		rec.Failure = FailHTTPStatus
		rec.Err = fmt.Sprintf("HTTP %d from %s: %s", resp.StatusCode, c.redacted, c.secrets.OneLine(head))
		return rec
	}

	c.read(ctx, reqCtx, watchdog.reader(resp.Body), resp.Header.Get("Content-Type"), &rec, req)
	if reads != nil {
		rec.ReadLagMax, rec.ReadsTimed = reads.worst()
	}
	return rec
}

// fail records why a request ended early: the caller's cancellation (Cancelled, no error),
// the stall or request bound (with the bound in the message), or else what otherwise does.
func (c *Client) fail(ctx, reqCtx context.Context, rec *RequestResult, during string, otherwise func()) {
	if ctx.Err() != nil {
		rec.Cancelled = true
		return
	}
	switch context.Cause(reqCtx) {
	case errStalled:
		rec.Failure = FailStalled
		rec.Err = fmt.Sprintf("stalled while %s: no byte from %s for %s (trial.stall_timeout)", during, c.redacted, c.stall)
		return
	case errRequestTimeout:
		rec.Failure = FailTimeout
		rec.Err = fmt.Sprintf("request to %s not finished after %s (trial.request_timeout) while %s", c.redacted, c.total, during)
		return
	}
	otherwise()
}

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// fnv1a is the 64-bit FNV-1a hash of s, as OutputHash is of the output.
func fnv1a(s string) uint64 {
	h := uint64(fnvOffset64)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime64
	}
	return h
}

func (c *Client) read(ctx, reqCtx context.Context, body io.Reader, contentType string, rec *RequestResult, req Request) {
	onFirst := req.OnFirstContent
	var kept strings.Builder
	sr := NewSSEReader(body)
	if c.secrets != nil {
		sr.Redact = c.secrets.Bytes
	}
	if c.chunkTimes && rec.ChunkOffsets == nil {
		// One allocation for the whole stream instead of a dozen while it grows: a stream
		// with ignore_eos carries about one chunk per requested token.
		rec.ChunkOffsets = make([]time.Duration, 0, min(max(rec.RequestedOutputTokens, 1), maxPreallocatedChunks))
	}
	hash := uint64(fnvOffset64)
	var text degenerate.Tally
	sawDone := false
	setErr := func(kind FailureKind, msg string) {
		if rec.Err == "" {
			rec.Failure, rec.Err = kind, msg
		}
	}
	for {
		ev, err := sr.Next()
		if err != nil && !errors.Is(err, ErrMalformedEvent) {
			rec.Done = time.Now()
			if reqCtx.Err() != nil {
				// The stall or total bound (or the caller) ended the stream: that is the
				// reason, whatever failed before it.
				rec.Err, rec.Failure = "", ""
				c.fail(ctx, reqCtx, rec, fmt.Sprintf("streaming (after %d content chunks)", rec.ContentChunks), func() {
					setErr(FailReset, fmt.Sprintf("read stream from %s: %v", c.redacted, err))
				})
				break
			}
			switch {
			case err == io.EOF:
				if !sawDone && rec.FinishReason == "" {
					setErr(FailTruncated, fmt.Sprintf("stream from %s ended without [DONE] or a finish_reason after %d content chunks (Content-Type %q): is the server streaming?",
						c.redacted, rec.ContentChunks, contentType))
				}
			case errors.Is(err, ErrEventTooLarge):
				setErr(FailMalformed, fmt.Sprintf("stream from %s: %v", c.redacted, err))
			default:
				setErr(FailReset, fmt.Sprintf("read stream from %s: %v", c.redacted, err))
			}
			break
		}
		if len(ev.Content) > 0 {
			now := time.Now()
			if rec.FirstContent.IsZero() {
				rec.FirstContent = now
				if onFirst != nil {
					onFirst(*rec)
				}
			} else if rec.SecondContent.IsZero() {
				rec.SecondContent = now
			}
			if c.chunkTimes {
				rec.ChunkOffsets = append(rec.ChunkOffsets, now.Sub(rec.Sent))
			}
			rec.LastContent = now
			rec.ContentChunks++
			rec.ContentBytes += len(ev.Content)
			for _, b := range ev.Content {
				hash ^= uint64(b)
				hash *= fnvPrime64
			}
			text.Write(ev.Content)
			if req.KeepText {
				kept.Write(ev.Content)
			}
		}
		if err != nil {
			setErr(FailMalformed, fmt.Sprintf("stream from %s: %v", c.redacted, err))
		}
		if ev.FinishReason != "" {
			rec.FinishReason = ev.FinishReason
		}
		if ev.HasUsage {
			rec.UsageReported = true
			rec.PromptTokens = ev.PromptTokens
			rec.CompletionTokens = ev.CompletionTokens
		}
		if ev.HasCachedTokens {
			n := ev.CachedTokens
			rec.CachedTokens = &n
		}
		if ev.HasTimings {
			t := ev.Timings
			rec.ServerTimings = &t
			if t.HasCacheN && rec.CachedTokens == nil {
				n := t.CacheN
				rec.CachedTokens = &n
			}
		}
		if ev.Error != "" {
			setErr(FailServerError, "server error in stream: "+ev.Error)
		}
		if ev.Done {
			sawDone = true
			rec.Done = time.Now()
			break
		}
	}
	if rec.ContentChunks > 0 {
		rec.OutputHash = hash
	}
	out := text.Output()
	rec.Output = &out
	if req.KeepText {
		rec.Text = kept.String()
	}
}

func (c *Client) body(history []Message, prompt string, maxTokens int) ([]byte, error) {
	p, err := json.Marshal(prompt)
	if err != nil {
		return nil, fmt.Errorf("encode prompt: %w", err)
	}
	var b []byte
	if len(history) == 0 {
		b = make([]byte, 0, len(c.bodyPrefix)+len(p)+len(c.bodyMid)+24)
		b = append(b, c.bodyPrefix...)
	} else {
		if c.bodyMessages == nil {
			return nil, errors.New("a conversation's history needs the chat API (api = \"chat\"); the completions API sends one prompt")
		}
		b = append(b, c.bodyMessages...)
		for _, m := range history {
			mb, err := json.Marshal(m)
			if err != nil {
				return nil, fmt.Errorf("encode history: %w", err)
			}
			b = append(append(b, mb...), ',')
		}
		b = append(b, `{"role":"user","content":`...)
	}
	b = append(b, p...)
	b = append(b, c.bodyMid...)
	b = fmt.Appendf(b, "%d}", maxTokens)
	return b, nil
}
