// Package capacity runs the SLO capacity search for a set of workloads against one
// OpenAI-compatible endpoint and assembles the schema v1 results document. It wires the
// load, prompt, metrics and search packages together and knows nothing of Terraform.
package capacity

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"

	"github.com/llmserve/terraform-provider-llmserve/internal/endpoint"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// Config is everything one capacity benchmark needs.
type Config struct {
	Endpoint string // base URL, e.g. http://host:30000
	Model    string
	API      string // "chat" or "completions"
	APIKey   string // sent as a Bearer token; never logged or stored
	// AdminAPIKey is sent instead of APIKey to flush the cache (SGLang --admin-api-key).
	AdminAPIKey string

	Workloads []Workload
	// SLOs must all hold in every confirmation trial at the maximum passing concurrency.
	SLOs []results.SLO

	MinConcurrency int
	MaxConcurrency int
	// ConcurrencyLevels, when set, replaces the search by a plain grid over these levels.
	ConcurrencyLevels []int

	WarmupRequests     int
	MeasuredRequests   int
	ConfirmationTrials int
	CacheFlush         string // auto | none | sglang | vllm | llamacpp
	// IdleTimeout bounds the wait for a busy server before each trial, and the retries of a
	// flush it refuses; 0 means 2 minutes.
	IdleTimeout time.Duration

	// StallTimeout and RequestTimeout bound every request (see load.ClientConfig); zero
	// means the load package's defaults.
	StallTimeout   time.Duration
	RequestTimeout time.Duration

	// RecordsDirectory, when set, receives one JSONL file of per-request records per trial;
	// RecordChunkTimes adds each content chunk's arrival to them.
	RecordsDirectory string
	RecordChunkTimes bool

	Seed       int64               // prompt text seed; fixed per resource so re-runs are comparable
	Experiment *results.Experiment // what was measured, copied into the document as given
	// ToolVersion is this tool's version, recorded as the load generator's in the document.
	ToolVersion string
	// Triggers name what else makes this a new measurement (the resource's triggers, e.g.
	// the server's container id): a journal entry recorded under other triggers is never
	// reused. No triggers and an empty map are the same run.
	Triggers map[string]string

	// History holds trials finished by an earlier, interrupted run of the same
	// configuration; they are reused instead of measured again.
	History []TrialRecord
	// Progress, when set, is called once per finished trial, in order.
	Progress func(TrialRecord)
}

// Workload is one input/output shape to find the boundary for.
type Workload struct {
	Label        string
	InputTokens  int // the prompt's own tokens, shared prefix included; the mean with a spread
	OutputTokens int // max_tokens; the mean with a spread

	// InputTokensStddev and OutputTokensStddev spread each request's lengths: drawn from a
	// normal distribution (seeded per trial), rounded, clipped at 1, as AIPerf's synthetic
	// --synthetic-input-tokens-stddev and --output-tokens-stddev do.
	InputTokensStddev  float64
	OutputTokensStddev float64
	// SharedPrefixTokens of every prompt are the same text (a common system prompt), so a
	// prefix cache serves them after the first request of each trial.
	SharedPrefixTokens int
}

// Upper bounds that keep a run's memory and time finite. They are far above any real
// benchmark (the reference protocol uses 16K/2K tokens, 64 requests, 3 confirmations and
// concurrency below 100) and far below what would exhaust memory before the first request.
const (
	// MaxTokens bounds input_tokens and output_tokens: 1 Mi tokens, more than any server's
	// context accepts today.
	MaxTokens = 1 << 20
	// MaxRequests bounds warmup_requests and measured_requests per trial.
	MaxRequests = 100_000
	// MaxConcurrency bounds search.min_concurrency and search.max_concurrency.
	MaxConcurrency = 100_000
	// MaxConfirmationTrials bounds trial.confirmation_trials: each one is a full trial on
	// both sides of the boundary.
	MaxConfirmationTrials = 100
)

