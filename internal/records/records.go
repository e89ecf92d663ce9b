// Package records writes and reads per-request records: one JSONL file per trial, one line
// per request (warmups included and flagged), and recomputes a trial's metrics from such a
// file exactly as the benchmark computed them, so a result can be checked and re-analysed
// without the benchmark. It sits between the load runner and the metrics package.
package records

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/llmserve/terraform-provider-llmserve/internal/degenerate"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/localfile"
)

// Line is one request as a records file holds it: exactly the keys the records format
// promises, chunk_offsets_ns only with record_chunk_times. Times are Unix nanoseconds, null
// where the event never happened; within a trial their differences are the monotonic
// clock's, so metrics recomputed from them are bit for bit those the benchmark reported.
// Connection set-up (connection_setup_ms) is measured but not part of the format, so it is
// the one trial metric a file cannot reproduce.
type Line struct {
	Workload    string `json:"workload"`
	Concurrency int    `json:"concurrency"`
	Trial       int    `json:"trial"`
	Kind        string `json:"kind"` // warmup | measured
	Index       int    `json:"index"`

	SentNs       *int64 `json:"sent_ns"`
	HeadersNs    *int64 `json:"headers_ns"`
	FirstTokenNs *int64 `json:"first_token_ns"`
	LastTokenNs  *int64 `json:"last_token_ns"`

	Chunks           int     `json:"chunks"`
	PromptTokens     *int    `json:"prompt_tokens"`
	CompletionTokens *int    `json:"completion_tokens"`
	CachedTokens     *int    `json:"cached_tokens"`
	FinishReason     *string `json:"finish_reason"`
	HTTPStatus       *int    `json:"http_status"`
	ErrorKind        *string `json:"error_kind"`
	Error            *string `json:"error"`

	// What the degenerate-output rules read (metrics.JudgeOutputs), on every line of a file
	// written since they were recorded: the prompt's and the output's FNV-1a hashes (16 hex
	// digits; the output's all zeros when nothing streamed), the output's code points, the
	// code point that occurs most ("" without output) and how often, and the output's first
	// 40 code points, to quote. Absent from older files: Recompute then takes the degenerate
	// and unique-output counts from the document.
	PromptHash         *string `json:"prompt_hash,omitempty"`
	OutputHash         *string `json:"output_hash,omitempty"`
	OutputCodePoints   *int    `json:"output_code_points,omitempty"`
	DominantCodePoint  *string `json:"dominant_code_point,omitempty"`
	DominantCodePoints *int    `json:"dominant_code_points,omitempty"`
	OutputHead         *string `json:"output_head,omitempty"`
	// The unit the output repeated back to back the most in a special token's shape
	// ("<unk>") and the code points its repetition covered (degenerate.Output Token and
	// TokenN), only on a line whose output has one: the repeated-token rule reads them.
	RepeatedToken           *string `json:"repeated_token,omitempty"`
	RepeatedTokenCodePoints *int    `json:"repeated_token_code_points,omitempty"`

	// ChunkOffsetsNs is each content chunk's arrival after sent_ns. With record_chunk_times
	// every line has it ([] for a request that streamed nothing); without, no line does: nil
	// is "not recorded", an empty slice "recorded, none arrived". A Duration is nanoseconds
	// and encodes as a JSON integer, so the client's slice is written as it is, not copied.
	ChunkOffsetsNs []time.Duration `json:"chunk_offsets_ns,omitzero"`

	// An open-loop trial's schedule, absent from closed-loop ones: when the request was due,
	// when the runner dispatched it, how long it waited for max_in_flight, and when its
	// response ended (the backlog guard counts it in flight until then).
	DueNs        *int64        `json:"due_ns,omitempty"`
	DispatchedNs *int64        `json:"dispatched_ns,omitempty"`
	CapWaitNs    time.Duration `json:"cap_wait_ns,omitempty"`
	DoneNs       *int64        `json:"done_ns,omitempty"`

	// A users trial's place of the request (load.RunUsers): the virtual user (from 0), the
	// conversation (from 1) and the turn within it (from 1), with done_ns, when its response
	// ended (the requests in flight count it until then). Absent from other trials' lines.
	User         int `json:"user,omitempty"`
	Conversation int `json:"conversation,omitempty"`
	Turn         int `json:"turn,omitempty"`

	// Pod is the load generator that sent the request in a trial spread over several
	// (runner.kubernetes.pods): the runner pod's index, 0 the one that ran the search. Absent
	// from trials one generator sent.
	Pod *int `json:"pod,omitempty"`
}

