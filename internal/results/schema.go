// Package results is the schema v1 results document: the vocabulary every other domain
// package fills in, plus its reader, writer and renderings. It imports nothing of the project.
package results

import "strconv"

// SchemaVersion is the only document version this package reads and writes.
const SchemaVersion = 1

// Document is one capacity result, in the shape of the reference AIPerf result.
type Document struct {
	SchemaVersion int        `json:"schema_version"`
	Experiment    Experiment `json:"experiment"`
	AIPerf        Protocol   `json:"aiperf"`
	// SLO is the single objective of documents written before `slos` existed (the
	// reference's shape); SLOs is every objective of newer ones. Objectives reads either.
	SLO              *SLO        `json:"slo,omitempty"`
	SLOs             []SLO       `json:"slos,omitempty"`
	Workloads        []Workload  `json:"workloads"`
	CorrectnessTotal Correctness `json:"correctness_total"`
	// Price is what the measured deployment costs to run, when the reader gave it (the report
	// data source's cost_per_hour writes it into its results_json); the renderings then show
	// what capacity costs (Costs). Never written by a benchmark, so a new price re-runs
	// nothing. Additive.
	Price *Price `json:"price,omitempty"`
	// Runner says where the load ran when it did not run in the Terraform process (the
	// benchmark's runner); absent for a run from where Terraform runs. Additive.
	Runner *Runner `json:"runner,omitempty"`

	// extras keeps the keys Parse did not know, so Marshal can write them back.
	extras extras
}

// Runner is where a benchmark's load ran: Kind "docker" is a container on the server's
// Docker Engine (Host, the engine's address as the provider reached it) in the network
// namespace Network names ("container:<server id>").
type Runner struct {
	Kind    string `json:"kind"`
	Host    string `json:"host"`
	Network string `json:"network"`
}

// Experiment says what was measured.
type Experiment struct {
	ImageTag          string           `json:"image_tag"`
	ImageDigest       string           `json:"image_digest"`
	Model             string           `json:"model"`
	Checkpoint        string           `json:"checkpoint"`
	Hardware          string           `json:"hardware"`
	Driver            string           `json:"driver"`
	Kernel            string           `json:"kernel"`
	TensorParallelism int              `json:"tensor_parallelism"`
	ContextLength     int              `json:"context_length"`
	PhysicalTokenPool *int             `json:"physical_token_pool"` // null: the server did not report it
	SpeculativeMode   *SpeculativeMode `json:"speculative_mode"`
	// Replicas is how many engine replicas serve behind the endpoint (a Kubernetes
	// deployment); absent (0) for one server.
	Replicas int `json:"replicas,omitempty"`
	// Accelerator is the device family the provider launched the engine on ("cpu", "cuda",
	// "xpu", "vulkan"), as configured; absent when the experiment did not come from a
	// provider-launched server. What a benchmark's defaults read (an engine warm-up for the
	// engines that compile kernels on first use), where hardware is free text.
	Accelerator string `json:"accelerator,omitempty"`
}

// SpeculativeMode describes speculative decoding; nil when the server decodes plainly.
type SpeculativeMode struct {
	Algorithm   string `json:"algorithm"`
	Steps       int    `json:"steps"`
	TopK        int    `json:"topk"`
	DraftTokens int    `json:"draft_tokens"`
}

// Protocol is the measurement protocol (the reference calls this block "aiperf").
type Protocol struct {
	Version                          string  `json:"version"`
	ArrivalPattern                   string  `json:"arrival_pattern"`
	Streaming                        bool    `json:"streaming"`
	ServerTokenCount                 bool    `json:"server_token_count"`
	Temperature                      float64 `json:"temperature"`
	IgnoreEOS                        bool    `json:"ignore_eos"`
	WarmupsPerTrial                  int     `json:"warmups_per_trial"`
	MeasuredRequestsPerTrial         int     `json:"measured_requests_per_trial"`
	IndependentTrialsPerBoundarySide int     `json:"independent_trials_per_boundary_side"`
	CachePolicy                      string  `json:"cache_policy"`
	// ComparisonBudget is set when the run measured against a baseline (the benchmark's
	// baseline): the most trials it could add one at a time while the comparison's verdict
	// was open (trial.comparison_budget). Its presence says the comparison was sequential,
	// so compare spends its false-alarm level over the looks (Trial.ForComparison). Additive.
	ComparisonBudget int `json:"comparison_budget,omitempty"`
	// EngineWarmupRequests is trial.engine_warmup_requests: requests sent once before a
	// workload's first trial to prime the engine (kernels, graphs). A warm and a cold run
	// measure different protocols; absent: none.
	EngineWarmupRequests int `json:"engine_warmup_requests,omitempty"`
}

