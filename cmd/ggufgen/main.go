// Command ggufgen writes a small random-weight llama-architecture GGUF model
// for exercising a real llama-server without downloading one. The output is a
// pure function of the flags: the same flags give a byte-identical file.
//
//	go run ./cmd/ggufgen -out .cache/models/tiny-llama.gguf
//
// The text it generates is meaningless but always printable ASCII, and the
// model never emits its end token, so a request for N tokens returns N.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/gguf"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "ggufgen:", err)
		os.Exit(1)
	}
}

func run(args []string, log io.Writer) error {
	def := gguf.DefaultLlamaConfig()
	fs := flag.NewFlagSet("ggufgen", flag.ContinueOnError)
	fs.SetOutput(log)
	seed := fs.Uint64("seed", def.Seed, "random seed; the same seed and sizes give a byte-identical file")
	embd := fs.Int("embd", def.Embedding, "embedding length (hidden size)")
	layers := fs.Int("layers", def.Layers, "transformer blocks")
	ff := fs.Int("ff", def.FeedForward, "feed-forward length")
	heads := fs.Int("heads", def.Heads, "attention heads (head size = embd/heads)")
	headsKV := fs.Int("heads-kv", 0, "key/value heads for grouped-query attention (0: same as -heads)")
	vocab := fs.Int("vocab", def.Vocab, "vocabulary size, including 7 special and 256 byte tokens")
	ctx := fs.Int("ctx", def.Context, "training context length: the most a server may configure")
	f32 := fs.Bool("f32", false, "store weights as F32 instead of F16 (twice the size)")
	out := fs.String("out", "tiny-llama.gguf", "output file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg := gguf.LlamaConfig{
		Seed: *seed, Embedding: *embd, Layers: *layers, FeedForward: *ff,
		Heads: *heads, HeadsKV: *headsKV, Vocab: *vocab, Context: *ctx, F32: *f32,
	}
	if err := cfg.Validate(); err != nil {
		return err
	}

	start := time.Now()
	if dir := filepath.Dir(*out); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	// Write beside the target and rename, so a reader (a running server, a
	// concurrent make target) never sees a half-written model.
	tmp, err := os.CreateTemp(filepath.Dir(*out), filepath.Base(*out)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	n, err := gguf.WriteRandomLlama(tmp, cfg)
	if err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", *out, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), *out); err != nil {
		return err
	}
	fmt.Fprintf(log, "wrote %s: %.1f MB, %.1fM parameters (embd %d, layers %d, ff %d, heads %d, vocab %d, ctx %d, seed %d) in %s\n",
		*out, float64(n)/1e6, float64(cfg.Parameters())/1e6, cfg.Embedding, cfg.Layers, cfg.FeedForward,
		cfg.Heads, cfg.Vocab, cfg.Context, cfg.Seed, time.Since(start).Round(time.Millisecond))
	return nil
}
