package load

// Chunk decoding: the JSON of one streamed completion chunk (OpenAI chat and completions,
// with vLLM's, SGLang's and llama.cpp's additions) reduced to a StreamEvent. The framing of
// the text/event-stream that carries the chunks is in sse.go.

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// StreamEvent is one server-sent event of an OpenAI-compatible streaming response, reduced
// to what a measurement needs. Content aliases the reader's buffers and is valid only until
// the next call to Next; everything else is a plain value.
type StreamEvent struct {
	Done bool // the "[DONE]" sentinel

	// Content is the unescaped concatenation of every non-empty delta.content,
	// delta.reasoning_content, delta.reasoning and text field in the event, across choices.
	// Reasoning counts because reasoning models stream their thinking first and the user
	// waits for it exactly as for the answer.
	Content []byte

	FinishReason string // last non-null finish_reason in the event

	HasUsage         bool
	PromptTokens     int
	CompletionTokens int
	// HasCachedTokens: usage.prompt_tokens_details.cached_tokens was present (SGLang with
	// --enable-cache-report, vLLM with --enable-prompt-tokens-details, current llama.cpp).
	HasCachedTokens bool
	CachedTokens    int

	HasTimings bool
	Timings    ServerTimings // llama.cpp's "timings" object

	// Error is the message of an error the server reported inside the stream (an "error"
	// member, or vLLM's {"object":"error","message":...}); empty otherwise.
	Error string
}

// decoder is a small JSON scanner specialised for streaming completion chunks.
type decoder struct {
	b       []byte
	i       int
	ev      *StreamEvent
	content []byte

	topObjectError bool // {"object":"error"} (vLLM)
	topMessage     string
}

var (
	errUnexpectedEnd = errors.New("unexpected end of JSON")
	errSyntax        = errors.New("invalid JSON")
)

func (d *decoder) decodePayload(p []byte) error {
	d.b, d.i = p, 0
	for {
		d.skipWS()
		if d.i >= len(d.b) {
			return nil
		}
		if bytes.HasPrefix(d.b[d.i:], []byte("[DONE]")) {
			d.ev.Done = true
			d.i += len("[DONE]")
			continue
		}
		if d.b[d.i] != '{' {
			return fmt.Errorf("%w: expected an object at offset %d", errSyntax, d.i)
		}
		d.topObjectError, d.topMessage = false, ""
		if err := d.chunk(); err != nil {
			return err
		}
		if d.topObjectError && d.ev.Error == "" {
			d.ev.Error = d.topMessage
			if d.ev.Error == "" {
				d.ev.Error = "server reported an error without a message"
			}
		}
	}
}

func (d *decoder) skipWS() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// object walks the members of an object, calling member for each key with d.i at the value.
// member must consume the value.
func (d *decoder) object(member func(d *decoder, key []byte) error) error {
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return fmt.Errorf("%w: expected '{' at offset %d", errSyntax, d.i)
	}
	d.i++
	d.skipWS()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return nil
	}
	for {
		d.skipWS()
		key, _, err := d.rawString()
		if err != nil {
			return err
		}
		d.skipWS()
		if d.i >= len(d.b) {
			return errUnexpectedEnd
		}
		if d.b[d.i] != ':' {
			return fmt.Errorf("%w: expected ':' at offset %d", errSyntax, d.i)
		}
		d.i++
		d.skipWS()
		if err := member(d, key); err != nil {
			return err
		}
		d.skipWS()
		if d.i >= len(d.b) {
			return errUnexpectedEnd
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return nil
		default:
			return fmt.Errorf("%w: expected ',' or '}' at offset %d", errSyntax, d.i)
		}
	}
}

func (d *decoder) chunk() error { return d.object(chunkMember) }

func chunkMember(d *decoder, key []byte) error {
	switch string(key) {
	case "choices":
		return d.choices()
	case "usage":
		if d.isNull() {
			return d.skipValue()
		}
		d.ev.HasUsage = true
		return d.object(usageMember)
	case "timings":
		if d.isNull() {
			return d.skipValue()
		}
		d.ev.HasTimings = true
		return d.object(timingsMember)
	case "error":
		return d.errorValue()
	case "object":
		if d.peek() != '"' {
			return d.skipValue()
		}
		raw, _, err := d.rawString()
		d.topObjectError = string(raw) == "error"
		return err
	case "message":
		if d.peek() == '"' {
			s, err := d.stringValue()
			d.topMessage = s
			return err
		}
	}
	return d.skipValue()
}

