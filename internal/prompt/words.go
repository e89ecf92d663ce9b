package prompt

import (
	"hash/fnv"
	"math/rand/v2"
	"strings"

	"github.com/llmserve/terraform-provider-llmserve/internal/splitmix"
)

// The syllable inventory: 16 onsets × 16 nuclei = 256 syllables, one per byte value. Every
// syllable is one consonant run followed by one vowel run, and no two onsets or nuclei are
// equal, so a string of syllables parses back in exactly one way: encoding bytes as
// syllables is injective, which is what makes prompt prefixes unique by construction.
var (
	onsets = [16]string{"b", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "ch"}
	nuclei = [16]string{"a", "e", "i", "o", "u", "ai", "au", "ea", "ei", "ia", "io", "oa", "oi", "ou", "ua", "ue"}
)

func syllable(b byte) string { return onsets[b>>4] + nuclei[b&15] }

// streamKey separates streams: the seed and the stream name hashed together.
func streamKey(seed int64, stream string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(uint64(seed) >> (8 * i))
	}
	h.Write(b[:])
	h.Write([]byte(stream))
	return splitmix.Mix(h.Sum64())
}

// vocabularySize words of one to three syllables, drawn once per seed. Short (one-syllable)
// words double as fine adjustments of a prompt's length.
const vocabularySize = 4096

type vocabulary struct {
	words []string
	short []string
}

func newVocabulary(seed int64) vocabulary {
	r := rand.New(rand.NewPCG(uint64(seed), 0x766f636162756c61)) // "vocabula"
	v := vocabulary{words: make([]string, vocabularySize)}
	for i := range v.words {
		var sb strings.Builder
		n := 1 + r.IntN(3)
		for range n {
			sb.WriteString(syllable(byte(r.UintN(256))))
		}
		v.words[i] = sb.String()
		if n == 1 {
			v.short = append(v.short, v.words[i])
		}
	}
	return v
}

// sequence is one prompt's text as an endless run of words: a prefix of four two-syllable
// words spelling the 64-bit identity of (seed, stream, index), then body words drawn from
// the vocabulary by a generator seeded with that identity. A prompt of k body words is the
// first k of them, so lengthening or shortening a prompt never changes its start.
type sequence struct {
	vocab  vocabulary
	rng    *rand.Rand
	prefix string
	words  []string // body words, punctuation attached
	ends   []int    // ends[k] = len(text(k))
}

func newSequence(vocab vocabulary, key uint64, index int) *sequence {
	// Mix is a bijection: distinct indices give distinct ids, while neighbouring indices get
	// unrelated first bytes, so prompts diverge at their first token instead of sharing a
	// prefix the radix cache could reuse.
	id := splitmix.Mix(key + uint64(index))
	var sb strings.Builder
	for i := range 8 {
		if i > 0 && i%2 == 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(syllable(byte(id >> (56 - 8*i))))
	}
	// The prefix ends in a full stop so it reads as its own sentence.
	sb.WriteByte('.')
	s := &sequence{vocab: vocab, rng: rand.New(rand.NewPCG(id, key)), prefix: sb.String()}
	s.ends = []int{len(s.prefix)}
	return s
}

// Identity is the sentence every prompt of (seed, stream, index) starts with, so a server
// (or a test standing in for one) can tell which stream a prompt it received came from.
func Identity(seed int64, stream string, index int) string {
	return newSequence(vocabulary{}, streamKey(seed, stream), index).prefix
}

// grow extends the body to at least k words.
func (s *sequence) grow(k int) {
	for len(s.words) < k {
		w := s.vocab.words[s.rng.IntN(len(s.vocab.words))]
		switch p := s.rng.IntN(40); {
		case p < 3:
			w += ","
		case p < 5:
			w += "."
		}
		s.words = append(s.words, w)
		s.ends = append(s.ends, s.ends[len(s.ends)-1]+1+len(w))
	}
}

// text is the prompt with k body words.
func (s *sequence) text(k int) string {
	s.grow(k)
	var sb strings.Builder
	sb.Grow(s.ends[k])
	sb.WriteString(s.prefix)
	for _, w := range s.words[:k] {
		sb.WriteByte(' ')
		sb.WriteString(w)
	}
	return sb.String()
}

// chars is len(text(k)).
func (s *sequence) chars(k int) int {
	s.grow(k)
	return s.ends[k]
}

// wordsForChars is the k whose text length is closest to want characters.
func (s *sequence) wordsForChars(want float64) int {
	k := 0
	for float64(s.chars(k)) < want {
		k++
	}
	if k > 0 && want-float64(s.chars(k-1)) < float64(s.chars(k))-want {
		return k - 1
	}
	return k
}
