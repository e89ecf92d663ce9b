package degenerate

import (
	"encoding/json"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		text   string
		tokens int
		want   Kind
	}{
		{"llm-scaler #647: every token \"!\"", strings.Repeat("!", 64), 64, RepeatedCodePoint},
		{"16 code points, the shortest judged", strings.Repeat("!", 16), 16, RepeatedCodePoint},
		{"15 code points: too short to judge", strings.Repeat("!", 15), 15, None},
		{"exactly 80 % one code point", strings.Repeat("!", 80) + strings.Repeat("ab", 10), 30, RepeatedCodePoint},
		{"just under 80 %", strings.Repeat("!", 79) + strings.Repeat("ab", 10) + "c", 30, None},
		{"a multi-byte code point", strings.Repeat("é", 20), 20, RepeatedCodePoint},
		{"empty while tokens were counted", "", 12, Empty},
		{"empty and no tokens counted", "", 0, None},
		{"a word loop", strings.Repeat("the ", 100), 100, None},
		{"a one-letter word loop: 50 %", strings.Repeat("a ", 100), 100, None},
		{"prose", "The quick brown fox jumps over the lazy dog, and then it runs away into the forest.", 20, None},
		// A special token back to back: no one code point dominates, the unit does.
		{"<unk> repeated", strings.Repeat("<unk>", 16), 16, RepeatedToken},
		{"[PAD] repeated", strings.Repeat("[PAD]", 16), 16, RepeatedToken},
		{"<|endoftext|> repeated", strings.Repeat("<|endoftext|>", 8), 8, RepeatedToken},
		{"<s> after a sentence", "Here it is: " + strings.Repeat("<s>", 20), 21, RepeatedToken},
		{"a token three times: 15 code points, too short to judge", strings.Repeat("<unk>", 3), 3, None},
		{"<unk> for just under 80 %", strings.Repeat("x", 21) + strings.Repeat("<unk>", 16), 17, None},
		{"<unk> for exactly 80 %", strings.Repeat("x", 20) + strings.Repeat("<unk>", 16), 17, RepeatedToken},
		{"two tokens alternating: one unit", strings.Repeat("<s></s>", 8), 16, RepeatedToken},
		// Loops that are language, however repetitive, pass.
		{"laughter: letters only", strings.Repeat("ha", 40), 40, None},
		{"a word loop with spaces", strings.Repeat("<unk> ", 16), 16, None},
		{"a short CJK phrase loop", strings.Repeat("重要。", 20), 20, None},
		{"a CJK sentence loop", strings.Repeat("我们需要注意的是，这个问题非常重要。", 5), 60, None},
		{"two different runs, neither 80 %", strings.Repeat("<a>", 14) + strings.Repeat("[b]", 14), 28, None},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Of(tc.text).Check(tc.tokens); got != tc.want {
				t.Errorf("Of(%q).Check(%d) = %q, want %q", tc.text, tc.tokens, got, tc.want)
			}
		})
	}
}