func (d *decoder) choices() error {
	if d.isNull() {
		return d.skipValue()
	}
	if d.i >= len(d.b) || d.b[d.i] != '[' {
		return fmt.Errorf("%w: choices is not an array", errSyntax)
	}
	d.i++
	d.skipWS()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return nil
	}
	for {
		d.skipWS()
		if err := d.object(choiceMember); err != nil {
			return err
		}
		d.skipWS()
		if d.i >= len(d.b) {
			return errUnexpectedEnd
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return nil
		default:
			return fmt.Errorf("%w: expected ',' or ']' at offset %d", errSyntax, d.i)
		}
	}
}

func choiceMember(d *decoder, key []byte) error {
	switch string(key) {
	case "delta":
		if d.isNull() {
			return d.skipValue()
		}
		return d.object(deltaMember)
	case "text":
		return d.appendContent()
	case "finish_reason":
		if d.isNull() {
			return d.skipValue()
		}
		raw, esc, err := d.rawString()
		if err != nil {
			return err
		}
		d.ev.FinishReason = internReason(raw, esc)
		return nil
	}
	return d.skipValue()
}

func deltaMember(d *decoder, key []byte) error {
	switch string(key) {
	case "content", "reasoning_content", "reasoning":
		return d.appendContent()
	}
	return d.skipValue()
}

func usageMember(d *decoder, key []byte) error {
	switch string(key) {
	case "prompt_tokens":
		n, err := d.intValue()
		d.ev.PromptTokens = n
		return err
	case "completion_tokens":
		n, err := d.intValue()
		d.ev.CompletionTokens = n
		return err
	case "prompt_tokens_details":
		if d.isNull() {
			return d.skipValue()
		}
		return d.object(promptDetailsMember)
	}
	return d.skipValue()
}

func promptDetailsMember(d *decoder, key []byte) error {
	if string(key) != "cached_tokens" || d.isNull() {
		return d.skipValue()
	}
	n, err := d.intValue()
	d.ev.CachedTokens, d.ev.HasCachedTokens = n, err == nil
	return err
}

func timingsMember(d *decoder, key []byte) error {
	t := &d.ev.Timings
	var err error
	switch string(key) {
	case "prompt_ms":
		t.PromptMs, err = d.floatValue()
	case "prompt_n":
		t.PromptN, err = d.intValue()
	case "predicted_ms":
		t.PredictedMs, err = d.floatValue()
	case "predicted_n":
		t.PredictedN, err = d.intValue()
	case "predicted_per_token_ms":
		t.PredictedPerTokenMs, err = d.floatValue()
	case "cache_n":
		t.CacheN, err = d.intValue()
		t.HasCacheN = err == nil
	default:
		err = d.skipValue()
	}
	return err
}

func (d *decoder) errorValue() error {
	switch d.peek() {
	case 'n':
		return d.skipValue()
	case '"':
		s, err := d.stringValue()
		if s == "" {
			s = "server reported an error without a message"
		}
		d.ev.Error = s
		return err
	case '{':
		start := d.i
		var msg string
		err := d.object(func(d *decoder, key []byte) error {
			if string(key) == "message" && d.peek() == '"' {
				s, err := d.stringValue()
				msg = s
				return err
			}
			return d.skipValue()
		})
		if err != nil {
			return err
		}
		if msg == "" {
			msg = summarise(d.b[start:d.i])
		}
		d.ev.Error = msg
		return nil
	}
	start := d.i
	if err := d.skipValue(); err != nil {
		return err
	}
	d.ev.Error = summarise(d.b[start:d.i])
	return nil
}

func (d *decoder) peek() byte {
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *decoder) isNull() bool { return bytes.HasPrefix(d.b[d.i:], []byte("null")) }

// appendContent appends a string value to the event content; null and "" add nothing.
func (d *decoder) appendContent() error {
	if d.peek() != '"' {
		return d.skipValue()
	}
	raw, esc, err := d.rawString()
	if err != nil {
		return err
	}
	if !esc {
		d.content = append(d.content, raw...)
		return nil
	}
	d.content, err = unescape(d.content, raw)
	return err
}

func (d *decoder) stringValue() (string, error) {
	if d.peek() != '"' {
		return "", d.skipValue()
	}
	raw, esc, err := d.rawString()
	if err != nil {
		return "", err
	}
	if !esc {
		return string(raw), nil
	}
	out, err := unescape(nil, raw)
	return string(out), err
}

