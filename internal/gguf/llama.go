package gguf

import (
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"strings"

	"github.com/llmserve/terraform-provider-llmserve/internal/splitmix"
)

// Token types of tokenizer.ggml.token_type, numbered as llama.cpp's
// llama_token_type.
const (
	TokenNormal      int32 = 1
	TokenUnknown     int32 = 2
	TokenControl     int32 = 3
	TokenUserDefined int32 = 4
	TokenUnused      int32 = 5
	TokenByte        int32 = 6
)

// Fixed ids of the special tokens in a RandomLlama vocabulary.
const (
	TokenIDUnknown   = 0
	TokenIDBOS       = 1
	TokenIDEOS       = 2
	TokenIDSystem    = 3
	TokenIDUser      = 4
	TokenIDAssistant = 5
	TokenIDEnd       = 6
	firstByteToken   = 7
	firstNormalToken = firstByteToken + 256
)

// ChatTemplate is the Jinja chat template stored in the model. It wraps each
// message in one-token role markers and adds no whitespace, so the server adds
// a fixed number of tokens to any conversation: BOS, <|role|> and <|end|> per
// message, and <|assistant|> for the generation prompt (4 for one user
// message). Without the newlines that common templates use, a message's
// content tokenizes exactly as it does alone through /tokenize, which keeps
// prompt lengths predictable.
const ChatTemplate = "{%- for message in messages -%}" +
	"{{- '<|' + message['role'] + '|>' + message['content'] + '<|end|>' -}}" +
	"{%- endfor -%}" +
	"{%- if add_generation_prompt -%}{{- '<|assistant|>' -}}{%- endif -%}"

// spmSpace is SentencePiece's visible stand-in for a space.
const spmSpace = "\u2581"

// LlamaConfig sizes a random-weight llama-architecture model.
type LlamaConfig struct {
	Seed        uint64
	Embedding   int // llama.embedding_length
	Layers      int // llama.block_count
	FeedForward int // llama.feed_forward_length
	Heads       int // llama.attention.head_count
	HeadsKV     int // llama.attention.head_count_kv; 0 means Heads
	Vocab       int // total tokens, specials and the 256 byte tokens included
	Context     int // llama.context_length, the largest context a server may use
	F32         bool
}

// DefaultLlamaConfig is sized so prefill dominates time-to-first-token on a
// small CPU: roughly 0.1-0.3 s for 256 prompt tokens on 2 cores, growing
// visibly with prompt length, while the file stays in the tens of MB.
func DefaultLlamaConfig() LlamaConfig {
	return LlamaConfig{
		Seed:        1,
		Embedding:   512,
		Layers:      6,
		FeedForward: 1536,
		Heads:       8,
		Vocab:       4096,
		Context:     16384,
	}
}

func (c LlamaConfig) headsKV() int {
	if c.HeadsKV == 0 {
		return c.Heads
	}
	return c.HeadsKV
}

// Validate reports the first setting llama.cpp would reject or that breaks
// the model's guarantees.
func (c LlamaConfig) Validate() error {
	switch {
	case c.Embedding < 2:
		// Dimension 0 is reserved as the constant channel (see RandomLlama).
		return fmt.Errorf("embedding %d: need at least 2", c.Embedding)
	case c.Layers < 1:
		return fmt.Errorf("layers %d: need at least 1", c.Layers)
	case c.FeedForward < 1:
		return fmt.Errorf("feed-forward %d: need at least 1", c.FeedForward)
	case c.Heads < 1 || c.Embedding%c.Heads != 0:
		return fmt.Errorf("heads %d must divide embedding %d", c.Heads, c.Embedding)
	case (c.Embedding/c.Heads)%2 != 0:
		return fmt.Errorf("head size %d must be even for RoPE", c.Embedding/c.Heads)
	case c.headsKV() < 1 || c.Heads%c.headsKV() != 0:
		return fmt.Errorf("kv heads %d must divide heads %d", c.headsKV(), c.Heads)
	case c.Vocab < minVocab():
		return fmt.Errorf("vocab %d: need at least %d (specials, 256 byte tokens, space, printable ASCII)", c.Vocab, minVocab())
	case c.Vocab > 262144:
		// Far beyond a tiny test model; also bounds the word generator's search.
		return fmt.Errorf("vocab %d: at most 262144", c.Vocab)
	case c.Context < 1:
		return fmt.Errorf("context %d: need at least 1", c.Context)
	}
	return nil
}

