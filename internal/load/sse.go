package load

// SSE framing: lines, fields and events of a text/event-stream body, bounded in size. What
// an event's data means (a completion chunk) is decoded in chunk.go.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// ErrMalformedEvent marks an event whose data is not the JSON the protocol promises.
var ErrMalformedEvent = errors.New("malformed stream event")

// MaxEventBytes caps one event's data, and any single line: a streamed chunk of the servers
// we target is a few hundred bytes, so a megabyte is a broken or hostile server, and a
// request must fail rather than grow memory without bound (thousands of streams may be
// open at once).
const MaxEventBytes = 1 << 20

// ErrEventTooLarge ends a stream whose event or line is longer than MaxEventBytes. Unlike
// ErrMalformedEvent the reader is not usable afterwards.
var ErrEventTooLarge = errors.New("stream event larger than 1 MiB")

const (
	// sseInitialBuffer is small because 10 000 idle streams each hold one; chunks of the
	// servers we target are a few hundred bytes and the buffer grows for longer lines.
	sseInitialBuffer = 2048
	// sseMaxLine leaves room for the field name before a maximal event's data.
	sseMaxLine = MaxEventBytes + 64
)

// SSEReader parses a text/event-stream body incrementally. It accepts LF and CRLF line
// endings, comment lines (keep-alives such as ": ping"), events whose data spans several
// "data:" lines, and, leniently, several JSON chunks in one event. It does not use
// encoding/json on the hot path: a targeted scanner skips every member it does not need,
// so a typical chunk costs no allocations.
type SSEReader struct {
	r          io.Reader
	buf        []byte
	start, end int
	eof        bool
	readErr    error

	data      []byte // data field of the event being assembled
	haveData  bool
	errorName bool // "event: error" seen in the current event

	ev  StreamEvent
	dec decoder // reused so a chunk costs no allocation

	// Redact, when set, is applied to each event's data before it is decoded, so text the
	// server echoes (an error quoting the request's Authorization header) is cleaned
	// before any of it is summarised into a message.
	Redact func([]byte) []byte

	tooLarge bool // ErrEventTooLarge was returned; the stream is abandoned
}

// NewSSEReader returns a reader that parses events from r.
func NewSSEReader(r io.Reader) *SSEReader {
	return &SSEReader{r: r, buf: make([]byte, sseInitialBuffer)}
}

// Next returns the next event. It returns io.EOF once the body ends with no pending event,
// an error wrapping ErrMalformedEvent for an event whose data cannot be decoded (the reader
// stays usable), or the underlying read error.
func (s *SSEReader) Next() (*StreamEvent, error) {
	if s.tooLarge {
		return nil, ErrEventTooLarge
	}
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && s.haveData {
				return s.dispatch()
			}
			return nil, err
		}
		if len(line) == 0 {
			if s.haveData {
				return s.dispatch()
			}
			s.errorName = false
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if len(s.data)+len(value)+1 > MaxEventBytes {
				s.tooLarge = true
				s.data = nil
				return nil, ErrEventTooLarge
			}
			if s.haveData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			s.haveData = true
		case "event":
			s.errorName = string(value) == "error"
		}
	}
}

// readLine returns the next line without its terminator. The slice aliases s.buf and is
// valid until the next call.
func (s *SSEReader) readLine() ([]byte, error) {
	scanFrom := s.start
	for {
		if i := bytes.IndexByte(s.buf[scanFrom:s.end], '\n'); i >= 0 {
			nl := scanFrom + i
			line := s.buf[s.start:nl]
			s.start = nl + 1
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			return line, nil
		}
		if s.eof {
			if s.start < s.end {
				line := s.buf[s.start:s.end]
				s.start = s.end
				if n := len(line); n > 0 && line[n-1] == '\r' {
					line = line[:n-1]
				}
				return line, nil
			}
			if s.readErr != nil {
				return nil, s.readErr
			}
			return nil, io.EOF
		}
		scanFrom = s.end
		if s.start > 0 {
			n := copy(s.buf, s.buf[s.start:s.end])
			scanFrom -= s.start
			s.start, s.end = 0, n
		}
		if s.end == len(s.buf) {
			if s.end >= sseMaxLine {
				s.tooLarge = true
				return nil, ErrEventTooLarge
			}
			grown := make([]byte, min(2*len(s.buf), sseMaxLine))
			copy(grown, s.buf[:s.end])
			s.buf = grown
		}
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		if err != nil {
			s.eof = true
			if err != io.EOF {
				s.readErr = err
			}
		}
	}
}

func (s *SSEReader) dispatch() (*StreamEvent, error) {
	payload := bytes.TrimSpace(s.data)
	if s.Redact != nil {
		payload = s.Redact(payload)
	}
	errorName := s.errorName
	s.data = s.data[:0]
	s.haveData = false
	s.errorName = false

	s.ev = StreamEvent{}
	d := &s.dec
	d.ev, d.content = &s.ev, d.content[:0]
	err := d.decodePayload(payload)
	s.ev.Content = d.content
	if errorName && s.ev.Error == "" {
		s.ev.Error = summarise(payload)
	}
	if err != nil {
		return &s.ev, fmt.Errorf("%w: %v in %q", ErrMalformedEvent, err, summarise(payload))
	}
	return &s.ev, nil
}

// summarise keeps diagnostics short: a server error page can be megabytes.
func summarise(b []byte) string {
	const max = 200
	if len(b) > max {
		b = b[:max]
		for len(b) > 0 && !utf8.Valid(b) {
			b = b[:len(b)-1]
		}
		return string(b) + "..."
	}
	return string(b)
}