// rawString consumes a JSON string and returns its bytes between the quotes, still escaped.
func (d *decoder) rawString() (raw []byte, escaped bool, err error) {
	if d.i >= len(d.b) {
		return nil, false, errUnexpectedEnd
	}
	if d.b[d.i] != '"' {
		return nil, false, fmt.Errorf("%w: expected a string at offset %d", errSyntax, d.i)
	}
	start := d.i + 1
	for j := start; j < len(d.b); j++ {
		switch d.b[j] {
		case '"':
			d.i = j + 1
			return d.b[start:j], escaped, nil
		case '\\':
			escaped = true
			j++
		}
	}
	return nil, false, errUnexpectedEnd
}

func (d *decoder) number() ([]byte, error) {
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			d.i++
			continue
		}
		break
	}
	if d.i == start {
		return nil, fmt.Errorf("%w: expected a number at offset %d", errSyntax, start)
	}
	return d.b[start:d.i], nil
}

func (d *decoder) intValue() (int, error) {
	if d.isNull() {
		return 0, d.skipValue()
	}
	raw, err := d.number()
	if err != nil {
		return 0, err
	}
	n := 0
	neg := false
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		neg, digits = true, digits[1:]
	}
	simple := len(digits) > 0 && len(digits) < 19
	for _, c := range digits {
		if c < '0' || c > '9' {
			simple = false
			break
		}
		n = n*10 + int(c-'0')
	}
	if simple {
		if neg {
			n = -n
		}
		return n, nil
	}
	// Some servers write counts as 12.0.
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, fmt.Errorf("%w: bad number %q", errSyntax, raw)
	}
	return int(f), nil
}

func (d *decoder) floatValue() (float64, error) {
	if d.isNull() {
		return 0, d.skipValue()
	}
	raw, err := d.number()
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, fmt.Errorf("%w: bad number %q", errSyntax, raw)
	}
	return f, nil
}

// skipValue consumes one JSON value of any kind without decoding it.
func (d *decoder) skipValue() error {
	if d.i >= len(d.b) {
		return errUnexpectedEnd
	}
	switch c := d.b[d.i]; {
	case c == '"':
		_, _, err := d.rawString()
		return err
	case c == '{' || c == '[':
		depth := 0
		for d.i < len(d.b) {
			switch d.b[d.i] {
			case '"':
				if _, _, err := d.rawString(); err != nil {
					return err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					d.i++
					return nil
				}
			}
			d.i++
		}
		return errUnexpectedEnd
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	default:
		_, err := d.number()
		return err
	}
}

func (d *decoder) literal(word string) error {
	if !bytes.HasPrefix(d.b[d.i:], []byte(word)) {
		return fmt.Errorf("%w: bad literal at offset %d", errSyntax, d.i)
	}
	d.i += len(word)
	return nil
}

// internReason avoids an allocation for the finish reasons every request ends with.
func internReason(raw []byte, escaped bool) string {
	if !escaped {
		switch string(raw) {
		case "length":
			return "length"
		case "stop":
			return "stop"
		case "":
			return ""
		}
		return string(raw)
	}
	out, err := unescape(nil, raw)
	if err != nil {
		return string(raw)
	}
	return string(out)
}

// unescape appends the decoded form of a JSON string body to dst. Invalid \u surrogates
// become U+FFFD, as encoding/json does.
func unescape(dst, raw []byte) ([]byte, error) {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			j := bytes.IndexByte(raw[i:], '\\')
			if j < 0 {
				return append(dst, raw[i:]...), nil
			}
			dst = append(dst, raw[i:i+j]...)
			i += j
			continue
		}
		if i+1 >= len(raw) {
			return dst, fmt.Errorf("%w: dangling escape", errSyntax)
		}
		switch raw[i+1] {
		case '"', '\\', '/':
			dst = append(dst, raw[i+1])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(raw[i+2:])
			if !ok {
				return dst, fmt.Errorf("%w: bad \\u escape", errSyntax)
			}
			i += 6
			if r >= 0xD800 && r < 0xDC00 {
				if i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if r2, ok := hex4(raw[i+2:]); ok && r2 >= 0xDC00 && r2 < 0xE000 {
						dst = utf8.AppendRune(dst, (r-0xD800)<<10+(r2-0xDC00)+0x10000)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			} else if r >= 0xDC00 && r < 0xE000 {
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default:
			return dst, fmt.Errorf("%w: bad escape \\%c", errSyntax, raw[i+1])
		}
		i += 2
	}
	return dst, nil
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
