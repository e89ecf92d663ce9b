// Package degenerate decides whether a server's output is broken text rather than
// generation: empty while the server counted tokens, one code point repeated for most of it
// (a NaN in the logits makes greedy decoding pick token 0, "!" in Qwen's and Llama 3's
// vocabularies: the "!!!!" of Intel XPU reports), or byte for byte the output another
// prompt got. A trial's metrics and the readiness probe decide with the same rules, here.
//
// A phrase repeating ("the the the", a sentence cycling) is greedy decoding's natural loop,
// not a fault, and passes: no one code point dominates such text, since a phrase has several.
// A special token repeating ("<unk><unk><unk>", "[PAD][PAD]": a broken vocabulary or a
// model emitting its padding) does not pass although no one code point dominates it: a unit
// of a few code points, with no space between the repetitions and bracketed by ASCII
// punctuation, makes up most of the output. Words and phrases loop with spaces between them,
// CJK phrases with their own punctuation, laughter ("hahaha") with letters only: all pass.
package degenerate

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The thresholds. Shorter outputs are not judged by a rule: a few tokens can be one code
// point or a stock opening shared by many prompts on a healthy server.
const (
	// MinCodePoints is the shortest output the repeated-code-point rule judges.
	MinCodePoints = 16
	// DominantPercent: one code point making up at least this share of an output (of its
	// code points, whitespace included) makes it degenerate. English prose peaks near 18 %
	// (the space), indented code near 50 %, a one-letter word looping ("a a a") at 50 %.
	DominantPercent = 80
	// MinIdenticalCodePoints is the shortest output the cross-prompt identity rule judges:
	// a chat model's stock answer to odd prompts can share its first sentence, rarely a
	// paragraph while its prompt stays in context.
	MinIdenticalCodePoints = 128
	// HeadCodePoints is how much of an output is kept to quote.
	HeadCodePoints = 40
	// MaxTokenCodePoints is the longest unit the repeated-token rule looks for: special
	// tokens are short ("<unk>" 5, "<|endoftext|>" 13), and a longer unit without spaces is a
	// phrase (a CJK sentence loop of 18).
	MaxTokenCodePoints = 16
)

// Kind is why an output is degenerate.
type Kind string

// Kinds, as results documents count them.
const (
	None Kind = ""
	// Empty: no text although the server counted completion tokens.
	Empty Kind = "empty"
	// RepeatedCodePoint: one code point is at least DominantPercent of the output.
	RepeatedCodePoint Kind = "repeated_code_point"
	// RepeatedToken: one unit of 2 to MaxTokenCodePoints code points, without whitespace and
	// holding ASCII punctuation ("<unk>", "[PAD]"), repeated back to back for at least
	// DominantPercent of the output.
	RepeatedToken Kind = "repeated_token"
	// IdenticalAcrossPrompts: byte for byte another prompt's output.
	IdenticalAcrossPrompts Kind = "identical_across_prompts"
)

// Output is what the rules need of one output, gathered while it streams (Tally) or from
// a whole text (Of).
type Output struct {
	CodePoints int    // code points in the whole output
	Dominant   rune   // the code point that occurs most often (the first to reach that count)
	DominantN  int    // how often Dominant occurs
	Head       string // the first HeadCodePoints code points, to quote
	// Token is the unit the output repeats back to back the most (Tally.Output says which
	// units count), and TokenN how many of the output's code points the repetition covers;
	// "" and 0 when no unit repeats three times.
	Token  string
	TokenN int
}

// Of is the Output of a whole text.
func Of(text string) Output {
	var t Tally
	t.WriteString(text)
	return t.Output()
}

// Check is the verdict on one output by the rules that need no other output: Empty when
// there is no text although completionTokens > 0 were counted (pass 0 when the server did
// not say), RepeatedCodePoint when one code point dominates, else None.
func (o Output) Check(completionTokens int) Kind {
	switch {
	case o.CodePoints == 0 && completionTokens > 0:
		return Empty
	case o.CodePoints >= MinCodePoints && o.DominantN*100 >= o.CodePoints*DominantPercent:
		return RepeatedCodePoint
	case o.CodePoints >= MinCodePoints && o.TokenN*100 >= o.CodePoints*DominantPercent:
		return RepeatedToken
	}
	return None
}

// Describe says what makes an output degenerate of kind k, quoting its head safely (Go
// quoting: control characters and invalid bytes escaped), for messages.
func (o Output) Describe(k Kind, completionTokens int) string {
	switch k {
	case Empty:
		return fmt.Sprintf("empty output although the server counted %d completion tokens", completionTokens)
	case RepeatedCodePoint:
		return fmt.Sprintf("%s repeated for %d of its %d code points: %s", codePoint(o.Dominant), o.DominantN, o.CodePoints, o.Quote())
	case RepeatedToken:
		return fmt.Sprintf("the token %s repeated for %d of its %d code points: %s", strconv.Quote(o.Token), o.TokenN, o.CodePoints, o.Quote())
	case IdenticalAcrossPrompts:
		return fmt.Sprintf("the same %d code points for different prompts: %s", o.CodePoints, o.Quote())
	}
	return o.Quote()
}

// Quote is the output's head as a Go string literal, with "…" after it when the output
// is longer: safe to print in any message or log.
func (o Output) Quote() string {
	q := strconv.Quote(o.Head)
	if utf8.RuneCountInString(o.Head) < o.CodePoints {
		q += "…"
	}
	return q
}

func codePoint(r rune) string {
	if strconv.IsPrint(r) && r != ' ' {
		return fmt.Sprintf("U+%04X %q", r, r)
	}
	return fmt.Sprintf("U+%04X", r)
}