// Objectives are the objectives every trial is judged by: SLOs, or the legacy single SLO.
func (d *Document) Objectives() []SLO {
	if len(d.SLOs) > 0 || d.SLO == nil {
		return d.SLOs
	}
	return []SLO{*d.SLO}
}

// Workload is the boundary found for one input/output shape.
type Workload struct {
	Label              string `json:"label"`
	ConfiguredISL      int    `json:"configured_isl"`
	ConfiguredOSL      int    `json:"configured_osl"`
	ServerPromptTokens MinMax `json:"server_prompt_tokens"`
	// The workload's shape beyond its mean lengths; absent when lengths are fixed and no
	// prefix is shared.
	InputTokensStddev         float64 `json:"input_tokens_stddev,omitempty"`
	OutputTokensStddev        float64 `json:"output_tokens_stddev,omitempty"`
	SharedPrefixTokens        int     `json:"shared_prefix_tokens,omitempty"`
	MaximumPassingConcurrency *int    `json:"maximum_passing_concurrency"` // nil: even the minimum failed
	FirstFailingConcurrency   *int    `json:"first_failing_concurrency"`   // nil: nothing failed within bounds
	// MaximumPassingRequestRate and FirstFailingRequestRate are the boundary of an open-loop
	// search by request rate (requests per second); absent from a concurrency search, whose
	// concurrency boundary is then null. Additive.
	MaximumPassingRequestRate *float64 `json:"maximum_passing_request_rate,omitempty"`
	FirstFailingRequestRate   *float64 `json:"first_failing_request_rate,omitempty"`
	// MaximumPassingSpeedup and FirstFailingSpeedup are the boundary of a replay of recorded
	// traffic searched by speedup (the factor the recorded arrival offsets were divided by);
	// its request rates are then the trace's mean rate times the speedup. TraceFile and
	// TraceSHA256 name the trace replayed. All absent from other searches. Additive.
	MaximumPassingSpeedup *float64 `json:"maximum_passing_speedup,omitempty"`
	FirstFailingSpeedup   *float64 `json:"first_failing_speedup,omitempty"`
	// MaximumPassingUsers and FirstFailingUsers are the boundary of a search by users: virtual
	// users each holding multi-turn conversations with think time (each trial's users), the
	// number of people who can chat at once under the objectives. Absent from other
	// searches. Additive.
	MaximumPassingUsers *int    `json:"maximum_passing_users,omitempty"`
	FirstFailingUsers   *int    `json:"first_failing_users,omitempty"`
	TraceFile           string  `json:"trace_file,omitempty"`
	TraceSHA256         string  `json:"trace_sha256,omitempty"`
	PassingTrials       []Trial `json:"passing_trials"`
	FailingTrials       []Trial `json:"failing_trials"`
	// AllTrials is every trial the search ran or resumed for this workload, probes
	// included, in the order they ran; absent in documents older than it.
	AllTrials []Trial `json:"trials,omitempty"`
	// BoundBy names what failed the first failing concurrency's confirmation trials: the
	// Key of each objective missed, or "errors" when requests failed. Empty when nothing
	// failed within the bounds.
	BoundBy []string `json:"bound_by,omitempty"`
	// Notes are additive: what the search observed that a reader should know, such as a
	// non-monotone capacity curve.
	Notes []string `json:"notes,omitempty"`
	// TrialDisagreements are the levels whose confirmation trials disagree by more than
	// their size explains (noise.go); absent when they agree. Additive.
	TrialDisagreements []TrialDisagreement `json:"trial_disagreements,omitempty"`
	// ClientBound says the search stopped at a trial whose load generator was the
	// bottleneck (its verdict client_bound): nothing at or above that level is a capacity
	// of the server, so unless a level below it failed the boundary is null. Additive.
	ClientBound bool `json:"client_bound,omitempty"`
}

