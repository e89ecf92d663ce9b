// Package httpbody turns the body of a failed HTTP response into one readable line for an
// error message. Servers answer errors in many shapes: OpenAI-style JSON, FastAPI's
// {"detail": ...}, a proxy's HTML page, plain text over several lines. A user reading a
// Terraform diagnostic needs the server's sentence, not the page.
// StripURL keeps a transport error from repeating the URL, and a Redactor keeps API keys and
// tokens out of those messages and of quoted logs.
package httpbody

import (
	"bytes"
	"encoding/json"
	"html"
	"regexp"
	"strings"
	"unicode/utf8"
)

// MaxLen bounds the line, in bytes, before the ellipsis.
const MaxLen = 200

// OneLine returns the message a server meant by body, on one line of at most MaxLen bytes (plus
// "..." when cut, on a UTF-8 boundary): the message of a JSON error, the title (or else the
// text) of an HTML page, or the text itself with its whitespace collapsed. "" for an empty body.
func OneLine(body []byte) string {
	return oneLine(body, nil)
}

func oneLine(body []byte, secrets *Redactor) string {
	body = bytes.TrimSpace(secrets.Bytes(body))
	var s string
	switch {
	case len(body) == 0:
		return ""
	case body[0] == '{':
		s = jsonMessage(body)
	case looksLikeHTML(body):
		s = htmlText(body)
	}
	if s == "" {
		s = string(body)
	}
	return truncate(secrets.String(strings.Join(strings.Fields(s), " ")))
}

// jsonMessage finds the human sentence of the common error shapes: OpenAI, vLLM and SGLang
// ({"error": {"message": ...}} or {"message": ...}), llama.cpp (the same), FastAPI
// ({"detail": ... }), and {"error": "..."}. "" when none is there or the JSON is cut short.
func jsonMessage(body []byte) string {
	var v map[string]any
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	for _, key := range []string{"error", "message", "detail", "msg"} {
		switch x := v[key].(type) {
		case string:
			return x
		case map[string]any:
			for _, inner := range []string{"message", "detail", "msg"} {
				if m, ok := x[inner].(string); ok && m != "" {
					return m
				}
			}
		case []any: // FastAPI validation errors: a list of {"msg": ...}
			var msgs []string
			for _, it := range x {
				if m, ok := it.(map[string]any); ok {
					if s, ok := m["msg"].(string); ok {
						msgs = append(msgs, s)
					}
				}
			}
			if len(msgs) > 0 {
				return strings.Join(msgs, "; ")
			}
		}
	}
	return ""
}

func looksLikeHTML(body []byte) bool {
	head := bytes.ToLower(body[:min(len(body), 256)])
	return bytes.HasPrefix(head, []byte("<!doctype html")) || bytes.HasPrefix(head, []byte("<html")) ||
		bytes.Contains(head, []byte("<head")) || bytes.Contains(head, []byte("<body")) || bytes.Contains(head, []byte("<title"))
}

var (
	titleRE  = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)
	h1RE     = regexp.MustCompile(`(?is)<h1[^>]*>(.*?)</h1>`)
	dropRE   = regexp.MustCompile(`(?is)<(script|style|head)[^>]*>.*?</(script|style|head)>`)
	tagRE    = regexp.MustCompile(`(?s)<[^>]*>`)
	commentR = regexp.MustCompile(`(?s)<!--.*?-->`)
)

// htmlText prefers the page's title ("404 Not Found"), then its first heading, then its
// visible text.
func htmlText(body []byte) string {
	for _, re := range []*regexp.Regexp{titleRE, h1RE} {
		if m := re.FindSubmatch(body); m != nil {
			if t := strings.TrimSpace(html.UnescapeString(string(tagRE.ReplaceAll(m[1], nil)))); t != "" {
				return t
			}
		}
	}
	text := commentR.ReplaceAll(body, nil)
	text = dropRE.ReplaceAll(text, nil)
	text = tagRE.ReplaceAll(text, []byte(" "))
	return html.UnescapeString(string(text))
}

func truncate(s string) string {
	if len(s) <= MaxLen {
		return s
	}
	b := s[:MaxLen]
	for len(b) > 0 && !utf8.ValidString(b) {
		b = b[:len(b)-1]
	}
	return b + "..."
}