// Parameters is the number of weights the model holds.
func (c LlamaConfig) Parameters() int64 {
	e, f, v := int64(c.Embedding), int64(c.FeedForward), int64(c.Vocab)
	kv := int64(c.Embedding / c.Heads * c.headsKV())
	perLayer := e*e*2 + e*kv*2 + 3*e*f + 2*e
	return int64(c.Layers)*perLayer + 2*v*e + e
}

// Vocabulary is a SentencePiece-style ("llama") vocabulary.
type Vocabulary struct {
	Tokens []string
	Scores []float32
	Types  []int32
}

// Emittable reports whether the model may generate token id: only normal
// tokens, whose text is printable ASCII, so every output is valid UTF-8 that
// llama-server streams without cancelling the request.
func (v Vocabulary) Emittable(id int) bool { return v.Types[id] == TokenNormal }

// minVocab counts the fixed tokens: specials, bytes, the space marker and
// printable ASCII.
func minVocab() int { return firstNormalToken + 1 + len(printableASCII()) }

func printableASCII() []string {
	var s []string
	for c := byte('!'); c <= '~'; c++ {
		s = append(s, string(c))
	}
	return s
}

// NewVocabulary builds n tokens deterministically from seed: the special
// tokens, the 256 byte tokens <0x00>..<0xFF> (so any input text tokenizes,
// through byte fallback), every printable ASCII character, the space marker,
// then generated lowercase word pieces with and without a leading space marker.
//
// The generated pieces are prefix-closed: every prefix of a piece that is at
// least two characters long is a token too. llama.cpp's SPM tokenizer only
// reaches a token by merging adjacent tokens, so without the prefixes most
// pieces could never appear in a tokenized prompt.
func NewVocabulary(n int, seed uint64) (Vocabulary, error) {
	if n < minVocab() {
		return Vocabulary{}, fmt.Errorf("vocab %d: need at least %d", n, minVocab())
	}
	v := Vocabulary{}
	seen := map[string]bool{}
	add := func(text string, typ int32) {
		seen[text] = true
		v.Tokens = append(v.Tokens, text)
		v.Types = append(v.Types, typ)
		// SPM merges the highest-scoring pair first; earlier (shorter, more
		// basic) tokens score higher, as frequent pieces do in a trained model.
		v.Scores = append(v.Scores, -float32(len(v.Tokens)-1))
	}
	add("<unk>", TokenUnknown)
	add("<s>", TokenControl)
	add("</s>", TokenControl)
	add("<|system|>", TokenControl)
	add("<|user|>", TokenControl)
	add("<|assistant|>", TokenControl)
	add("<|end|>", TokenControl)
	for b := 0; b < 256; b++ {
		add(fmt.Sprintf("<0x%02X>", b), TokenByte)
	}
	add(spmSpace, TokenNormal)
	for _, s := range printableASCII() {
		add(s, TokenNormal)
	}

	rng := newRNG(seed, "tokenizer.ggml.tokens")
	const consonants, vowels = "bcdfghjklmnprstvwyz", "aeiou"
	for len(v.Tokens) < n {
		var w strings.Builder
		for range 1 + rng.intn(3) {
			if rng.intn(4) != 0 {
				w.WriteByte(consonants[rng.intn(len(consonants))])
			}
			w.WriteByte(vowels[rng.intn(len(vowels))])
			if rng.intn(3) == 0 {
				w.WriteByte(consonants[rng.intn(len(consonants))])
			}
		}
		word := w.String()
		// Three in four pieces start a word; the rest continue one.
		if rng.intn(4) != 0 {
			word = spmSpace + word
		}
		start := 2
		if strings.HasPrefix(word, spmSpace) {
			start = len(spmSpace) + 1
		}
		for end := start; end <= len(word) && len(v.Tokens) < n; end++ {
			if p := word[:end]; !seen[p] {
				add(p, TokenNormal)
			}
		}
	}
	return v, nil
}