// Trial is the full metrics of one confirmation trial.
type Trial struct {
	TTFTMs                     Stats       `json:"ttft_ms"`
	RequestLatencyMs           Stats       `json:"request_latency_ms"`
	ITLMs                      Stats       `json:"itl_ms"`
	OutputThroughputTPS        float64     `json:"output_throughput_tps"`
	PerUserOutputThroughputTPS Stats       `json:"per_user_output_throughput_tps"`
	RequestThroughputRPS       float64     `json:"request_throughput_rps"`
	BenchmarkDurationS         float64     `json:"benchmark_duration_s"`
	ServerPromptTokens         MinMax      `json:"server_prompt_tokens"`
	ServerCompletionTokens     MinMax      `json:"server_completion_tokens"`
	Correctness                Correctness `json:"correctness"`
	Trial                      int         `json:"trial"`                 // 1-based index among the side's confirmation trials
	Concurrency                int         `json:"concurrency,omitempty"` // additive: the reference implies it by side
	// TTSTMs is the time to second token (first to second content chunk); absent in
	// documents older than it.
	TTSTMs *Stats `json:"ttst_ms,omitempty"`
	// InterChunkLatencyMs is the raw stream cadence: per request, (last − first content
	// chunk) / (content chunks − 1), not normalised by tokens as ITL is.
	InterChunkLatencyMs *Stats `json:"inter_chunk_latency_ms,omitempty"`
	// ConnectionSetupMs is each successful request's TCP connect plus TLS handshake before
	// it was sent (0 on a reused connection). TTFT excludes it; AIPerf's TTFT includes it.
	ConnectionSetupMs *Stats `json:"connection_setup_ms,omitempty"`
	// Kind (probe | confirmation) and StoppedEarly are written for the entries of a
	// workload's trials; a probe stopped early has metrics over what finished.
	Kind         string `json:"kind,omitempty"`
	StoppedEarly bool   `json:"stopped_early,omitempty"`
	// Verdict (pass | fail | error) is the trial's outcome as the search judged it, written
	// for the entries of a workload's trials: error when measured requests failed (see
	// ErrorSummary), fail when an objective was missed.
	Verdict string `json:"verdict,omitempty"`
	// RecordsFile is the trial's per-request records file, relative to the benchmark's
	// records_directory, and RecordsSHA256 its SHA-256 in hex; absent without records.
	RecordsFile   string `json:"records_file,omitempty"`
	RecordsSHA256 string `json:"records_sha256,omitempty"`
	// SLOs is the trial's value of each objective, in the document's order.
	SLOs []SLOResult `json:"slos,omitempty"`
	// GoodputPercent is the share of measured requests that succeeded and met every
	// objective on their own (AIPerf's goodput criterion), in percent.
	GoodputPercent *float64 `json:"goodput_percent,omitempty"`
	// ErrorSummary is additive: the measured requests that failed (or missed their output
	// length), by kind, with one redacted example message each. Absent when there were none.
	ErrorSummary []ErrorCount `json:"error_summary,omitempty"`
	// Server is the engine's own view of the trial (its Prometheus metrics); additive.
	Server *ServerView `json:"server,omitempty"`
	// Timing is where the trial's wall-clock went (preparation, flush, load); additive.
	Timing *TrialTiming `json:"timing,omitempty"`
	// Notes are additive: what a reader of this trial should know, such as prompts served
	// from a cache that should have been cold.
	Notes []string `json:"notes,omitempty"`
	// RequestRate is the rate an open-loop trial was scheduled at, in requests per second,
	// and OpenLoop how the schedule was kept and whether the server kept up; both absent
	// from closed-loop trials. Additive.
	RequestRate float64        `json:"request_rate,omitempty"`
	OpenLoop    *OpenLoopTrial `json:"open_loop,omitempty"`
	// Accelerators is what the accelerators' exporters (the benchmark's telemetry_endpoints)
	// said over the trial's measured requests: power, utilisation, memory and energy, per
	// device and summed. Absent without telemetry_endpoints. Additive.
	Accelerators *AcceleratorTelemetry `json:"accelerators,omitempty"`
	// Speedup is the factor a replay trial divided the trace's recorded offsets by; absent
	// from other trials. Additive.
	Speedup float64 `json:"speedup,omitempty"`
	// Users is how many virtual users a conversation trial held (multi-turn conversations
	// with think time), and Conversations what it measured of their turns; both absent from
	// other trials. Additive.
	Users         int                `json:"users,omitempty"`
	Conversations *ConversationTrial `json:"conversations,omitempty"`
	// Replicas is what each replica of a replicated deployment proved for this trial, in the
	// order of the benchmark's replica_endpoints; absent when they were not given. Additive.
	Replicas []ReplicaCheck `json:"replicas,omitempty"`
	// Host is the load generator's own machine during the trial's load (Linux: /proc);
	// absent where it cannot be read. Additive.
	Host *HostLoad `json:"host,omitempty"`
	// ForComparison marks a full trial the run added for its comparison with a baseline,
	// not for its own search: the look of the sequential comparison it was first read at
	// (1: a level the comparison needs, measured before the first verdict; 2, 3, …: one
	// trial added after each open verdict). Such trials are listed only among the
	// workload's trials, with kind confirmation; they never move the capacity (the
	// headline is the search's), they feed the comparison. Absent from other trials. Additive.
	ForComparison int `json:"for_comparison,omitempty"`
	// Client is what the load generator added to the trial itself and whether it was the
	// bottleneck (client.go); absent from trials measured before it. Additive.
	Client *ClientTrial `json:"client,omitempty"`
	// Pods is how the trial was spread over the runner's pods (runner.kubernetes.pods):
	// each pod's share and how together they started. Absent when one load generator sent
	// it. Additive.
	Pods *PodsTrial `json:"pods,omitempty"`
}

