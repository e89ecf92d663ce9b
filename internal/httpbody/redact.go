package httpbody

import (
	"bytes"
	"slices"
	"strings"
)

// Redacted is what a secret leaves behind in a message.
const Redacted = "[redacted]"

// Redactor blanks secrets (API keys, tokens) out of text bound for an error message, a log
// line or a record: engines log their arguments, and servers and proxies echo requests.
// Every byte of every occurrence of every secret is hidden, and occurrences that overlap or
// touch become one mark, so a secret that contains or overlaps another never shows a part,
// and the mark itself is never searched again. A nil Redactor hides nothing.
type Redactor struct {
	secrets []string // non-empty, distinct
	raw     [][]byte // the same, for Bytes to search without converting each time
}

// NewRedactor returns a Redactor for the non-empty secrets, or nil when there are none.
func NewRedactor(secrets ...string) *Redactor {
	var keep []string
	for _, s := range secrets {
		if s != "" && !slices.Contains(keep, s) {
			keep = append(keep, s)
		}
	}
	if len(keep) == 0 {
		return nil
	}
	r := &Redactor{secrets: keep}
	for _, s := range keep {
		r.raw = append(r.raw, []byte(s))
	}
	return r
}

// String returns s with the secrets replaced by Redacted.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	var hide []bool // hide[i]: byte i belongs to an occurrence; allocated on the first one
	for _, sec := range r.secrets {
		for from := 0; from < len(s); {
			i := strings.Index(s[from:], sec)
			if i < 0 {
				break
			}
			i += from
			if hide == nil {
				hide = make([]bool, len(s))
			}
			for j := i; j < i+len(sec); j++ {
				hide[j] = true
			}
			from = i + 1 // occurrences of one secret may overlap ("aa" in "aaa")
		}
	}
	if hide == nil {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		switch {
		case !hide[i]:
			b.WriteByte(s[i])
		case i == 0 || !hide[i-1]:
			b.WriteString(Redacted)
		}
	}
	return b.String()
}

// Bytes is String for a byte slice; b itself comes back, not a copy, when it holds no secret.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil {
		return b
	}
	for _, sec := range r.raw {
		if bytes.Contains(b, sec) {
			return []byte(r.String(string(b)))
		}
	}
	return b
}

// OneLine is the package's OneLine with the secrets hidden in the body as it came (a secret
// with whitespace in it no longer matches once whitespace is collapsed), and again after the
// server's message is decoded but before it is cut to MaxLen: decoding can spell out an
// escaped secret, and cutting first could leave a secret's first characters at the end,
// where no search finds them.
func (r *Redactor) OneLine(body []byte) string {
	return oneLine(body, r)
}