// Kinds of Line.
const (
	KindWarmup   = "warmup"
	KindMeasured = "measured"
)

// ErrorKindCancelled marks a request the runner stopped (a probe decided early); it is not
// an error of the server's.
const ErrorKindCancelled = "cancelled"

// Trial says which trial a file's lines belong to.
type Trial struct {
	Workload    string
	Concurrency int
	Index       int // the trial's 1-based index among its kind at this concurrency
	// ChunkTimes says the client recorded chunk arrivals (record_chunk_times), so every
	// line carries chunk_offsets_ns.
	ChunkTimes bool
	// Pods is how many load generators sent the trial; above 1 every line says its pod.
	Pods int
}

// FromLoad turns a trial's records into lines. Every time is written as base's Unix time
// plus its monotonic distance from base (base is the trial's first Sent), so differences
// between a file's times are exactly the ones the live metrics used.
func FromLoad(t Trial, recs []load.RequestResult) []Line {
	var base time.Time
	for _, r := range recs {
		if !r.Sent.IsZero() && (base.IsZero() || r.Sent.Before(base)) {
			base = r.Sent
		}
	}
	at := func(v time.Time) *int64 {
		if v.IsZero() {
			return nil
		}
		n := base.UnixNano() + int64(v.Sub(base))
		return &n
	}
	out := make([]Line, len(recs))
	for i, r := range recs {
		l := Line{
			Workload: t.Workload, Concurrency: t.Concurrency, Trial: t.Index, Kind: KindMeasured, Index: r.Index,
			SentNs: at(r.Sent), HeadersNs: at(r.Headers), FirstTokenNs: at(r.FirstContent), LastTokenNs: at(r.LastContent),
			Chunks: r.ContentChunks, CachedTokens: r.CachedTokens,
			FinishReason: optional(r.FinishReason), Error: optional(r.Err), ErrorKind: optional(errorKind(r)),
		}
		if r.Warmup {
			l.Kind = KindWarmup
		}
		if !r.Due.IsZero() {
			l.DueNs, l.DispatchedNs, l.CapWaitNs, l.DoneNs = at(r.Due), at(r.Dispatched), r.CapWait, at(r.Done)
		}
		if r.Turn > 0 {
			l.User, l.Conversation, l.Turn, l.DoneNs = r.User, r.Conversation, r.Turn, at(r.Done)
		}
		if r.UsageReported {
			l.PromptTokens, l.CompletionTokens = ptr(r.PromptTokens), ptr(r.CompletionTokens)
		}
		if o := r.Output; o != nil {
			l.PromptHash, l.OutputHash, l.OutputCodePoints = ptr(hash(r.PromptHash)), ptr(hash(r.OutputHash)), ptr(o.CodePoints)
			l.DominantCodePoint, l.DominantCodePoints, l.OutputHead = ptr(""), ptr(o.DominantN), ptr(o.Head)
			if o.DominantN > 0 {
				l.DominantCodePoint = ptr(string(o.Dominant))
			}
			if o.TokenN > 0 {
				l.RepeatedToken, l.RepeatedTokenCodePoints = ptr(o.Token), ptr(o.TokenN)
			}
		}
		if r.HTTPStatus != 0 {
			l.HTTPStatus = ptr(r.HTTPStatus)
		}
		if t.Pods > 1 {
			l.Pod = ptr(r.Pod)
		}
		if t.ChunkTimes {
			l.ChunkOffsetsNs = r.ChunkOffsets
			if l.ChunkOffsetsNs == nil {
				l.ChunkOffsetsNs = []time.Duration{}
			}
		}
		out[i] = l
	}
	return out
}