// Recorded long outputs of healthy servers pass, greedy decoding's phrase loops included
// (testdata/healthy: the tiny llama.cpp model's greedy outputs of 512 tokens, and the loops
// greedy decoding falls into: a word, a sentence, a five-word phrase, a numbered list,
// indented code and JSON, a table, CJK, and loops full of brackets and punctuation that are
// no special token: HTML rows, citations, array indexes, generic types); the broken ones of testdata/degenerate fail, the
// special tokens repeated (repeated-token-*) by the repeated-token rule. Each
// is also streamed in chunks of every size from 1 to 7 bytes, splitting code points, and
// must give the same Output as the whole text.
func TestRecordedOutputs(t *testing.T) {
	t.Parallel()
	for dir, wantOf := range map[string]func(string) Kind{
		"healthy": func(string) Kind { return None },
		"degenerate": func(f string) Kind {
			if strings.HasPrefix(filepath.Base(f), "repeated-token-") {
				return RepeatedToken
			}
			return RepeatedCodePoint
		},
	} {
		files, err := filepath.Glob(filepath.Join("testdata", dir, "*.txt"))
		if err != nil || len(files) < 4 {
			t.Fatalf("testdata/%s: %d files, %v", dir, len(files), err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			text := string(b)
			want := wantOf(f)
			whole := Of(text)
			if got := whole.Check(len(text)); got != want {
				t.Errorf("%s: %q (%s), want %q", f, got, whole.Describe(got, 0), want)
			}
			if whole.CodePoints != len([]rune(text)) {
				t.Errorf("%s: %d code points, want %d", f, whole.CodePoints, len([]rune(text)))
			}
			for size := 1; size <= 7; size++ {
				var str, byt Tally
				for i := 0; i < len(text); i += size {
					str.WriteString(text[i:min(i+size, len(text))])
					byt.Write(b[i:min(i+size, len(b))])
				}
				if got := str.Output(); got != whole {
					t.Errorf("%s in chunks of %d bytes: %+v, want %+v", f, size, got, whole)
				}
				if got := byt.Output(); got != whole {
					t.Errorf("%s in chunks of %d bytes (Write): %+v, want %+v", f, size, got, whole)
				}
			}
		}
	}
}

func TestDescribeQuotesSafely(t *testing.T) {
	t.Parallel()
	if got, want := Of("A: "+strings.Repeat("<unk>", 20)).Describe(RepeatedToken, 21),
		`the token "<unk>" repeated for 100 of its 103 code points: "A: <unk><unk><unk><unk><unk><unk><unk><u"…`; got != want {
		t.Errorf("Describe = %s, want %s", got, want)
	}
	o := Of(strings.Repeat("!", 100))
	if got, want := o.Describe(RepeatedCodePoint, 100), `U+0021 '!' repeated for 100 of its 100 code points: "`+strings.Repeat("!", HeadCodePoints)+`"…`; got != want {
		t.Errorf("Describe = %s, want %s", got, want)
	}
	// Control characters and an escape sequence come out escaped, never raw.
	o = Of("\x1b[2J" + strings.Repeat("\n", 30))
	got := o.Describe(RepeatedCodePoint, 30)
	if strings.ContainsAny(got, "\x1b\n") || !strings.Contains(got, `U+000A repeated for 30 of its 34 code points: "\x1b[2J\n\n`) {
		t.Errorf("Describe = %s", got)
	}
	if got := Of("").Describe(Empty, 7); got != "empty output although the server counted 7 completion tokens" {
		t.Errorf("Describe(empty) = %s", got)
	}
}

func TestIdentity(t *testing.T) {
	t.Parallel()
	long := MinIdenticalCodePoints
	var id Identity
	id.Add(1, 100, long)   // output 100 for prompt 1...
	id.Add(1, 100, long)   // ...twice: the same prompt, greedy: fine
	id.Add(2, 200, long)   // output 200 for prompt 2...
	id.Add(3, 200, long)   // ...and for prompt 3: shared
	id.Add(4, 300, long-1) // short outputs are not judged
	id.Add(5, 300, long-1)
	for _, tc := range []struct {
		output uint64
		n      int
		want   bool
	}{{100, long, false}, {200, long, true}, {300, long - 1, false}, {999, long, false}} {
		if got := id.Shared(tc.output, tc.n); got != tc.want {
			t.Errorf("Shared(%d) = %t, want %t", tc.output, got, tc.want)
		}
	}
}

// recorded is one output a server gave, as testdata/healthy/*.jsonl hold them.
type recorded struct {
	Prompt           string `json:"prompt"`
	CompletionTokens int    `json:"completion_tokens"`
	Text             string `json:"text"`
}

// The recorded greedy outputs of a healthy server, judged as one trial's: none is
// flagged, by a rule of its own or as another prompt's text. The count is the false-alarm
// figure on recorded outputs.
func TestRecordedGreedyOutputsPass(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "healthy", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("testdata/healthy/*.jsonl: %v", err)
	}
	judged, flagged := 0, 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var outs []recorded
		var id Identity
		for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var o recorded
			if err := json.Unmarshal([]byte(line), &o); err != nil {
				t.Fatalf("%s line %d: %v", f, i+1, err)
			}
			outs = append(outs, o)
			id.Add(hashOf(o.Prompt), hashOf(o.Text), Of(o.Text).CodePoints)
		}
		for _, o := range outs {
			out := Of(o.Text)
			judged++
			if k := out.Check(o.CompletionTokens); k != None {
				flagged++
				t.Errorf("%s: prompt %q: %s", f, o.Prompt, out.Describe(k, o.CompletionTokens))
			}
			if id.Shared(hashOf(o.Text), out.CodePoints) {
				flagged++
				t.Errorf("%s: prompt %q shares its output with another prompt: %s", f, o.Prompt, out.Quote())
			}
		}
	}
	t.Logf("%d of %d recorded healthy greedy outputs flagged", flagged, judged)
}

func hashOf(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}
