// Package trace reads recorded traffic in the Mooncake trace shape (FAST'25, "Mooncake: A
// KVCache-centric Disaggregated Architecture for LLM Serving"; kvcache-ai/Mooncake,
// FAST25-release/traces): one JSON object per line, with the arrival `timestamp` in
// milliseconds, `input_length` and `output_length` in tokens and, optionally, `hash_ids`, the
// ids of the prompt's blocks of BlockTokens tokens (512 in Mooncake's traces), so that requests
// whose hash_ids begin alike share that prefix. AIPerf replays the same files
// (`--custom-dataset-type mooncake_trace --fixed-schedule`).
//
// A trace is replayed at its recorded offsets from its first request, divided by a speedup.
package trace

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/localfile"
)

// MooncakeBlockTokens is the tokens a hash_ids entry stands for in Mooncake's traces.
const MooncakeBlockTokens = 512

// MaxLineBytes bounds one line of a trace file; a Mooncake line is under 1 KiB for a
// 16K-token prompt.
const MaxLineBytes = 1 << 20

// MaxSpan bounds a trace's span, its last arrival after its first: a year (BurstGPT's
// published trace spans 121 days). Offsets are kept as time.Duration, which ends at 292 years;
// a longer span is refused as too long rather than wrapping around into nonsense.
const MaxSpan = 366 * 24 * time.Hour

// Request is one line of a trace.
type Request struct {
	Line int // 1-based line number in the file, for messages
	// Offset is the request's arrival after the trace's first request.
	Offset       time.Duration
	InputTokens  int
	OutputTokens int
	// HashIDs name the prompt's blocks, BlockTokens tokens each (the last one may be cut
	// short by InputTokens); empty: nothing shared.
	HashIDs []int64
	// Session is the line's session_id (a conversation's turns, AIPerf's multi-turn traces):
	// requests of one session are sent in order from one load generator when a trial is
	// spread over several. Empty: the request stands alone.
	Session string
}

// Trace is a parsed trace file. File and SHA256 say which recording it is (they are what a
// configuration's fingerprint and a result document keep); Requests are its lines in order.
type Trace struct {
	File        string    `json:"file"`
	SHA256      string    `json:"sha256"`
	BlockTokens int       `json:"block_tokens"`
	Requests    []Request `json:"-"`
}

// File is what a trace file may be: a regular file of at most 256 MiB. Mooncake's published
// traces are under 10 MB; a million requests with their hash_ids are about 200 MB.
var File = localfile.Kind{Noun: "trace file (Mooncake JSONL)", MaxBytes: 256 << 20}

// ReadFile reads and parses the trace at path (localfile: a regular file within File's bound).
func ReadFile(path string, blockTokens int) (*Trace, error) {
	raw, err := localfile.ReadFile(path, File)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	t, err := Parse(bytes.NewReader(raw), blockTokens)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	t.File, t.SHA256 = path, hex.EncodeToString(sum[:])
	return t, nil
}

// line is one trace line as written; pointers tell a missing field from a zero.
type line struct {
	Timestamp    *float64  `json:"timestamp"`
	InputLength  *float64  `json:"input_length"`
	OutputLength *float64  `json:"output_length"`
	HashIDs      []float64 `json:"hash_ids"`
	// SessionID is a string or a whole number.
	SessionID json.RawMessage `json:"session_id"`
}