// hash is how a line writes a 64-bit hash: 16 hex digits (a JSON number would lose bits in
// readers that take numbers as doubles).
func hash(h uint64) string { return fmt.Sprintf("%016x", h) }

// unhash reads a line's hash; 0 when absent or not hex (Read refuses the latter).
func unhash(s *string) uint64 {
	if s == nil {
		return 0
	}
	h, _ := strconv.ParseUint(*s, 16, 64)
	return h
}

// OutputRecorded says the line holds what the degenerate-output rules read.
func (l Line) OutputRecorded() bool { return l.OutputCodePoints != nil }

// errorKind is the load package's failure kind of a request, or ErrorKindCancelled.
func errorKind(r load.RequestResult) string {
	if r.Cancelled {
		return ErrorKindCancelled
	}
	return string(r.Failure)
}

// RequestResult turns a line back into what the metrics package reads. What a file does not
// hold (prompt text, output bytes, the output's hashes in files from before they were
// recorded, the second chunk without chunk offsets, when the
// response ended, connection set-up) stays zero.
func (l Line) RequestResult() load.RequestResult {
	at := func(n *int64) time.Time {
		if n == nil {
			return time.Time{}
		}
		return time.Unix(0, *n)
	}
	r := load.RequestResult{
		Index: l.Index, Warmup: l.Kind == KindWarmup,
		Sent: at(l.SentNs), Headers: at(l.HeadersNs), FirstContent: at(l.FirstTokenNs), LastContent: at(l.LastTokenNs),
		ContentChunks: l.Chunks, Cancelled: deref(l.ErrorKind) == ErrorKindCancelled,
		FinishReason: deref(l.FinishReason), Err: deref(l.Error),
	}
	if !r.Cancelled {
		r.Failure = load.FailureKind(deref(l.ErrorKind))
	}
	if l.HTTPStatus != nil {
		r.HTTPStatus = *l.HTTPStatus
	}
	if l.PromptTokens != nil && l.CompletionTokens != nil {
		r.UsageReported, r.PromptTokens, r.CompletionTokens = true, *l.PromptTokens, *l.CompletionTokens
	}
	r.CachedTokens = l.CachedTokens
	if l.OutputRecorded() {
		r.PromptHash, r.OutputHash = unhash(l.PromptHash), unhash(l.OutputHash)
		r.Output = &degenerate.Output{CodePoints: *l.OutputCodePoints, DominantN: deref(l.DominantCodePoints), Head: deref(l.OutputHead),
			Token: deref(l.RepeatedToken), TokenN: deref(l.RepeatedTokenCodePoints)}
		if d := deref(l.DominantCodePoint); d != "" {
			r.Output.Dominant, _ = utf8.DecodeRuneInString(d)
		}
	}
	r.Due, r.Dispatched, r.CapWait, r.Done = at(l.DueNs), at(l.DispatchedNs), l.CapWaitNs, at(l.DoneNs)
	r.User, r.Conversation, r.Turn = l.User, l.Conversation, l.Turn
	r.Pod = deref(l.Pod)
	if len(l.ChunkOffsetsNs) > 0 {
		r.ChunkOffsets = l.ChunkOffsetsNs
		if len(l.ChunkOffsetsNs) > 1 && !r.Sent.IsZero() {
			r.SecondContent = r.Sent.Add(r.ChunkOffsets[1])
		}
	}
	return r
}

// FileName is a trial's records file, relative to the records directory:
// "01-2k-512/probe-c008-1.jsonl" for the first workload's probe at concurrency 8.
func FileName(workloadIndex int, label, kind string, concurrency, index int) string {
	return filepath.Join(workloadDir(workloadIndex, label), fmt.Sprintf("%s-c%03d-%d.jsonl", kind, concurrency, index))
}

