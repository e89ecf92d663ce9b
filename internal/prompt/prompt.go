// Package prompt generates the unique, seeded prompt texts a trial sends, and fits their
// length to a token target without shipping a tokenizer: it asks the server (its tokenize
// endpoint, or the usage of tiny requests) and adjusts.
package prompt

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
)

// TokenCounter counts the tokens of a prompt's own text, as the server's tokenize endpoint
// does (no chat template). Prompts calls it from several goroutines at once.
type TokenCounter interface {
	CountTokens(ctx context.Context, text string) (int, error)
}

// UsageProbe sends text as a one-token request and returns the server's usage.prompt_tokens,
// which includes the chat template.
type UsageProbe func(ctx context.Context, text string) (promptTokens int, err error)

// Calibration methods.
const (
	MethodTokenize = "tokenize" // every prompt counted by a TokenCounter and adjusted
	MethodUsage    = "usage"    // length fitted from a few UsageProbe requests
	MethodEstimate = "estimate" // neither available: a fixed tokens-per-character guess
)

// DefaultTokensPerChar is the guess for generated syllable text when nothing can be asked,
// and the first estimate before anything was measured.
const DefaultTokensPerChar = 0.3

// DefaultMaxCallsPerPrompt bounds the TokenCounter calls spent fitting one prompt.
const DefaultMaxCallsPerPrompt = 8

// calibrationStream is where UsageProbe texts come from; the NUL keeps it apart from any
// stream name a caller would choose, so calibration never shares a prompt with a trial.
const calibrationStream = "\x00calibration"

// Calibration reports how one Prompts call fitted its prompts' length.
type Calibration struct {
	Method        string
	TargetTokens  int
	TokensPerWord float64 // measured (or assumed) tokens per body word, for people
	TokensPerChar float64 // the rate the lengths were actually fitted with
	// TemplateOverheadTokens is what the server adds to the prompt's own tokens (chat
	// template, BOS): usage.prompt_tokens ≈ TargetTokens + this. Only MethodUsage measures
	// it; with the other methods it is 0 (unknown).
	TemplateOverheadTokens float64
	Calls                  int // TokenCounter or UsageProbe calls this Prompts call made
	// Exact and MaxErrorTokens are known with MethodTokenize only: how many prompts counted
	// exactly TargetTokens, and the largest |count − TargetTokens| among the rest.
	Exact          int
	MaxErrorTokens int
}

// Generator makes prompts. The zero value works (seed 0, no calibration); set Counter or
// Probe to fit lengths against the real server. Use one Generator per server: it remembers
// the fitted rates between calls so later calls spend fewer requests.
type Generator struct {
	Seed              int64
	Counter           TokenCounter // preferred when the server has a tokenize endpoint
	Probe             UsageProbe   // used when Counter is nil
	MaxCallsPerPrompt int          // 0 means DefaultMaxCallsPerPrompt

	mu       sync.Mutex
	vocab    *vocabulary
	tally    tally            // running totals of TokenCounter answers
	usageFit map[int]usageFit // by target tokens
}

type usageFit struct {
	tokensPerChar, tokensPerWord, overhead float64
}

