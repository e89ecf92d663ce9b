package gguf

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"
)

func tinyConfig() LlamaConfig {
	return LlamaConfig{Seed: 42, Embedding: 16, Layers: 2, FeedForward: 24, Heads: 4, HeadsKV: 2, Vocab: 600, Context: 256}
}

func writeModel(t *testing.T, cfg LlamaConfig) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := WriteRandomLlama(&buf, cfg); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRandomLlamaIsDeterministic(t *testing.T) {
	t.Parallel()
	cfg := tinyConfig()
	a, b := writeModel(t, cfg), writeModel(t, cfg)
	if !bytes.Equal(a, b) {
		t.Fatal("same config wrote different bytes")
	}
	cfg.Seed++
	if c := writeModel(t, cfg); bytes.Equal(a, c) {
		t.Fatal("a different seed wrote the same bytes")
	}
}

// TestDefaultModelDigest pins the default model's bytes, so a change to the
// generator (and to every benchmark figure measured with it) is a deliberate
// one: update the digest in the same change and say why.
func TestDefaultModelDigest(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes the 49 MB default model")
	}
	sum := sha256.Sum256(writeModel(t, DefaultLlamaConfig()))
	const want = "358ad88e7637404d448ddc0685519d178c86654f2b6c869864ec8b79600be310"
	if got := fmt.Sprintf("%x", sum); got != want {
		t.Fatalf("default model sha256 = %s, want %s", got, want)
	}
}

