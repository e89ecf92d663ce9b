package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The reader and writer go through an ordered JSON tree instead of map[string]any so that
// keys this version does not know keep their place and their exact number literals, and so
// that every type error can name the JSON path it happened at.

type kind int

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

func (k kind) String() string {
	switch k {
	case kindBool:
		return "boolean"
	case kindNumber:
		return "number"
	case kindString:
		return "string"
	case kindArray:
		return "array"
	case kindObject:
		return "object"
	default:
		return "null"
	}
}

// node is one JSON value. Numbers keep their literal text so that unknown keys are written
// back digit for digit.
type node struct {
	kind    kind
	boolean bool
	text    string   // string value, or number literal
	keys    []string // object keys in document order
	vals    []*node  // object values, parallel to keys
	items   []*node  // array items
}

// get returns the value of key; the last one wins on duplicates, as with encoding/json.
func (n *node) get(key string) (*node, bool) {
	for i := len(n.keys) - 1; i >= 0; i-- {
		if n.keys[i] == key {
			return n.vals[i], true
		}
	}
	return nil, false
}

// maxDepth bounds nesting so a hostile document cannot make the reader recurse without
// limit; schema v1 needs 5 levels, extensions get plenty of room.
const maxDepth = 100

var errTooDeep = fmt.Errorf("nesting deeper than %d levels", maxDepth)

func parseTree(data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := readNode(dec, 0, "")
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("unexpected data after the top-level value at byte %d", dec.InputOffset())
	}
	return n, nil
}

// readNode reads one value at path (for errors). A key repeated in one object is an error:
// JSON readers keep either value, so a reader of this document and a person reading its text
// could see different numbers.
func readNode(dec *json.Decoder, depth int, path string) (*node, error) {
	if depth > maxDepth {
		return nil, errTooDeep
	}
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &node{kind: kindNull}, nil
	case bool:
		return &node{kind: kindBool, boolean: t}, nil
	case json.Number:
		return &node{kind: kindNumber, text: t.String()}, nil
	case string:
		return &node{kind: kindString, text: t}, nil
	case json.Delim:
		switch t {
		case '{':
			n := &node{kind: kindObject}
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key is not a string at byte %d", dec.InputOffset())
				}
				if seen[key] {
					return nil, &PathError{Path: joinKey(path, key), Msg: "duplicate key: it appears twice in one object, and JSON readers disagree on which value counts"}
				}
				seen[key] = true
				v, err := readNode(dec, depth+1, joinKey(path, key))
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, key)
				n.vals = append(n.vals, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return n, nil
		case '[':
			n := &node{kind: kindArray, items: []*node{}}
			for dec.More() {
				v, err := readNode(dec, depth+1, joinIndex(path, len(n.items)))
				if err != nil {
					return nil, err
				}
				n.items = append(n.items, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return n, nil
		}
	}
	return nil, fmt.Errorf("unexpected token %v at byte %d", tok, dec.InputOffset())
}

// writeNode writes n as compact JSON; the caller indents the whole document once.
func writeNode(buf *bytes.Buffer, n *node) error {
	switch n.kind {
	case kindNull:
		buf.WriteString("null")
	case kindBool:
		if n.boolean {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case kindNumber:
		buf.WriteString(n.text)
	case kindString:
		return writeString(buf, n.text)
	case kindArray:
		buf.WriteByte('[')
		for i, it := range n.items {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeNode(buf, it); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case kindObject:
		buf.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeString(buf, k); err != nil {
				return err
			}
			buf.WriteByte(':')
			if err := writeNode(buf, n.vals[i]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	}
	return nil
}

// writeString encodes s without encoding/json's HTML escaping: results documents are read by
// people and diffed in reviews, where "\u003c" for "<" only gets in the way.
func writeString(buf *bytes.Buffer, s string) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return err
	}
	buf.Write(bytes.TrimRight(b.Bytes(), "\n"))
	return nil
}