// Prompts returns n unique prompts of stream (say "2K / 512 c=12 t=1 measured"), each about
// targetTokens of the prompt's own tokens. Different streams never share a prompt, nor even
// a first word: use distinct streams for warmups and measured requests. Every prompt starts
// with four words spelling its 64-bit (seed, stream, index) identity, so a prompt shares at
// most part of its first word with any other and a prefix cache has nothing to reuse.
//
// Results are deterministic for the same Generator, seed, sequence of calls and server
// answers. Targets shorter than the identity prefix (about 10 tokens) come out longer.
func (g *Generator) Prompts(ctx context.Context, stream string, n, targetTokens int) ([]string, Calibration, error) {
	if n < 0 || targetTokens < 1 {
		return nil, Calibration{}, fmt.Errorf("prompts for %q: need n ≥ 0 and target tokens ≥ 1, got n=%d target=%d", stream, n, targetTokens)
	}
	if stream == calibrationStream {
		return nil, Calibration{}, errors.New("prompts: the calibration stream name is reserved")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.vocab == nil {
		v := newVocabulary(g.Seed)
		g.vocab = &v
	}
	key := streamKey(g.Seed, stream)
	switch {
	case g.Counter != nil:
		return g.counted(ctx, key, stream, n, targetTokens)
	case g.Probe != nil:
		return g.probed(ctx, key, stream, n, targetTokens)
	}
	cal := Calibration{Method: MethodEstimate, TargetTokens: targetTokens, TokensPerChar: DefaultTokensPerChar}
	out := make([]string, n)
	var words int
	for i := range out {
		s := newSequence(*g.vocab, key, i)
		k := s.wordsForChars(float64(targetTokens) / DefaultTokensPerChar)
		out[i] = s.text(k)
		words += k + 4
	}
	if words > 0 {
		cal.TokensPerWord = float64(targetTokens*n) / float64(words)
	}
	return out, cal, nil
}

func (g *Generator) maxCalls() int {
	if g.MaxCallsPerPrompt > 0 {
		return g.MaxCallsPerPrompt
	}
	return DefaultMaxCallsPerPrompt
}

// tokensPerChar is the rate learnt from every count so far (totals, not the last ratio, so
// one odd prompt does not throw off the next guess).
func (g *Generator) tokensPerChar() float64 {
	if g.tally.chars == 0 {
		return DefaultTokensPerChar
	}
	return clampRate(g.tally.tokens / g.tally.chars)
}

// Rates outside these bounds are no tokenizer's: a counter answering them is broken, and
// following it would grow a prompt without limit. Text stays within 1/minTokensPerChar
// characters per target token, whatever a server answers.
const (
	minTokensPerChar = 1.0 / 32
	maxTokensPerChar = 2.0
)

func clampRate(r float64) float64 {
	if math.IsNaN(r) {
		return DefaultTokensPerChar
	}
	return math.Min(math.Max(r, minTokensPerChar), maxTokensPerChar)
}

// charsFor is how many characters target tokens take at rate, capped so that no answer
// can make a prompt unboundedly long.
func charsFor(target, rate float64) float64 {
	return math.Min(target/clampRate(rate), target/minTokensPerChar)
}

// countWorkers is how many prompts are fitted at once: tokenize calls generate nothing, so a
// server answers several together, and fitting 72 prompts one after the other was most of
// the dead time between trials.
const countWorkers = 8

// tally is a running total of TokenCounter answers.
type tally struct{ tokens, chars, words float64 }

func (t *tally) add(o tally) {
	t.tokens, t.chars, t.words = t.tokens+o.tokens, t.chars+o.chars, t.words+o.words
}

// counted fits every prompt exactly with the TokenCounter: guess the length from the learnt
// rate, count, correct by the rate, and once two neighbouring word counts bracket the target
// without hitting it, try small endings (a full stop, a one-syllable word) that move the
// count by a single token. Prompts are fitted countWorkers at a time, each from the rate
// learnt before the call plus its own counts, and their counts are added to the learnt rate
// in prompt order afterwards, so the texts depend only on the server's answers, not on
// which answer came first.
func (g *Generator) counted(ctx context.Context, key uint64, stream string, n, target int) ([]string, Calibration, error) {
	cal := Calibration{Method: MethodTokenize, TargetTokens: target}
	type fitted struct {
		text         string
		count, calls int
		seen         tally
		err          error
	}
	fits := make([]fitted, n)
	base := g.tally
	first := 0
	if base.chars == 0 && n > 0 {
		// Nothing learnt yet: one prompt alone first, so the others start from its rate
		// rather than all from the guess.
		f := &fits[0]
		f.text, f.count, f.calls, f.seen, f.err = g.fitOne(ctx, newSequence(*g.vocab, key, 0), target, base)
		if f.err != nil {
			return nil, Calibration{Method: MethodTokenize, TargetTokens: target, Calls: f.calls}, fmt.Errorf("prompt 0 of %q: counting tokens: %w", stream, f.err)
		}
		base.add(f.seen)
		first = 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(countWorkers, n-first) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f := &fits[i]
				f.text, f.count, f.calls, f.seen, f.err = g.fitOne(ctx, newSequence(*g.vocab, key, i), target, base)
				if f.err != nil {
					cancel() // the first failure ends the call; the others need not finish
				}
			}
		}()
	}