// RandomLlama returns a complete llama-architecture model with random weights
// drawn from cfg.Seed: the same config always yields a byte-identical file.
//
// The weights are random but shaped so that generation is well behaved:
//
//   - Embedding dimension 0 is a constant channel: every token embedding holds
//     1 there and no attention or feed-forward output writes to it, so after
//     the final RMS norm it is always positive.
//   - The output row of every token that must never be generated (control,
//     unknown and byte tokens, EOS included) is zero except for a large
//     negative weight on that channel, so its logit is always strongly
//     negative. The model therefore never ends a reply by itself (ignore_eos
//     or not, it produces exactly max_tokens) and only emits printable ASCII.
//   - Projections are scaled by 1/sqrt(fan-in) so activations neither vanish
//     nor blow up across layers.
func RandomLlama(cfg LlamaConfig) (*File, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	vocab, err := NewVocabulary(cfg.Vocab, cfg.Seed)
	if err != nil {
		return nil, err
	}
	e, ff, nv := uint64(cfg.Embedding), uint64(cfg.FeedForward), uint64(cfg.Vocab)
	headDim := cfg.Embedding / cfg.Heads
	kv := uint64(headDim * cfg.headsKV())

	wtype, fileType := TensorF16, uint32(1) // LLAMA_FTYPE_MOSTLY_F16
	if cfg.F32 {
		wtype, fileType = TensorF32, 0 // LLAMA_FTYPE_ALL_F32
	}

	f := &File{Metadata: []KV{
		{"general.architecture", "llama"},
		{"general.name", "llmserve-tiny-random"},
		// The generator now lives in cmd/ggufgen; the text keeps its old path because it is
		// part of the model's bytes, which TestDefaultModelDigest pins and the shared cache reuses.
		{"general.description", "random-weight test model generated by tools/ggufgen; its text is meaningless"},
		{"general.file_type", fileType},
		{"llama.vocab_size", uint32(cfg.Vocab)},
		{"llama.context_length", uint32(cfg.Context)},
		{"llama.embedding_length", uint32(cfg.Embedding)},
		{"llama.block_count", uint32(cfg.Layers)},
		{"llama.feed_forward_length", uint32(cfg.FeedForward)},
		{"llama.rope.dimension_count", uint32(headDim)},
		{"llama.rope.freq_base", float32(10000)},
		{"llama.attention.head_count", uint32(cfg.Heads)},
		{"llama.attention.head_count_kv", uint32(cfg.headsKV())},
		{"llama.attention.layer_norm_rms_epsilon", float32(1e-5)},
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", vocab.Tokens},
		{"tokenizer.ggml.scores", vocab.Scores},
		{"tokenizer.ggml.token_type", vocab.Types},
		{"tokenizer.ggml.unknown_token_id", uint32(TokenIDUnknown)},
		{"tokenizer.ggml.bos_token_id", uint32(TokenIDBOS)},
		{"tokenizer.ggml.eos_token_id", uint32(TokenIDEOS)},
		{"tokenizer.ggml.add_bos_token", true},
		{"tokenizer.ggml.add_eos_token", false},
		{"tokenizer.ggml.add_space_prefix", true},
		{"tokenizer.chat_template", ChatTemplate},
		{"llmserve.ggufgen.seed", cfg.Seed},
	}}

	ones := func(n uint64) func() []float32 {
		return func() []float32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = 1
			}
			return v
		}
	}
	// uniform fills a weight with U(-a, a), a = sqrt(3/fanIn), i.e. standard
	// deviation 1/sqrt(fanIn). Each tensor has its own stream keyed by name, so
	// adding a tensor never changes the others.
	uniform := func(name string, n uint64, fanIn uint64) []float32 {
		r := newRNG(cfg.Seed, name)
		a := float32(math.Sqrt(3 / float64(fanIn)))
		v := make([]float32, n)
		for i := range v {
			v[i] = a * (2*r.float32() - 1)
		}
		return v
	}
	// zeroOutput0 stops a projection from writing embedding dimension 0, the
	// constant channel: in ggml order output row 0 is the first nIn values.
	zeroOutput0 := func(v []float32, nIn uint64) []float32 {
		clear(v[:nIn])
		return v
	}
	add := func(name string, shape []uint64, typ TensorType, values func() []float32) {
		f.Tensors = append(f.Tensors, Tensor{Name: name, Shape: shape, Type: typ, Values: values})
	}

	add("token_embd.weight", []uint64{e, nv}, wtype, func() []float32 {
		// Unit scale: the first RMS norm rescales anyway, and it keeps the
		// constant channel (1.0) comparable to the others.
		v := uniform("token_embd.weight", e*nv, 1)
		for t := uint64(0); t < nv; t++ {
			v[t*e] = 1
		}
		return v
	})
	for l := 0; l < cfg.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		add(p+"attn_norm.weight", []uint64{e}, TensorF32, ones(e))
		add(p+"attn_q.weight", []uint64{e, e}, wtype, func() []float32 { return uniform(p+"attn_q.weight", e*e, e) })
		add(p+"attn_k.weight", []uint64{e, kv}, wtype, func() []float32 { return uniform(p+"attn_k.weight", e*kv, e) })
		add(p+"attn_v.weight", []uint64{e, kv}, wtype, func() []float32 { return uniform(p+"attn_v.weight", e*kv, e) })
		add(p+"attn_output.weight", []uint64{e, e}, wtype, func() []float32 {
			return zeroOutput0(uniform(p+"attn_output.weight", e*e, e), e)
		})
		add(p+"ffn_norm.weight", []uint64{e}, TensorF32, ones(e))
		add(p+"ffn_gate.weight", []uint64{e, ff}, wtype, func() []float32 { return uniform(p+"ffn_gate.weight", e*ff, e) })
		add(p+"ffn_up.weight", []uint64{e, ff}, wtype, func() []float32 { return uniform(p+"ffn_up.weight", e*ff, e) })
		add(p+"ffn_down.weight", []uint64{ff, e}, wtype, func() []float32 {
			return zeroOutput0(uniform(p+"ffn_down.weight", ff*e, ff), ff)
		})
	}
	add("output_norm.weight", []uint64{e}, TensorF32, ones(e))
	add("output.weight", []uint64{e, nv}, wtype, func() []float32 {
		v := uniform("output.weight", e*nv, e)
		for t := uint64(0); t < nv; t++ {
			row := v[t*e : (t+1)*e]
			if vocab.Emittable(int(t)) {
				row[0] = 0 // the constant channel must not favour any token
				continue
			}
			clear(row)
			row[0] = ForbiddenLogitWeight
		}
		return v
	})
	return f, nil
}

// ForbiddenLogitWeight is the output weight on the constant channel for
// tokens the model must never emit. The normalised channel is about 1, while
// allowed tokens' logits are about N(0, 1); -64 puts forbidden tokens some
// e^60 times below the likeliest one even at temperature 1.
const ForbiddenLogitWeight = -64

// WriteRandomLlama writes RandomLlama(cfg) to w.
func WriteRandomLlama(w io.Writer, cfg LlamaConfig) (int64, error) {
	f, err := RandomLlama(cfg)
	if err != nil {
		return 0, err
	}
	return f.WriteTo(w)
}

// rng is a splitmix64 stream per named tensor or table: byte-identical output for a seed
// depends on a generator that never changes.
type rng struct{ splitmix.Source }

func newRNG(seed uint64, stream string) *rng {
	h := fnv.New64a()
	h.Write([]byte(stream))
	return &rng{splitmix.New(seed ^ h.Sum64())}
}

// float32 is uniform in [0, 1) with 24 bits of precision.
func (r *rng) float32() float32 { return float32(r.Uint64()>>40) / (1 << 24) }

// intn is uniform enough in [0, n) for the small n the vocabulary uses.
func (r *rng) intn(n int) int { return int(r.Uint64() % uint64(n)) }