// RateFileName is an open-loop trial's records file, relative to the records directory:
// "01-2k-512/probe-r2.5-1.jsonl" for the first workload's probe at 2.5 requests/s, or a
// replay's at speedup 2.5; the rung is written to 10 significant digits.
func RateFileName(workloadIndex int, label, kind string, rung float64, index int) string {
	return filepath.Join(workloadDir(workloadIndex, label), fmt.Sprintf("%s-r%s-%d.jsonl", kind, strconv.FormatFloat(rung, 'g', 10, 64), index))
}

// workloadDir is a workload's directory of records files: "01-2k-512".
func workloadDir(workloadIndex int, label string) string {
	return fmt.Sprintf("%02d-%s", workloadIndex+1, slug(label))
}

// slug keeps letters and digits of a label, lowercased, runs of anything else as one "-".
func slug(label string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(label) {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	if b.Len() == 0 {
		return "workload"
	}
	return b.String()
}

// Write writes lines to dir/rel (creating directories) and returns the file's SHA-256 in
// hex. The file is synced before it is reported written.
func Write(dir, rel string, lines []Line) (sum string, err error) {
	path := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("records directory: %w; give a writable records_directory", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("records file: %w; give a writable records_directory", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("records file %s: %w", path, cerr)
		}
	}()
	h := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(f, h), 64<<10)
	var buf []byte
	for _, l := range lines {
		buf = l.appendJSON(buf[:0])
		if _, err := w.Write(buf); err != nil {
			return "", fmt.Errorf("records file %s: %w", path, err)
		}
	}
	if err := w.Flush(); err != nil {
		return "", fmt.Errorf("records file %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("records file %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// appendJSON writes the line as one JSON object and a newline, keys in the order of Line,
// without reflection: with chunk times a line holds hundreds of numbers, and writing them
// through encoding/json cost more CPU per streamed chunk than streaming it.
func (l Line) appendJSON(b []byte) []byte {
	str := func(b []byte, s string) []byte {
		q, _ := json.Marshal(s) // a string always encodes
		return append(b, q...)
	}
	optInt := func(b []byte, key string, v *int64) []byte {
		b = append(b, key...)
		if v == nil {
			return append(b, "null"...)
		}
		return strconv.AppendInt(b, *v, 10)
	}
	optSmall := func(b []byte, key string, v *int) []byte {
		if v == nil {
			return optInt(b, key, nil)
		}
		n := int64(*v)
		return optInt(b, key, &n)
	}
	optStr := func(b []byte, key string, v *string) []byte {
		b = append(b, key...)
		if v == nil {
			return append(b, "null"...)
		}
		return str(b, *v)
	}
	b = append(b, `{"workload":`...)
	b = str(b, l.Workload)
	b = append(b, `,"concurrency":`...)
	b = strconv.AppendInt(b, int64(l.Concurrency), 10)
	b = append(b, `,"trial":`...)
	b = strconv.AppendInt(b, int64(l.Trial), 10)
	b = append(b, `,"kind":`...)
	b = str(b, l.Kind)
	b = append(b, `,"index":`...)
	b = strconv.AppendInt(b, int64(l.Index), 10)
	b = optInt(b, `,"sent_ns":`, l.SentNs)
	b = optInt(b, `,"headers_ns":`, l.HeadersNs)
	b = optInt(b, `,"first_token_ns":`, l.FirstTokenNs)
	b = optInt(b, `,"last_token_ns":`, l.LastTokenNs)
	b = append(b, `,"chunks":`...)
	b = strconv.AppendInt(b, int64(l.Chunks), 10)
	b = optSmall(b, `,"prompt_tokens":`, l.PromptTokens)
	b = optSmall(b, `,"completion_tokens":`, l.CompletionTokens)
	b = optSmall(b, `,"cached_tokens":`, l.CachedTokens)
	b = optStr(b, `,"finish_reason":`, l.FinishReason)
	b = optSmall(b, `,"http_status":`, l.HTTPStatus)
	b = optStr(b, `,"error_kind":`, l.ErrorKind)
	b = optStr(b, `,"error":`, l.Error)
	if l.OutputRecorded() {
		b = optStr(b, `,"prompt_hash":`, l.PromptHash)
		b = optStr(b, `,"output_hash":`, l.OutputHash)
		b = optSmall(b, `,"output_code_points":`, l.OutputCodePoints)
		b = optStr(b, `,"dominant_code_point":`, l.DominantCodePoint)
		b = optSmall(b, `,"dominant_code_points":`, l.DominantCodePoints)
		b = optStr(b, `,"output_head":`, l.OutputHead)
		if l.RepeatedToken != nil { // only where the output repeats a unit
			b = optStr(b, `,"repeated_token":`, l.RepeatedToken)
			b = optSmall(b, `,"repeated_token_code_points":`, l.RepeatedTokenCodePoints)
		}
	}
	if l.ChunkOffsetsNs != nil {
		b = append(b, `,"chunk_offsets_ns":[`...)
		for i, v := range l.ChunkOffsetsNs {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(v), 10)
		}
		b = append(b, ']')
	}
	if l.DueNs != nil { // an open-loop trial's schedule; absent from closed-loop lines
		b = optInt(b, `,"due_ns":`, l.DueNs)
		b = optInt(b, `,"dispatched_ns":`, l.DispatchedNs)
		if l.CapWaitNs != 0 {
			b = append(b, `,"cap_wait_ns":`...)
			b = strconv.AppendInt(b, int64(l.CapWaitNs), 10)
		}
		b = optInt(b, `,"done_ns":`, l.DoneNs)
	}
	if l.Turn > 0 { // a users trial's request; absent from other lines
		if l.DueNs == nil {
			b = optInt(b, `,"done_ns":`, l.DoneNs)
		}
		for _, f := range []struct {
			key string
			v   int
		}{{`,"user":`, l.User}, {`,"conversation":`, l.Conversation}, {`,"turn":`, l.Turn}} {
			b = append(b, f.key...)
			b = strconv.AppendInt(b, int64(f.v), 10)
		}
	}
	if l.Pod != nil { // a trial spread over pods; absent from other lines
		b = append(b, `,"pod":`...)
		b = strconv.AppendInt(b, int64(*l.Pod), 10)
	}
	return append(b, "}\n"...)
}

// maxLine bounds one line: a request with chunk offsets of 100 000 chunks is about 1.5 MB.
const maxLine = 16 << 20

// File is what a records file may be: a regular file of at most 1 GiB. A trial of 100 000
// measured requests with the chunk times of 512-token outputs is about 600 MB.
var File = localfile.Kind{Noun: "records file (JSONL)", MaxBytes: 1 << 30}

// Read reads a records file and its SHA-256 (localfile: a regular file within File's bound).
func Read(path string) ([]Line, string, error) {
	f, err := localfile.Open(path, File)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	h := sha256.New()
	lr := &io.LimitedReader{R: f, N: File.MaxBytes + 1}
	sc := bufio.NewScanner(io.TeeReader(lr, h))
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var out []Line
	for n := 1; sc.Scan(); n++ {
		var l Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, "", fmt.Errorf("%s line %d: %w", path, n, err)
		}
		if l.Kind != KindWarmup && l.Kind != KindMeasured {
			return nil, "", fmt.Errorf("%s line %d: kind %q is not warmup or measured", path, n, l.Kind)
		}
		for key, h := range map[string]*string{"prompt_hash": l.PromptHash, "output_hash": l.OutputHash} {
			if h == nil {
				continue
			}
			if _, err := strconv.ParseUint(*h, 16, 64); err != nil || len(*h) != 16 {
				return nil, "", fmt.Errorf("%s line %d: %s %q is not 16 hex digits", path, n, key, *h)
			}
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	if lr.N <= 0 { // grew past the bound while it was read
		return nil, "", &localfile.Refused{Path: path, Reason: "is larger than " + localfile.Size(File.MaxBytes) + ", more than any " + File.Noun}
	}
	if len(out) == 0 {
		return nil, "", errors.New(path + ": no records")
	}
	return out, hex.EncodeToString(h.Sum(nil)), nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func ptr[T any](v T) *T { return &v }

func deref[T any](s *T) T {
	var zero T
	if s == nil {
		return zero
	}
	return *s
}