feed:
	for i := first; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	// The first failure cancelled the prompts still being fitted: report it, not the
	// cancellations it caused.
	for _, f := range fits {
		cal.Calls += f.calls
	}
	for i, f := range fits {
		if f.err != nil && !errors.Is(f.err, context.Canceled) {
			return nil, cal, fmt.Errorf("prompt %d of %q: counting tokens: %w", i, stream, f.err)
		}
	}
	out := make([]string, n)
	for i, f := range fits {
		if f.err != nil {
			return nil, cal, fmt.Errorf("prompt %d of %q: counting tokens: %w", i, stream, f.err)
		}
		if f.text == "" && f.calls == 0 {
			// Never started: the call was cancelled by another prompt's failure or ctx.
			return nil, cal, fmt.Errorf("prompt %d of %q: counting tokens: %w", i, stream, context.Cause(ctx))
		}
		g.tally.add(f.seen)
		out[i] = f.text
		if f.count == target {
			cal.Exact++
		} else {
			cal.MaxErrorTokens = max(cal.MaxErrorTokens, abs(f.count-target))
		}
	}
	cal.TokensPerChar = g.tokensPerChar()
	if g.tally.words > 0 {
		cal.TokensPerWord = g.tally.tokens / g.tally.words
	}
	return out, cal, nil
}

// fitOne fits one prompt; base is what was learnt before the call, seen what this prompt's
// counts add to it.
func (g *Generator) fitOne(ctx context.Context, s *sequence, target int, base tally) (best string, bestCount, calls int, seen tally, err error) {
	bestErr := math.MaxInt
	rate := func() float64 {
		t := base
		t.add(seen)
		if t.chars == 0 {
			return DefaultTokensPerChar
		}
		return clampRate(t.tokens / t.chars)
	}
	count := func(text string, words int) (int, error) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		c, err := g.Counter.CountTokens(ctx, text)
		calls++
		if err != nil {
			return 0, err
		}
		seen.add(tally{tokens: float64(c), chars: float64(len(text)), words: float64(words + 4)})
		if e := abs(c - target); e < bestErr {
			best, bestCount, bestErr = text, c, e
		}
		return c, nil
	}
	below, above := -1, math.MaxInt // largest k counted under target, smallest counted over
	k := s.wordsForChars(charsFor(float64(target), rate()))
	for calls < g.maxCalls() {
		c, err := count(s.text(k), k)
		if err != nil {
			return "", 0, calls, seen, err
		}
		if c == target {
			return best, bestCount, calls, seen, nil
		}
		if c < target {
			below = max(below, k)
		} else {
			above = min(above, k)
		}
		if above == below+1 || above == 0 {
			break // no word count hits it: fine-tune below
		}
		next := s.wordsForChars(math.Min(float64(s.chars(k))+float64(target-c)/rate(), charsFor(float64(target), minTokensPerChar)))
		if next == k {
			next += sign(target - c)
		}
		next = max(next, below+1)
		next = min(next, above-1)
		k = max(next, 0)
	}
	if below >= 0 {
		base := s.text(below)
		for _, ending := range g.endings(s) {
			if calls >= g.maxCalls() {
				break
			}
			c, err := count(base+ending, below)
			if err != nil {
				return "", 0, calls, seen, err
			}
			if c == target {
				break
			}
		}
	}
	return best, bestCount, calls, seen, nil
}