// PodsTrial is a trial spread over several load generators (runner pods), their per-request
// records merged into the one trial every figure above is computed from.
type PodsTrial struct {
	Pods int `json:"pods"`
	// StartSkewMs is the spread of the instants the pods left the start barrier, on pod 0's
	// clock (each other pod's clock read against it over the pod network as it took its
	// share: ClockUncertaintyMs, half the slowest round trip, bounds the error that adds).
	StartSkewMs        float64 `json:"start_skew_ms"`
	ClockUncertaintyMs float64 `json:"clock_uncertainty_ms"`
	// Shares is every pod's part, in pod order.
	Shares []PodShare `json:"shares"`
}

// PodShare is one pod's part of a trial: a closed loop's concurrency, a users trial's users,
// the warmup and measured requests it was given (a users trial: its warmup conversations and
// measured turns), and its clock against pod 0's.
type PodShare struct {
	Pod              int     `json:"pod"`
	Concurrency      int     `json:"concurrency"`
	Users            int     `json:"users"`
	WarmupRequests   int     `json:"warmup_requests"`
	MeasuredRequests int     `json:"measured_requests"`
	ClockOffsetMs    float64 `json:"clock_offset_ms"`
}

// HostLoad is what the machine running the load generator did during a trial's load, read
// from /proc/loadavg and /proc/stat as the load began and as it ended: another job beside
// the benchmark, or a hypervisor taking the CPU (steal), moves the figures without any
// change to the server.
type HostLoad struct {
	CPUs int `json:"cpus"`
	// LoadAvg1mStart and LoadAvg1mEnd are the 1-minute load average as the load began and ended.
	LoadAvg1mStart float64 `json:"load_avg_1m_start"`
	LoadAvg1mEnd   float64 `json:"load_avg_1m_end"`
	// BusyPercent is the share of all CPUs' time that was not idle over the load, StealPercent
	// the share a hypervisor gave to other guests.
	BusyPercent  float64 `json:"busy_percent"`
	StealPercent float64 `json:"steal_percent"`
}

// ReplicaCheck is one replica's part in a trial: a flush through a Service reaches one
// replica, so the benchmark waits for idle and flushes on each replica's own endpoint.
type ReplicaCheck struct {
	Endpoint string `json:"endpoint"` // the replica's base URL (replica_endpoints)
	// IdleVerified: the replica reported no running and no waiting request before the trial;
	// false when it offered no idle signal, so the wait could not tell.
	IdleVerified bool `json:"idle_verified"`
	// CacheFlushed: the replica confirmed that it emptied its prefix cache before the trial;
	// false when flushing is off (cache_flush = "none", or llama.cpp's per-request cache_prompt).
	CacheFlushed bool `json:"cache_flushed"`
	// PromptTokens and PrefixCacheHitTokens are the replica's own prefix-cache counters
	// (prompt tokens looked up, found) over the trial's measured requests; absent when it
	// exports none or a scrape failed.
	PromptTokens         *float64 `json:"prompt_tokens,omitempty"`
	PrefixCacheHitTokens *float64 `json:"prefix_cache_hit_tokens,omitempty"`
}