func TestRandomLlamaMetadata(t *testing.T) {
	t.Parallel()
	cfg := tinyConfig()
	p := parse(t, writeModel(t, cfg), 32)
	if p.version != 3 {
		t.Fatalf("version = %d, want 3", p.version)
	}
	// Values llama.cpp's llama architecture loader requires, worked out from
	// tinyConfig: head size 16/4 = 4.
	want := map[string]string{
		"general.architecture":                   "llama",
		"general.file_type":                      "1",
		"llama.context_length":                   "256",
		"llama.embedding_length":                 "16",
		"llama.block_count":                      "2",
		"llama.feed_forward_length":              "24",
		"llama.attention.head_count":             "4",
		"llama.attention.head_count_kv":          "2",
		"llama.rope.dimension_count":             "4",
		"llama.attention.layer_norm_rms_epsilon": "1e-05",
		"tokenizer.ggml.model":                   "llama",
		"tokenizer.ggml.bos_token_id":            "1",
		"tokenizer.ggml.eos_token_id":            "2",
		"tokenizer.ggml.unknown_token_id":        "0",
		"tokenizer.ggml.add_bos_token":           "true",
		"tokenizer.chat_template":                ChatTemplate,
	}
	for k, v := range want {
		if got := fmt.Sprint(p.meta[k]); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	for _, k := range []string{"tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"} {
		if n := len(p.meta[k].([]any)); n != 600 {
			t.Errorf("%s has %d entries, want 600", k, n)
		}
	}
}

func TestRandomLlamaTensors(t *testing.T) {
	t.Parallel()
	cfg := tinyConfig()
	p := parse(t, writeModel(t, cfg), 32)
	// Shapes in ggml order {n_in, n_out}; kv width = head size 4 * 2 kv heads.
	want := map[string][]uint64{
		"token_embd.weight":        {16, 600},
		"output_norm.weight":       {16},
		"output.weight":            {16, 600},
		"blk.0.attn_norm.weight":   {16},
		"blk.0.attn_q.weight":      {16, 16},
		"blk.0.attn_k.weight":      {16, 8},
		"blk.0.attn_v.weight":      {16, 8},
		"blk.0.attn_output.weight": {16, 16},
		"blk.0.ffn_norm.weight":    {16},
		"blk.0.ffn_gate.weight":    {16, 24},
		"blk.0.ffn_up.weight":      {16, 24},
		"blk.1.ffn_down.weight":    {24, 16},
		"blk.1.attn_output.weight": {16, 16},
		"blk.1.attn_q.weight":      {16, 16},
		"blk.1.ffn_norm.weight":    {16},
		"blk.1.attn_norm.weight":   {16},
		"blk.1.attn_k.weight":      {16, 8},
		"blk.1.attn_v.weight":      {16, 8},
		"blk.1.ffn_gate.weight":    {16, 24},
		"blk.1.ffn_up.weight":      {16, 24},
		"blk.0.ffn_down.weight":    {24, 16},
	}
	if len(p.tensors) != len(want) {
		t.Errorf("%d tensors, want %d", len(p.tensors), len(want))
	}
	for _, pt := range p.tensors {
		shape, ok := want[pt.name]
		if !ok {
			t.Errorf("unexpected tensor %s", pt.name)
			continue
		}
		if fmt.Sprint(pt.shape) != fmt.Sprint(shape) {
			t.Errorf("%s shape = %v, want %v", pt.name, pt.shape, shape)
		}
		// Norms stay F32 (ggml multiplies them with F32 activations); the rest
		// is F16 by default.
		wantType := uint32(TensorF16)
		if len(shape) == 1 {
			wantType = uint32(TensorF32)
		}
		if pt.typ != wantType {
			t.Errorf("%s type = %d, want %d", pt.name, pt.typ, wantType)
		}
		if pt.offset%32 != 0 {
			t.Errorf("%s offset %d is not 32-aligned", pt.name, pt.offset)
		}
	}
}

// f16 decodes IEEE binary16 for the tests' own checks.
func f16(h uint16) float32 {
	sign := float32(1)
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, mant := int(h>>10)&0x1f, float64(h&0x3ff)
	if exp == 0 {
		return sign * float32(math.Ldexp(mant, -24))
	}
	return sign * float32(math.Ldexp(1+mant/1024, exp-15))
}

func TestRandomLlamaGenerationGuards(t *testing.T) {
	t.Parallel()
	cfg := tinyConfig()
	b := writeModel(t, cfg)
	p := parse(t, b, 32)
	vocab, err := NewVocabulary(cfg.Vocab, cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	tensor := func(name string) []float32 {
		for _, pt := range p.tensors {
			if pt.name == name {
				n := 1
				for _, d := range pt.shape {
					n *= int(d)
				}
				start := p.dataStart + int(pt.offset)
				v := make([]float32, n)
				for i := range v {
					v[i] = f16(binary.LittleEndian.Uint16(b[start+2*i:]))
				}
				return v
			}
		}
		t.Fatalf("no tensor %s", name)
		return nil
	}
	e := cfg.Embedding

	emb := tensor("token_embd.weight")
	for tok := 0; tok < cfg.Vocab; tok++ {
		if emb[tok*e] != 1 {
			t.Fatalf("token %d embedding[0] = %v, want the constant 1", tok, emb[tok*e])
		}
	}
	for l := range cfg.Layers {
		for _, name := range []string{"attn_output", "ffn_down"} {
			w := tensor(fmt.Sprintf("blk.%d.%s.weight", l, name))
			nIn := len(w) / e
			for i := 0; i < nIn; i++ {
				if w[i] != 0 {
					t.Fatalf("blk.%d.%s writes the constant channel (weight %d = %v)", l, name, i, w[i])
				}
			}
		}
	}
	out := tensor("output.weight")
	emittable := 0
	for tok := 0; tok < cfg.Vocab; tok++ {
		row := out[tok*e : (tok+1)*e]
		if vocab.Emittable(tok) {
			emittable++
			if row[0] != 0 {
				t.Errorf("emittable token %d has constant-channel weight %v, want 0", tok, row[0])
			}
			continue
		}
		if row[0] != ForbiddenLogitWeight {
			t.Errorf("token %d (%q) has constant-channel weight %v, want %v", tok, vocab.Tokens[tok], row[0], ForbiddenLogitWeight)
		}
		for i, w := range row[1:] {
			if w != 0 {
				t.Fatalf("forbidden token %d output weight %d = %v, want 0", tok, i+1, w)
			}
		}
	}
	// 600 tokens less 7 specials and 256 bytes.
	if emittable != 337 {
		t.Errorf("%d emittable tokens, want 337", emittable)
	}
}

func TestNewVocabulary(t *testing.T) {
	t.Parallel()
	v, err := NewVocabulary(3000, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Tokens) != 3000 || len(v.Scores) != 3000 || len(v.Types) != 3000 {
		t.Fatalf("sizes %d/%d/%d, want 3000", len(v.Tokens), len(v.Scores), len(v.Types))
	}
	fixed := []struct {
		id   int
		text string
		typ  int32
	}{
		{TokenIDUnknown, "<unk>", TokenUnknown},
		{TokenIDBOS, "<s>", TokenControl},
		{TokenIDEOS, "</s>", TokenControl},
		{TokenIDUser, "<|user|>", TokenControl},
		{TokenIDAssistant, "<|assistant|>", TokenControl},
		{TokenIDEnd, "<|end|>", TokenControl},
		{firstByteToken, "<0x00>", TokenByte},
		{firstByteToken + 0x0a, "<0x0A>", TokenByte},
		{firstByteToken + 255, "<0xFF>", TokenByte},
		{firstNormalToken, "\u2581", TokenNormal},
		{firstNormalToken + 1, "!", TokenNormal},
	}
	for _, f := range fixed {
		if v.Tokens[f.id] != f.text || v.Types[f.id] != f.typ {
			t.Errorf("token %d = %q type %d, want %q type %d", f.id, v.Tokens[f.id], v.Types[f.id], f.text, f.typ)
		}
	}
	seen := map[string]bool{}
	for id, tok := range v.Tokens {
		if seen[tok] {
			t.Fatalf("token %q appears twice", tok)
		}
		seen[tok] = true
		if id > 0 && v.Scores[id] >= v.Scores[id-1] {
			t.Fatalf("score of %d not below the previous one", id)
		}
	}
	for id, tok := range v.Tokens {
		if v.Types[id] != TokenNormal {
			continue
		}
		text := strings.ReplaceAll(tok, "\u2581", " ")
		for _, r := range text {
			if r < ' ' || r > '~' {
				t.Fatalf("emittable token %d %q holds %q, not printable ASCII", id, tok, r)
			}
		}
		// Prefix closure: SPM can only build a piece by merging, so each
		// shorter prefix of a generated piece must be a token.
		if len(text) > 1 && id > firstNormalToken+94 {
			prefix := tok[:len(tok)-1]
			if !seen[prefix] {
				t.Errorf("token %q has no prefix token %q", tok, prefix)
			}
		}
	}
}

func TestLlamaConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		modify func(*LlamaConfig)
		want   string
	}{
		{"default is valid", func(*LlamaConfig) {}, ""},
		{"heads must divide embedding", func(c *LlamaConfig) { c.Heads = 7 }, "must divide embedding"},
		{"odd head size", func(c *LlamaConfig) { c.Embedding, c.Heads = 24, 8 }, "even for RoPE"},
		{"kv heads", func(c *LlamaConfig) { c.HeadsKV = 3 }, "kv heads"},
		{"vocab too small", func(c *LlamaConfig) { c.Vocab = 300 }, "need at least 358"},
		{"no layers", func(c *LlamaConfig) { c.Layers = 0 }, "layers 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultLlamaConfig()
			tt.modify(&c)
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestParameters(t *testing.T) {
	t.Parallel()
	// tinyConfig by hand: per layer q,o 16*16*2=512, k,v 16*8*2=256,
	// ffn 3*16*24=1152, norms 32 -> 1952; 2 layers 3904; embd+output
	// 2*600*16=19200; output norm 16. Total 23120.
	if got := tinyConfig().Parameters(); got != 23120 {
		t.Fatalf("Parameters() = %d, want 23120", got)
	}
}
