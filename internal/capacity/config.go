// Package capacity runs the SLO capacity search for a set of workloads against one
// OpenAI-compatible endpoint and assembles the schema v1 results document. It wires the
// load, prompt, metrics and search packages together and imports nothing of Terraform, but
// the advice and errors it writes for the user speak the user's vocabulary: they name
// configuration attributes such as search.max_concurrency, so renaming an attribute means
// updating its texts here too.
package capacity

import (
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/compare"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/trace"
)

// Config is everything one capacity benchmark needs.
type Config struct {
	Endpoint string // base URL, e.g. http://host:30000
	Model    string
	API      string // APIChat or APICompletions
	APIKey   string // sent as a Bearer token; never logged or stored
	// AdminAPIKey is sent instead of APIKey to flush the cache (SGLang --admin-api-key).
	AdminAPIKey string
	// ReplicaEndpoints, when not nil, are the base URLs of every replica behind Endpoint
	// (the deployment's replica_endpoints): before each trial each one is waited for and
	// flushed on its own, and its prefix-cache counters are read per trial (replicas.go).
	// The load still goes to Endpoint. An empty, non-nil list is refused by Validate.
	ReplicaEndpoints []string

	Workloads []Workload
	// SLOs must all hold in every confirmation trial at the maximum passing concurrency.
	SLOs []results.SLO

	MinConcurrency int
	MaxConcurrency int
	// ConcurrencyLevels, when not nil, replaces the search by a plain grid over these
	// levels (an empty, non-nil list is a grid of nothing, which Validate refuses).
	ConcurrencyLevels []int
	// OpenLoop, when set, searches the request rate instead of the concurrency (openloop.go).
	OpenLoop *OpenLoop

	WarmupRequests   int
	MeasuredRequests int
	// EngineWarmupRequests, when above 0, primes the engine before a workload's first
	// measured trial (enginewarmup.go): that many requests of the workload's shape at each
	// concurrency 1, 2, 4, … up to the server's running-request limit, unmeasured, for
	// engines that compile their kernels on first use (llama.cpp on Vulkan).
	EngineWarmupRequests int
	ConfirmationTrials   int
	CacheFlush           string // one of engine.FlushModes
	// IdleTimeout bounds the wait for a busy server before each trial, and the retries of a
	// flush it refuses; 0 means 2 minutes.
	IdleTimeout time.Duration

	// StallTimeout and RequestTimeout bound every request (see load.ClientConfig). Run
	// gives zero the load package's defaults, for callers that leave them out; Validate
	// refuses it, since a user who wrote "0s" did not mean five minutes.
	StallTimeout   time.Duration
	RequestTimeout time.Duration

	// RecordsDirectory, when set, receives one JSONL file of per-request records per trial;
	// RecordChunkTimes adds each content chunk's arrival to them.
	RecordsDirectory string
	RecordChunkTimes bool

	// TelemetryEndpoints are the accelerators' Prometheus exporters (DCGM exporter, XPU
	// Manager), scraped over every trial (internal/telemetry); TelemetryInterval is how often
	// while it runs, 0 meaning telemetry.DefaultInterval. Neither is in the fingerprint: like
	// the records, they observe the run without changing what it measures.
	TelemetryEndpoints []string
	TelemetryInterval  time.Duration

	Seed       int64               // prompt text seed; fixed per resource so re-runs are comparable
	Experiment *results.Experiment // what was measured, copied into the document as given
	// ToolVersion is this tool's version, recorded as the load generator's in the document.
	ToolVersion string
	// Triggers name what else makes this a new measurement (the resource's triggers, e.g.
	// the server's container id): a journal entry recorded under other triggers is never
	// reused. No triggers and an empty map are the same run.
	Triggers map[string]string

	// Baseline, when set, is an earlier result this run measures against (comparison.go):
	// after each workload's search it measures the levels the comparison needs and adds
	// trials one at a time while the verdict is open, at most ComparisonBudget of them
	// (trial.comparison_budget). Neither is in the fingerprint: a baseline changes what is
	// compared, not what a trial measures, so the journal's trials stand for any baseline.
	Baseline         *Document `json:",omitempty"`
	ComparisonBudget int
	// Delivered, when set, is the result this configuration delivered before (the
	// benchmark's state when only its baseline changed): its searches stand as they are,
	// and only the comparison with Baseline is measured, reusing the trials it added for
	// an earlier comparison at the same level and number.
	Delivered *Document `json:",omitempty"`
	// Pods is how many load generators send every trial (runner.kubernetes.pods): above 1,
	// this one and Fleet's peers, each its share (split.go), their records merged into one
	// trial (fleet.go). 0 and 1 are one generator. Not in the fingerprint: a trial measures
	// the server however many generators sent it, and each records its own spread.
	Pods int `json:",omitempty"`
	// PodsSet says runner.kubernetes.pods was written, so a Pods below 1 is the value the
	// user wrote (refused, and named as written), not "one generator".
	PodsSet bool `json:"-"`
	// Fleet reaches the other generators when Pods is above 1.
	Fleet Fleet `json:"-"`

	// History holds trials finished by an earlier, interrupted run of the same
	// configuration; they are reused instead of measured again.
	History []JournalEntry `json:"-"`
	// Progress, when set, is called once per finished trial, in order.
	Progress func(JournalEntry) `json:"-"`
	// ProgressLine, when set, receives one line a person reads per finished trial (verdict,
	// objectives against thresholds, duration, trials done and left) and per finished workload.
	ProgressLine func(string) `json:"-"`

	// checked says Check found no error in this configuration after loading its traces:
	// Run and Resume take it as it is rather than reading and validating it again. axis is
	// the load axis Check picked from it (runAxis).
	checked bool
	axis    axis
	// sampleCPU reads the load generator's CPU around each trial's load; nil reads this
	// process's (sampleCPU). Tests starve a client with their own readings.
	sampleCPU func() cpuSample
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

	// TraceFile, when set, makes the workload a replay of recorded traffic (trace.go): each
	// request's lengths, shared blocks and arrival come from the file, so InputTokens,
	// OutputTokens and the spreads stay 0. TraceBlockTokens is the tokens of one hash_ids
	// block (0: Mooncake's 512). Trace is the parsed file (LoadTraces).
	TraceFile        string       `json:",omitempty"`
	TraceBlockTokens int          `json:",omitempty"`
	Trace            *trace.Trace `json:",omitempty"`
	traceErr         error        // why LoadTraces could not read TraceFile

	// Conversation, when set, makes the workload multi-turn conversations held by virtual
	// users with think time (axis_users.go): InputTokens is each turn's new message and
	// OutputTokens each turn's answer, and the search's levels (MinConcurrency,
	// MaxConcurrency, ConcurrencyLevels) count users. Every workload of a run or none.
	Conversation *Conversation `json:",omitempty"`
}