// AcceleratorTelemetry is the accelerators' view of one trial, from their Prometheus
// exporters (NVIDIA DCGM exporter, Intel XPU Manager exporter), scraped at a steady interval
// beside the load. Its figures cover the window from the scrape as the measured requests
// began to the scrape after the last one ended.
type AcceleratorTelemetry struct {
	WindowS float64 `json:"window_s"`
	// Scrapes is how many rounds of scrapes fell in the window (every endpoint once a round).
	Scrapes int `json:"scrapes"`
	// OutputTokens is the output tokens the server reported for the measured requests, the
	// divisor of joules_per_output_token.
	OutputTokens int                 `json:"output_tokens"`
	Total        AcceleratorFigures  `json:"total"`
	Devices      []AcceleratorDevice `json:"devices"`
	// Warnings say what was not measured and why (a scrape that failed, an exporter without
	// a series); nothing they describe is reported as 0.
	Warnings []string `json:"warnings,omitempty"`
}

// AcceleratorFigures are one device's figures, or in Total all devices': power and energy
// summed, utilisation averaged over the devices, memory the peak of the summed use. A figure
// the exporters did not give is null, never 0.
type AcceleratorFigures struct {
	MeanPowerW             *float64 `json:"mean_power_w"`
	PeakPowerW             *float64 `json:"peak_power_w"`
	MeanUtilizationPercent *float64 `json:"mean_utilization_percent"`
	PeakMemoryUsedBytes    *float64 `json:"peak_memory_used_bytes"`
	EnergyJ                *float64 `json:"energy_j"`
	JoulesPerOutputToken   *float64 `json:"joules_per_output_token"`
	// EnergySource says how EnergyJ was found: energy_counter (the exporter's energy counter,
	// its difference over the window), power_samples (power integrated over the scrapes by
	// trapezoids), or in Total mixed; absent when the energy is unknown.
	EnergySource string `json:"energy_source,omitempty"`
}

// AcceleratorDevice is one accelerator as an exporter named it.
type AcceleratorDevice struct {
	Endpoint int    `json:"endpoint"` // 0-based index in telemetry_endpoints
	Exporter string `json:"exporter"` // dcgm | xpumanager
	Device   string `json:"device"`   // the exporter's id: UUID (DCGM), uuid or pci_bdf (XPU Manager)
	AcceleratorFigures
}

// The energy sources of AcceleratorFigures.EnergySource.
const (
	EnergyFromCounter = "energy_counter"
	EnergyFromPower   = "power_samples"
	EnergyMixed       = "mixed"
)

// ConversationTrial is what a users trial measured of its conversations' turns. A trial's
// measured turns are those of every user's conversations after its warmup ones; first turns
// (a conversation's opening message, which only the shared system prompt can find cached)
// and later turns (which send the whole history back and should find it cached) are reported
// apart.
type ConversationTrial struct {
	MeasuredTurns int `json:"measured_turns"`
	FirstTurns    int `json:"first_turns"` // measured turns that opened a conversation
	// TTFT percentiles of the successful first and later turns, in ms; 0 when there were none.
	FirstTurnTTFTP50Ms float64 `json:"first_turn_ttft_p50_ms"`
	FirstTurnTTFTP95Ms float64 `json:"first_turn_ttft_p95_ms"`
	LaterTurnTTFTP50Ms float64 `json:"later_turn_ttft_p50_ms"`
	LaterTurnTTFTP95Ms float64 `json:"later_turn_ttft_p95_ms"`
	// InFlightMean and InFlightPeak are the requests on the wire over the measured window
	// (warmup turns included: the server serves them alike), time-weighted mean and peak.
	InFlightMean float64 `json:"in_flight_mean"`
	InFlightPeak int     `json:"in_flight_peak"`
	// ContextTokensMax is the longest context a measured turn reached: its prompt and output
	// tokens as the server counted them.
	ContextTokensMax int `json:"context_tokens_max"`
	// LaterTurnCachedPercent is the share of later turns' prompt tokens the server said it
	// served from its prefix cache; absent when it is unknown: the server did not say (vLLM
	// leaves out a cached count of 0, as does any engine with its prefix cache off) or no
	// later turn was measured. Documents written before it was optional hold -1 for unknown;
	// they read as absent and are written back as they were.
	LaterTurnCachedPercent *float64 `json:"later_turn_cached_percent,omitempty"`
	// TurnsCachedBeyondHistory is the warm-cache proof: measured turns for which the server
	// reported more cached prompt tokens than the conversation's own history (and, for a
	// first turn, the prefix every conversation shares) could hold. Conversations are unique,
	// so any is a measurement fault: a cache the flush did not empty, or conversations that
	// repeat.
	TurnsCachedBeyondHistory int `json:"turns_cached_beyond_history"`
}

