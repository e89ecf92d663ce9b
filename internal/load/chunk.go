package load

// Chunk decoding: the JSON of one streamed completion chunk (OpenAI chat and completions,
// with vLLM's, SGLang's and llama.cpp's additions) reduced to a StreamEvent. The framing of
// the text/event-stream that carries the chunks is in sse.go.

import (
	"bytes"
	"fmt"
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

// decoder reduces streamed completion chunks to StreamEvents; its JSON scanning (objects,
// arrays, strings, numbers, skipping) is in jsonscan.go.
type decoder struct {
	b       []byte
	i       int
	ev      *StreamEvent
	content []byte

	topObjectError bool // {"object":"error"} (vLLM)
	topMessage     string
}

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
	if d.peek() != '[' {
		return fmt.Errorf("%w: choices is not an array", errSyntax)
	}
	return d.array(choice)
}

func choice(d *decoder) error { return d.object(choiceMember) }

// choiceMember reads one choice of a chat chunk (content in "delta") or a completions chunk
// (content in "text"): one path for both, since a server may stream either shape and the
// rest of a choice (finish_reason) is the same.
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