// Conversation is the shape of a workload's conversations.
type Conversation struct {
	Turns              int // user messages per conversation
	SystemPromptTokens int // a system prompt every conversation shares; 0: none
	// Think is the pause between an answer and the user's next message (and between
	// conversations); its Mean may be 0.
	Think load.Think
	// WarmupConversations is how many conversations each user holds before its turns are
	// measured; at least 1, so the cache holds histories and the users' phases settle.
	WarmupConversations int
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
	// MaxComparisonBudget bounds trial.comparison_budget: the trials a workload may add one
	// at a time while its comparison with the baseline is open.
	MaxComparisonBudget = 100
)

// Document is a results document a configuration carries (a baseline, a delivered result):
// it travels to a runner as its schema v1 JSON, read back by results.Parse.
type Document struct{ *results.Document }

// MarshalJSON writes the document as schema v1 JSON.
func (d Document) MarshalJSON() ([]byte, error) { return results.Marshal(d.Document) }

// UnmarshalJSON reads a schema v1 document, checked as every reader checks it.
func (d *Document) UnmarshalJSON(data []byte) error {
	doc, err := results.Parse(data)
	if err != nil {
		return err
	}
	d.Document = doc
	return nil
}

// The APIs a benchmark can send requests to: the load client's.
const (
	APIChat        = load.APIChat        // /v1/chat/completions: the server applies its chat template
	APICompletions = load.APICompletions // /v1/completions
)

// Defaults are what an unset setting takes: the reference AIPerf protocol (8 warmups, 64
// measured requests, 3 confirmation trials, cache flushed) searched between 1 and 64.
// The Terraform schema's defaults are these values.
func Defaults() Config {
	return Config{
		API:                APIChat,
		MinConcurrency:     1,
		MaxConcurrency:     64,
		WarmupRequests:     8,
		MeasuredRequests:   64,
		ConfirmationTrials: 3,
		CacheFlush:         "auto",
		ComparisonBudget:   compare.DefaultComparisonBudget,
		StallTimeout:       load.DefaultStallTimeout,
		RequestTimeout:     load.DefaultRequestTimeout,
	}
}