// OpenLoopTrial is what an open-loop trial adds: the schedule's fidelity and the two guards
// that say whether the server kept up with the rate (see the provider's docs for the rule).
type OpenLoopTrial struct {
	Arrival string `json:"arrival"` // constant | poisson | gamma
	// OfferedRate is the measured requests' rate on the schedule, AchievedRate the rate they
	// were really dispatched at; CompletionRate the successful responses' rate.
	OfferedRate    float64 `json:"offered_rate"`
	AchievedRate   float64 `json:"achieved_rate"`
	CompletionRate float64 `json:"completion_rate"`
	// BacklogGrowth is the fitted rise of the in-flight count over the trial, in requests,
	// BacklogAllowance the most it may rise, InFlightMean the mean count it was fitted to.
	BacklogGrowth    float64 `json:"backlog_growth"`
	BacklogAllowance float64 `json:"backlog_allowance"`
	InFlightMean     float64 `json:"in_flight_mean"`
	// SendLatenessMs is dispatch minus due time over the measured requests.
	SendLatenessP50Ms float64 `json:"send_lateness_p50_ms"`
	SendLatenessP99Ms float64 `json:"send_lateness_p99_ms"`
	SendLatenessMaxMs float64 `json:"send_lateness_max_ms"`
	// CapBound counts requests held back by max_in_flight.
	CapBound int  `json:"cap_bound"`
	KeptUp   bool `json:"kept_up"`
	// Missed lists the guards that failed: completion_rate, backlog.
	Missed []string `json:"missed,omitempty"`
}

// SLOResult is one objective's value in one trial.
type SLOResult struct {
	Metric     string  `json:"metric"`
	Percentile float64 `json:"percentile,omitempty"`
	Value      float64 `json:"value"`
	Met        bool    `json:"met"`
}

// ErrorCount is one kind of request failure in a trial.
type ErrorCount struct {
	// Kind is http_status, stalled, request_timeout, reset, truncated_stream,
	// malformed_stream, server_error, no_content, length_mismatch or other.
	Kind       string `json:"kind"`
	HTTPStatus int    `json:"http_status,omitempty"` // for kind http_status: one entry per status
	Count      int    `json:"count"`
	Example    string `json:"example"` // the first such request's message, API key redacted
}

// Label names the kind for people: "HTTP 503" for a status, else the kind itself.
func (e ErrorCount) Label() string {
	if e.Kind == "http_status" && e.HTTPStatus != 0 {
		return "HTTP " + strconv.Itoa(e.HTTPStatus)
	}
	return e.Kind
}

// MinMax of a token count. Floats because the reference writes them as 2099.0.
type MinMax struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// Correctness holds the per-trial (or total) correctness counters.
type Correctness struct {
	WarmupRecords              int     `json:"warmup_records"`
	UniqueWarmupPrompts        int     `json:"unique_warmup_prompts"`
	WarmupProfilePromptOverlap int     `json:"warmup_profile_prompt_overlap"`
	ProfilingRecords           int     `json:"profiling_records"`
	HTTP200                    int     `json:"http_200"`
	UniquePrompts              int     `json:"unique_prompts"`
	UniqueOutputs              int     `json:"unique_outputs"`
	GeneratedChunks            int     `json:"generated_chunks"`
	GeneratedUTF8Bytes         int     `json:"generated_utf8_bytes"`
	CompletionTokensTotal      int     `json:"completion_tokens_total"`
	FinishReasonLength         int     `json:"finish_reason_length"`
	Errors                     int     `json:"errors"`
	Cancelled                  bool    `json:"cancelled"`
	OutputLengthMismatches     float64 `json:"output_length_mismatches"`
	UniquenessScope            string  `json:"uniqueness_scope,omitempty"` // only in correctness_total
	// DegenerateOutputs counts the measured requests whose output was broken text rather
	// than generation (package degenerate); absent when no output was judged (every request
	// failed) and in documents from before the check. Additive; before cached_prompt_tokens,
	// whose null a parsed document writes back last.
	DegenerateOutputs *DegenerateOutputs `json:"degenerate_outputs,omitempty"`
	// CachedPromptTokens sums, over the measured requests, the prompt tokens the server
	// reported as served from its prefix cache; null when it could not tell. Additive.
	CachedPromptTokens *CacheCount `json:"cached_prompt_tokens,omitempty"`
	// RequestsCachedBeyondSharedPrefix counts measured requests with more cached prompt
	// tokens than the prefix every prompt shares (the chat template's): with flushing on,
	// proof that the cache was not cold. Additive.
	RequestsCachedBeyondSharedPrefix int `json:"requests_cached_beyond_shared_prefix,omitempty"`
}