// endings that add a token or two to a prompt, tried in order when whole words overshoot:
// a full stop, then one-syllable words of each length with and without a full stop, so
// that some ending fits whatever the tokenizer's granularity. Which word of a length is
// used depends on the prompt, so prompts do not all end alike.
func (g *Generator) endings(s *sequence) []string {
	out := []string{"."}
	byLen := map[int]string{}
	var lens []int
	for j := range g.vocab.short {
		w := g.vocab.short[(s.chars(0)+j)%len(g.vocab.short)]
		if _, ok := byLen[len(w)]; !ok {
			byLen[len(w)] = w
			lens = append(lens, len(w))
		}
	}
	slices.Sort(lens)
	for _, l := range lens {
		out = append(out, " "+byLen[l], " "+byLen[l]+".")
	}
	return append(out, ",")
}

// probed fits lengths from UsageProbe answers, which include the chat template: a short
// and a full-length probe give the rate (the template cancels in the difference) and the
// overhead, and a third at the fitted length corrects the overhead where the rate drifts.
// The fit is kept per target so later trials of the workload cost nothing.
func (g *Generator) probed(ctx context.Context, key uint64, stream string, n, target int) ([]string, Calibration, error) {
	cal := Calibration{Method: MethodUsage, TargetTokens: target}
	fit, ok := g.usageFit[target]
	if !ok {
		var err error
		fit, cal.Calls, err = g.fitUsage(ctx, target)
		if err != nil {
			return nil, cal, fmt.Errorf("prompts of %q: calibrating length from usage.prompt_tokens: %w", stream, err)
		}
		if g.usageFit == nil {
			g.usageFit = map[int]usageFit{}
		}
		g.usageFit[target] = fit
	}
	cal.TokensPerChar, cal.TokensPerWord, cal.TemplateOverheadTokens = fit.tokensPerChar, fit.tokensPerWord, fit.overhead
	out := make([]string, n)
	for i := range out {
		s := newSequence(*g.vocab, key, i)
		out[i] = s.text(s.wordsForChars(charsFor(float64(target), fit.tokensPerChar)))
	}
	return out, cal, nil
}

func (g *Generator) fitUsage(ctx context.Context, target int) (usageFit, int, error) {
	calKey := streamKey(g.Seed, calibrationStream)
	type point struct{ chars, words, tokens float64 }
	calls := 0
	probe := func(index int, wantChars float64) (point, error) {
		if err := ctx.Err(); err != nil {
			return point{}, err
		}
		s := newSequence(*g.vocab, calKey, index)
		k := s.wordsForChars(wantChars)
		c, err := g.Probe(ctx, s.text(k))
		calls++
		if err != nil {
			return point{}, err
		}
		return point{float64(s.chars(k)), float64(k + 4), float64(c)}, nil
	}
	full := float64(target) / DefaultTokensPerChar
	short, err := probe(0, full/4)
	if err != nil {
		return usageFit{}, calls, err
	}
	long, err := probe(1, full)
	if err != nil {
		return usageFit{}, calls, err
	}
	if long.chars <= short.chars || long.tokens <= short.tokens {
		return usageFit{}, calls, fmt.Errorf("a %v-character prompt counted %v tokens and a %v-character one %v: usage.prompt_tokens does not grow with the prompt",
			short.chars, short.tokens, long.chars, long.tokens)
	}
	rate := (long.tokens - short.tokens) / (long.chars - short.chars)
	wordRate := (long.tokens - short.tokens) / (long.words - short.words)
	overhead := short.tokens - rate*short.chars
	check, err := probe(2, charsFor(float64(target), rate))
	if err != nil {
		return usageFit{}, calls, err
	}
	// The overhead is what the three probes say on average once their own text is taken out;
	// averaging damps the few tokens each single prompt is off by.
	overhead = (overhead + (long.tokens - rate*long.chars) + (check.tokens - rate*check.chars)) / 3
	return usageFit{tokensPerChar: rate, tokensPerWord: wordRate, overhead: overhead}, calls, nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func sign(x int) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}
