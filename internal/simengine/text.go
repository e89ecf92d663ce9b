package simengine

import (
	"hash/fnv"
	"strings"
	"unicode"
)

// Tokenize is the simulated engine's tokenizer: one token per whitespace-separated word that has
// at least one character other than punctuation, plus one token per punctuation mark. It is
// simple on purpose: a client calibrating prompt lengths against it must be able to predict it.
// Word ids are a hash of the word (>= 1000); punctuation ids are the mark's code point.
func Tokenize(s string) []int {
	var ids []int
	for _, field := range strings.Fields(s) {
		var word strings.Builder
		var punct []int
		for _, r := range field {
			if unicode.IsPunct(r) {
				punct = append(punct, int(r))
				continue
			}
			word.WriteRune(r)
		}
		if word.Len() > 0 {
			h := fnv.New32a()
			_, _ = h.Write([]byte(word.String())) // hash.Hash never returns an error
			ids = append(ids, 1000+int(h.Sum32()%100000))
		}
		ids = append(ids, punct...)
	}
	return ids
}

// CountTokens is len(Tokenize(s)) without building the slice's ids.
func CountTokens(s string) int { return len(Tokenize(s)) }

const letters = "abcdefghijklmnopqrstuvwxyz"

// outputWord is the i-th generated token for a request: a lowercase ASCII word, preceded by a
// space, that the tokenizer counts as exactly one token. seed is the prompt's hash (plus a
// per-request nonce when temperature > 0), so outputs are unique per prompt.
func outputWord(seed uint64, i int) string {
	r := newRNG(mix(seed, uint64(i)))
	v := r.Uint64()
	n := 3 + int(v%5)
	b := make([]byte, 0, n+1)
	b = append(b, ' ')
	for j := 0; j < n; j++ {
		v /= 26
		if v == 0 {
			v = r.Uint64()
		}
		b = append(b, letters[v%26])
	}
	return string(b)
}

// OutputFault makes the simulated engine answer HTTP 200 with broken text, its timing, token
// counts and usage unchanged: the servers B70 users report (sgl-kernel-xpu #243, intel_xpu
// attention; llm-scaler #647, "!!!!" output), for tests that must tell them from healthy ones.
type OutputFault string

// Output faults.
const (
	// OutputExclamation: every token is "!", what greedy decoding picks from logits gone
	// NaN (token 0 of Qwen's and Llama 3's vocabularies).
	OutputExclamation OutputFault = "exclamation"
	// OutputEmpty: no text at all, while usage still counts the tokens.
	OutputEmpty OutputFault = "empty"
	// OutputSame: the same text for every prompt.
	OutputSame OutputFault = "same"
	// OutputUnknownToken: every token is "<unk>", what a server whose tokenizer and model
	// disagree (a vocabulary that lost its merges) detokenizes to.
	OutputUnknownToken OutputFault = "unk"
)

// word is the generator of a request's i-th token under fault f: outputWord, unless the
// fault replaces it.
func (f OutputFault) word(seed uint64, i int) string {
	switch f {
	case OutputExclamation:
		return "!"
	case OutputEmpty:
		return ""
	case OutputSame:
		return outputWord(0, i)
	case OutputUnknownToken:
		return "<unk>"
	}
	return outputWord(seed, i)
}

// hashString is FNV-1a 64 of s.
func hashString(s string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s)) // hash.Hash never returns an error
	return h.Sum64()
}