// DegenerateOutputs counts a trial's degenerate outputs by the rule that flagged them. A
// request can break more than one rule (the same "!!!!" for every prompt); Requests counts
// it once.
type DegenerateOutputs struct {
	// Requests is the measured requests flagged by any rule, of Checked: the measured
	// requests that finished with HTTP 200 and no error, whose output could be judged.
	Requests int `json:"requests"`
	Checked  int `json:"checked"`
	// Empty: no text although the server counted completion tokens.
	Empty int `json:"empty"`
	// RepeatedCodePoint: one code point is 80 % or more of an output of 16 code points or more.
	RepeatedCodePoint int `json:"repeated_code_point"`
	// IdenticalAcrossPrompts: an output of 128 code points or more that another prompt got
	// byte for byte.
	IdenticalAcrossPrompts int `json:"identical_across_prompts"`
	// RepeatedToken: a special token's shape ("<unk>", "[PAD]": 2 to 16 code points, no
	// whitespace, ASCII punctuation) repeated back to back for 80 % or more of an output of 16
	// code points or more. Additive: absent when 0, as in documents from before the rule.
	RepeatedToken int `json:"repeated_token,omitempty"`
}

// Most reports whether most of the judged outputs were degenerate, which makes the trial an
// error: what it measured is a broken server's speed, not capacity. False for nil.
func (d *DegenerateOutputs) Most() bool { return d != nil && d.Requests*2 > d.Checked }

// CacheCount is a count of prompt tokens the server reported as served from its prefix
// cache. Known false means the server could not tell, written as null: a 0 would claim a cold
// cache nobody observed.
type CacheCount struct {
	Tokens int
	Known  bool
}

// MarshalJSON writes the count, or null when unknown.
func (c CacheCount) MarshalJSON() ([]byte, error) {
	if !c.Known {
		return []byte("null"), nil
	}
	return strconv.AppendInt(nil, int64(c.Tokens), 10), nil
}

// ServerView is what the engine's own Prometheus metrics saw during a trial, between a scrape
// before its first request and one after its last, beside the client's measurements. Every
// field is optional: engines export different series (llama.cpp has no latency histograms).
type ServerView struct {
	Source              string         `json:"source"` // e.g. "vllm /metrics"
	TTFTMs              *ServerLatency `json:"ttft_ms,omitempty"`
	RequestLatencyMs    *ServerLatency `json:"request_latency_ms,omitempty"`
	QueueTimeMs         *ServerLatency `json:"queue_time_ms,omitempty"`
	PeakRunningRequests *float64       `json:"peak_running_requests,omitempty"`
	PeakQueuedRequests  *float64       `json:"peak_queued_requests,omitempty"`
	// PeakKVCacheUsage is the highest fraction (0..1) of the KV cache in use.
	PeakKVCacheUsage *float64 `json:"peak_kv_cache_usage,omitempty"`
	// PrefixCacheHitTokens is how many prompt tokens the server's prefix-cache counter says
	// it served from cache during the trial (warmups included).
	PrefixCacheHitTokens *float64 `json:"prefix_cache_hit_tokens,omitempty"`
}

// ServerLatency summarises a server histogram's observations during a trial, in ms;
// percentiles are interpolated inside the buckets, as Prometheus' histogram_quantile does.
type ServerLatency struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
}