// Validate reports every configuration problem, naming the attribute to fix. It is the rule
// plan-time validators apply to known values, and it runs again at apply for values that were
// unknown at plan.
func (c Config) Validate() error {
	var errs []error
	if _, err := endpoint.Parse(c.Endpoint); err != nil {
		errs = append(errs, fmt.Errorf("endpoint: %w", err))
	}
	if c.API != "chat" && c.API != "completions" {
		errs = append(errs, fmt.Errorf("api: %q is not one of chat, completions", c.API))
	}
	if len(c.Workloads) == 0 {
		errs = append(errs, errors.New("workloads: at least one workload is required"))
	}
	seen := map[string]bool{}
	for i, w := range c.Workloads {
		switch {
		case w.Label == "":
			errs = append(errs, fmt.Errorf("workloads[%d].label: must not be empty", i))
		case strings.ContainsFunc(w.Label, unicode.IsControl):
			errs = append(errs, fmt.Errorf("workloads[%d].label: %q contains control characters, which would reach terminals, CSV and Markdown renderings; use printable text", i, w.Label))
		case seen[w.Label]:
			errs = append(errs, fmt.Errorf("workloads[%d].label: %q is used twice; labels key the result maps and must be unique", i, w.Label))
		}
		seen[w.Label] = true
		if w.InputTokens < 1 || w.InputTokens > MaxTokens {
			errs = append(errs, fmt.Errorf("workloads[%d].input_tokens: must be between 1 and %d, got %d", i, MaxTokens, w.InputTokens))
		}
		if w.OutputTokens < 1 || w.OutputTokens > MaxTokens {
			errs = append(errs, fmt.Errorf("workloads[%d].output_tokens: must be between 1 and %d, got %d", i, MaxTokens, w.OutputTokens))
		}
		for _, sd := range []struct {
			name string
			v    float64
			mean int
		}{{"input_tokens_stddev", w.InputTokensStddev, w.InputTokens}, {"output_tokens_stddev", w.OutputTokensStddev, w.OutputTokens}} {
			if math.IsNaN(sd.v) || sd.v < 0 || sd.v > float64(sd.mean) {
				errs = append(errs, fmt.Errorf("workloads[%d].%s: must be between 0 and the mean length %d, got %g", i, sd.name, sd.mean, sd.v))
			}
		}
		if w.SharedPrefixTokens < 0 || w.SharedPrefixTokens >= w.InputTokens {
			errs = append(errs, fmt.Errorf("workloads[%d].shared_prefix_tokens: must be at least 0 and below input_tokens (%d), which it is part of; got %d", i, w.InputTokens, w.SharedPrefixTokens))
		}
	}
	slos := make([]results.SLO, len(c.SLOs))
	for i, o := range c.SLOs {
		slos[i] = o.WithDefaults() // an empty comparison is the metric's default
	}
	if err := results.ValidateSLOs(slos); err != nil {
		errs = append(errs, err)
	}
	levels := map[int]bool{}
	for i, l := range c.ConcurrencyLevels {
		switch {
		case l < 1 || l > MaxConcurrency:
			errs = append(errs, fmt.Errorf("search.concurrency_levels[%d]: must be between 1 and %d, got %d", i, MaxConcurrency, l))
		case levels[l]:
			errs = append(errs, fmt.Errorf("search.concurrency_levels[%d]: %d is listed twice", i, l))
		}
		levels[l] = true
	}
	if c.MinConcurrency < 1 || c.MinConcurrency > MaxConcurrency {
		errs = append(errs, fmt.Errorf("search.min_concurrency: must be between 1 and %d, got %d", MaxConcurrency, c.MinConcurrency))
	}
	if c.MaxConcurrency > MaxConcurrency {
		errs = append(errs, fmt.Errorf("search.max_concurrency: must be at most %d, got %d", MaxConcurrency, c.MaxConcurrency))
	}
	if c.MaxConcurrency < c.MinConcurrency {
		errs = append(errs, fmt.Errorf("search.max_concurrency: %d is below search.min_concurrency %d", c.MaxConcurrency, c.MinConcurrency))
	}
	if c.MeasuredRequests < 1 || c.MeasuredRequests > MaxRequests {
		errs = append(errs, fmt.Errorf("trial.measured_requests: must be between 1 and %d, got %d", MaxRequests, c.MeasuredRequests))
	}
	if c.WarmupRequests < 0 || c.WarmupRequests > MaxRequests {
		errs = append(errs, fmt.Errorf("trial.warmup_requests: must be between 0 and %d, got %d", MaxRequests, c.WarmupRequests))
	}
	if c.StallTimeout < 0 {
		errs = append(errs, fmt.Errorf("trial.stall_timeout: must be positive, got %s", c.StallTimeout))
	}
	if c.RequestTimeout < 0 {
		errs = append(errs, fmt.Errorf("trial.request_timeout: must be positive, got %s", c.RequestTimeout))
	}
	if c.ConfirmationTrials < 1 || c.ConfirmationTrials > MaxConfirmationTrials {
		errs = append(errs, fmt.Errorf("trial.confirmation_trials: must be between 1 and %d, got %d", MaxConfirmationTrials, c.ConfirmationTrials))
	}
	return errors.Join(errs...)
}