// Tally gathers an Output while it streams, chunk by chunk, without keeping the text. The
// zero value is ready.
type Tally struct {
	ascii   [128]int
	other   map[rune]int
	out     Output
	head    strings.Builder
	headN   int
	pending string // the first bytes of a code point whose last ones are in the next chunk

	runs runs
}

// runs are the runs of repetition at each period p (2 to MaxTokenCodePoints): run[p] code
// points in a row have each equaled the one p before them. last holds the latest
// MaxTokenCodePoints code points; token and tokenN are the longest run of a token's shape
// that has ended (tokenShape), its unit and the code points it covered.
type runs struct {
	last   [MaxTokenCodePoints]rune
	run    [MaxTokenCodePoints + 1]int
	token  string
	tokenN int
}

// WriteString adds a chunk of the output. A code point split between chunks is counted
// once, when its last byte arrives.
func (t *Tally) WriteString(s string) {
	if t.pending != "" {
		s, t.pending = t.pending+s, ""
	}
	for len(s) > 0 {
		if !utf8.FullRuneInString(s) {
			t.pending = s
			return
		}
		r, n := utf8.DecodeRuneInString(s)
		t.add(r)
		s = s[n:]
	}
}

// Write is WriteString for a chunk in bytes, which it does not keep.
func (t *Tally) Write(p []byte) {
	if t.pending != "" {
		t.WriteString(string(p))
		return
	}
	for len(p) > 0 {
		if !utf8.FullRune(p) {
			t.pending = string(p)
			return
		}
		r, n := utf8.DecodeRune(p)
		t.add(r)
		p = p[n:]
	}
}

// add counts one code point; an invalid byte is U+FFFD, in the counts and the head.
func (t *Tally) add(r rune) {
	t.runs.add(r, t.out.CodePoints)
	t.out.CodePoints++
	var n int
	if r >= 0 && r < 128 {
		t.ascii[r]++
		n = t.ascii[r]
	} else {
		if t.other == nil {
			t.other = map[rune]int{}
		}
		t.other[r]++
		n = t.other[r]
	}
	if n > t.out.DominantN {
		t.out.Dominant, t.out.DominantN = r, n
	}
	if t.headN < HeadCodePoints {
		t.head.WriteRune(r)
		t.headN++
	}
}

// Output is what the tally has seen; the bytes of a code point left incomplete count as
// one invalid code point each, as utf8.RuneCountInString counts them.
func (t *Tally) Output() Output {
	o := t.out
	// The runs still going end here, on a copy: the tally may go on.
	end := t.runs
	for p := 2; p <= MaxTokenCodePoints; p++ {
		end.endRun(p, o.CodePoints)
	}
	o.Token, o.TokenN = end.token, end.tokenN
	o.CodePoints += len(t.pending)
	o.Head = t.head.String()
	return o
}

// add is code point i, r.
func (t *runs) add(r rune, i int) {
	for p := 2; p <= MaxTokenCodePoints && p <= i; p++ {
		if t.last[(i-p)%MaxTokenCodePoints] == r {
			t.run[p]++
			continue
		}
		t.endRun(p, i)
	}
	t.last[i%MaxTokenCodePoints] = r
}

// endRun closes the run at period p before code point i (the code points up to i-1 are in
// last): it becomes the output's token when it repeated its unit at least three times, has a
// token's shape and covered more than any run before (a shorter period wins a tie).
func (t *runs) endRun(p, i int) {
	n := t.run[p]
	t.run[p] = 0
	if n < 2*p || n+p <= t.tokenN {
		return
	}
	unit := make([]rune, p)
	for k := range p {
		unit[k] = t.last[(i-p+k)%MaxTokenCodePoints]
	}
	if tokenShape(unit) {
		t.token, t.tokenN = string(unit), n+p
	}
}

// tokenShape says whether a repeating unit looks like a special token rather than language:
// no whitespace (a word or phrase loop has a space in every unit), at least one ASCII
// punctuation or symbol (the brackets of "<unk>", "[PAD]", "<|endoftext|>"; a letters-only
// or CJK loop has none), and more than one code point (one repeated code point is
// RepeatedCodePoint's).
func tokenShape(unit []rune) bool {
	punct, same := false, true
	for _, r := range unit {
		if unicode.IsSpace(r) {
			return false
		}
		punct = punct || r < utf8.RuneSelf && (unicode.IsPunct(r) || unicode.IsSymbol(r))
		same = same && r == unit[0]
	}
	return punct && !same
}

// Identity finds outputs that different prompts got byte for byte. Add every output of a
// trial, then ask Shared.
type Identity struct {
	groups map[uint64]identityGroup
}

type identityGroup struct {
	prompt      uint64
	manyPrompts bool
}

// Add records that the prompt hashed to prompt got the output hashed to output, with
// codePoints code points; outputs shorter than MinIdenticalCodePoints are not judged.
func (id *Identity) Add(prompt, output uint64, codePoints int) {
	if codePoints < MinIdenticalCodePoints {
		return
	}
	if id.groups == nil {
		id.groups = map[uint64]identityGroup{}
	}
	g, ok := id.groups[output]
	switch {
	case !ok:
		id.groups[output] = identityGroup{prompt: prompt}
	case g.prompt != prompt && !g.manyPrompts:
		g.manyPrompts = true
		id.groups[output] = g
	}
}

// Shared reports whether the output hashed to output (with codePoints code points) was
// also another prompt's.
func (id *Identity) Shared(output uint64, codePoints int) bool {
	return codePoints >= MinIdenticalCodePoints && id.groups[output].manyPrompts
}
