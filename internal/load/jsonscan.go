package load

// A small JSON scanner for the chunk decoder (chunk.go): it walks objects and arrays in
// place, hands out string bytes without copying where no escape needs decoding, and skips
// what the decoder does not read. It allocates nothing per chunk, which encoding/json
// cannot promise.

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

var (
	errUnexpectedEnd = errors.New("unexpected end of JSON")
	errSyntax        = errors.New("invalid JSON")
)

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
	more, err := d.open('{', '}')
	for ; more && err == nil; more, err = d.next('}') {
		var key []byte
		if key, _, err = d.rawString(); err != nil {
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
		if err = member(d, key); err != nil {
			return err
		}
	}
	return err
}

// array walks the elements of an array, calling element with d.i at each; element must
// consume it.
func (d *decoder) array(element func(d *decoder) error) error {
	more, err := d.open('[', ']')
	for ; more && err == nil; more, err = d.next(']') {
		if err = element(d); err != nil {
			return err
		}
	}
	return err
}

// open consumes the opening of an object or array and reports whether an item follows,
// with d.i at it. open and next are the separator handling objects and arrays share; a
// callback walk serving both cost the decoder a sixth of its time.
func (d *decoder) open(open, close byte) (more bool, err error) {
	if d.i >= len(d.b) || d.b[d.i] != open {
		return false, fmt.Errorf("%w: expected '%c' at offset %d", errSyntax, open, d.i)
	}
	d.i++
	d.skipWS()
	if d.i < len(d.b) && d.b[d.i] == close {
		d.i++
		return false, nil
	}
	return true, nil
}

// next consumes what follows an item: a ',' and the whitespace before the next item (more
// is true), or close.
func (d *decoder) next(close byte) (more bool, err error) {
	d.skipWS()
	if d.i >= len(d.b) {
		return false, errUnexpectedEnd
	}
	switch d.b[d.i] {
	case ',':
		d.i++
		d.skipWS()
		return true, nil
	case close:
		d.i++
		return false, nil
	}
	return false, fmt.Errorf("%w: expected ',' or '%c' at offset %d", errSyntax, close, d.i)
}

func (d *decoder) peek() byte {
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *decoder) isNull() bool { return bytes.HasPrefix(d.b[d.i:], []byte("null")) }

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
	f, err := parseFloat(raw)
	return int(f), err
}

func (d *decoder) floatValue() (float64, error) {
	if d.isNull() {
		return 0, d.skipValue()
	}
	raw, err := d.number()
	if err != nil {
		return 0, err
	}
	return parseFloat(raw)
}

func parseFloat(raw []byte) (float64, error) {
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