// Parse reads a trace: every non-blank line one request, timestamps non-decreasing (a trace
// is refused, not sorted, when one goes back in time: a shuffled or concatenated file is
// more likely a mistake than a recording), lengths positive whole numbers, hash_ids whole
// numbers no more than the prompt's blocks. Unknown fields are ignored. Errors name the line
// and the field.
func Parse(r io.Reader, blockTokens int) (*Trace, error) {
	if blockTokens < 1 {
		return nil, fmt.Errorf("trace: block size must be at least 1 token, got %d", blockTokens)
	}
	t := &Trace{BlockTokens: blockTokens}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	var first, prev float64
	n := 0
	for sc.Scan() {
		n++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var l line
		dec := json.NewDecoder(bytes.NewReader(text))
		if err := dec.Decode(&l); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				return nil, fmt.Errorf("trace line %d: %s: expected a number%s, got %s", n, te.Field, map[bool]string{true: "s list", false: ""}[te.Field == "hash_ids"], te.Value)
			}
			return nil, fmt.Errorf("trace line %d: not a JSON object: %v", n, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("trace line %d: more than one JSON value on the line; write one request per line", n)
		}
		if l.Timestamp == nil {
			return nil, fmt.Errorf("trace line %d: timestamp: missing (the arrival in milliseconds)", n)
		}
		ts := *l.Timestamp
		switch {
		case ts < 0 || math.IsInf(ts, 0):
			return nil, fmt.Errorf("trace line %d: timestamp: must be a non-negative number of milliseconds, got %g", n, ts)
		case len(t.Requests) > 0 && ts < prev:
			return nil, fmt.Errorf("trace line %d: timestamp: %g ms is before the previous request's %g ms (line %d); a trace must be in arrival order: sort it by timestamp", n, ts, prev, t.Requests[len(t.Requests)-1].Line)
		}
		if len(t.Requests) == 0 {
			first = ts
		}
		if span := ts - first; span > float64(MaxSpan/time.Millisecond) {
			return nil, fmt.Errorf("trace line %d: timestamp: %g ms is %.4g days after the first request's %g ms (line %d); a trace may span at most %d days (%d ms): "+
				"check the unit (timestamps are milliseconds, not microseconds or nanoseconds) or cut the trace", n, ts, span/float64(24*time.Hour/time.Millisecond), first, t.Requests[0].Line,
				MaxSpan/(24*time.Hour), MaxSpan/time.Millisecond)
		}
		prev = ts
		in, err := length(n, "input_length", l.InputLength)
		if err != nil {
			return nil, err
		}
		out, err := length(n, "output_length", l.OutputLength)
		if err != nil {
			return nil, err
		}
		ids := make([]int64, len(l.HashIDs))
		for i, h := range l.HashIDs {
			if h < 0 || h != math.Trunc(h) || h > 1<<53 {
				return nil, fmt.Errorf("trace line %d: hash_ids[%d]: must be a non-negative whole number, got %g", n, i, h)
			}
			ids[i] = int64(h)
		}
		if blocks := (in + blockTokens - 1) / blockTokens; len(ids) > blocks {
			return nil, fmt.Errorf("trace line %d: hash_ids: %d blocks of %d tokens, but input_length %d holds at most %d", n, len(ids), blockTokens, in, blocks)
		}
		session, err := sessionID(n, l.SessionID)
		if err != nil {
			return nil, err
		}
		t.Requests = append(t.Requests, Request{
			Session:      session,
			Line:         n,
			Offset:       time.Duration(math.Round((ts - first) * float64(time.Millisecond))),
			InputTokens:  in,
			OutputTokens: out,
			HashIDs:      ids,
		})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("trace line %d: longer than %d bytes", n+1, MaxLineBytes)
		}
		return nil, fmt.Errorf("read trace: %w", err)
	}
	if len(t.Requests) == 0 {
		return nil, errors.New("trace: no requests: the file has no lines")
	}
	return t, nil
}

// sessionID reads a line's session_id: a string, or a whole number written as one.
func sessionID(line int, raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		if _, err := n.Int64(); err == nil {
			return n.String(), nil
		}
	}
	return "", fmt.Errorf("trace line %d: session_id: must be a string or a whole number, got %s", line, raw)
}

// length checks a line's token count.
func length(line int, field string, v *float64) (int, error) {
	switch {
	case v == nil:
		return 0, fmt.Errorf("trace line %d: %s: missing (tokens, a positive whole number)", line, field)
	case !(*v >= 1) || *v != math.Trunc(*v) || *v > math.MaxInt32:
		return 0, fmt.Errorf("trace line %d: %s: must be a positive whole number of tokens, got %g", line, field, *v)
	}
	return int(*v), nil
}

// Span is the time from the first request to the last.
func (t *Trace) Span() time.Duration {
	if len(t.Requests) == 0 {
		return 0
	}
	return t.Requests[len(t.Requests)-1].Offset
}

// Rate is the trace's mean request rate as recorded, (requests − 1) over its span, in
// requests per second; 0 when every request arrived at once.
func (t *Trace) Rate() float64 {
	if t.Span() <= 0 {
		return 0
	}
	return float64(len(t.Requests)-1) / t.Span().Seconds()
}

// Schedule is when each request is due when the trace is replayed speedup times as fast:
// its recorded offset divided by speedup.
func (t *Trace) Schedule(speedup float64) ([]time.Duration, error) {
	if !(speedup > 0) || math.IsInf(speedup, 0) {
		return nil, fmt.Errorf("trace: speedup must be a positive number, got %g", speedup)
	}
	out := make([]time.Duration, len(t.Requests))
	for i, r := range t.Requests {
		out[i] = time.Duration(math.Round(float64(r.Offset) / speedup))
	}
	return out, nil
}

// MeanLengths are the trace's mean input and output lengths, rounded.
func (t *Trace) MeanLengths() (input, output int) {
	if len(t.Requests) == 0 {
		return 0, 0
	}
	var in, out float64
	for _, r := range t.Requests {
		in += float64(r.InputTokens)
		out += float64(r.OutputTokens)
	}
	n := float64(len(t.Requests))
	return int(math.Round(in / n)), int(math.Round(out / n))
}
