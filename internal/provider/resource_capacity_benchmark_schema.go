package provider

// The llmserve_capacity_benchmark schema: every attribute, its default and its description.

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/compare"
)

// trialChangeReplaces replaces the benchmark when its trial shape changed in anything but
// comparison_budget, which only the comparison reads.
func trialChangeReplaces(ctx context.Context, req planmodifier.ObjectRequest, resp *objectplanmodifier.RequiresReplaceIfFuncResponse) {
	if req.StateValue.IsNull() || req.PlanValue.IsUnknown() || req.PlanValue.IsNull() {
		resp.RequiresReplace = !req.StateValue.Equal(req.PlanValue)
		return
	}
	state, plan := req.StateValue.Attributes(), req.PlanValue.Attributes()
	for name, v := range plan {
		if name == "comparison_budget" {
			continue
		}
		if s, ok := state[name]; !ok || !s.Equal(v) {
			resp.RequiresReplace = true
			return
		}
	}
}

func (r *capacityBenchmarkResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	def := capacity.Defaults()
	searchAttributes, trialAttributes := benchmarkSearchAttributes(def), benchmarkTrialAttributes(def)
	resp.Schema = schema.Schema{
		MarkdownDescription: "Measures the SLO capacity of an OpenAI-compatible streaming endpoint: for each workload, " +
			"the highest concurrency at which every confirmation trial meets the SLO. The benchmark runs at create; " +
			"plan never sends load. Any change of an input or of `triggers` replaces the resource, which re-runs it " +
			"(so does `terraform apply -replace=<address>`).\n\n" +
			"A measurement cannot be imported: there is nothing remote to read it back from. Archive `results_json` and read it " +
			"with the `llmserve_capacity_report` data source instead. Destroy only forgets the result in state: the server is " +
			"left as it is, and `progress_file`, if set, is kept on disk.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Random identifier of this benchmark run.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"endpoint": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Base URL of the OpenAI-compatible server, e.g. `http://gpu-host.example.com:30000`: `http` or `https`, without `/v1` (the benchmark adds `/v1/chat/completions` itself), query, fragment or credentials (put the key in `api_key`; a URL is stored in state and shown in plan). A value known only at apply is checked then, before any request.",
				PlanModifiers:       replace,
			},
			"replica_endpoints": schema.ListAttribute{
				Optional:    true,
				ElementType: types.StringType,
				MarkdownDescription: "Base URLs of every replica behind `endpoint`, one per pod: `llmserve_inference_deployment.<name>.replica_endpoints`. " +
					"A cache flush sent to a Service reaches the one replica the Service picks, so with several replicas the others would keep warm prefix caches. " +
					"With this list, before each trial the benchmark waits until every replica runs and queues nothing and flushes every replica's prefix cache, " +
					"in parallel, each on its own URL, and reads each replica's prefix-cache counters over the measured requests; each trial in `results_json` says per replica " +
					"what was proven (`replicas`: `idle_verified`, `cache_flushed`, `prompt_tokens`, `prefix_cache_hit_tokens`). The load still goes to `endpoint`. " +
					"A replica that stays busy or does not confirm its flush fails the run, named. Each element is a base URL like `endpoint`, listed once; the list may not be empty. " +
					"The URLs must be reachable from where the load runs (the deployment's are pod IPs: `runner.kubernetes` measures from inside the cluster network). " +
					"Changing the list does not re-run the benchmark: pod addresses change whenever pods restart.",
			},
			"model": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Model name sent in every request (as listed by the server's `/v1/models`).",
				Validators:          []validator.String{printableValidator{}},
				PlanModifiers:       replace,
			},
			"api": schema.StringAttribute{
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString(def.API),
				MarkdownDescription: fmt.Sprintf("`%s` (`/v1/chat/completions`, the server applies its chat template) or `%s` (`/v1/completions`). Default `%s`.", capacity.APIChat, capacity.APICompletions, def.API),
				PlanModifiers:       replace,
			},
			"api_key": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				WriteOnly:           true,
				MarkdownDescription: "API key sent as a Bearer token. Write-only: never stored in state or plan (Terraform >= 1.11).",
				Validators:          []validator.String{printableValidator{}},
			},
			"admin_api_key": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				WriteOnly:           true,
				MarkdownDescription: "Key for the server's admin endpoints, sent instead of `api_key` only to flush the cache: SGLang started with `--admin-api-key` (`llmserve_inference_server`'s `admin_api_key_wo`) refuses `/flush_cache` without it. Write-only: never stored in state or plan.",
				Validators:          []validator.String{printableValidator{}},
			},
			"workloads": schema.ListNestedAttribute{
				Required:            true,
				MarkdownDescription: "Input/output shapes to find the boundary for. Labels key the result maps.",
				PlanModifiers:       []planmodifier.List{listplanmodifier.RequiresReplace()},
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"label": schema.StringAttribute{
						Required:            true,
						MarkdownDescription: "Unique name of the workload, e.g. `8K / 1K`.",
					},
					"input_tokens": schema.Int64Attribute{
						Optional:            true,
						MarkdownDescription: fmt.Sprintf("Prompt length in tokens, not counting the server's chat template; 1 to %d (1 Mi). Required unless the workload replays a `trace`.", capacity.MaxTokens),
					},
					"output_tokens": schema.Int64Attribute{
						Optional:            true,
						MarkdownDescription: fmt.Sprintf("Tokens generated per request (`max_tokens` with `ignore_eos`); 1 to %d (1 Mi). Required unless the workload replays a `trace`.", capacity.MaxTokens),
					},
					"trace":        traceAttribute(),
					"conversation": conversationAttribute(),
					"input_tokens_stddev": schema.Float64Attribute{
						Optional: true,
						MarkdownDescription: "Spread of the prompt length: each request's `input_tokens` is drawn from a normal distribution " +
							"with this standard deviation (seeded, rounded, clipped at 1), as AIPerf's `--synthetic-input-tokens-stddev`. " +
							"Default 0: every prompt the same length.",
					},
					"output_tokens_stddev": schema.Float64Attribute{
						Optional: true,
						MarkdownDescription: "Spread of the output length (`max_tokens`), drawn like `input_tokens_stddev`, as AIPerf's " +
							"`--output-tokens-stddev`. Output length mismatches are then judged against each request's own length. Default 0.",
					},
					"shared_prefix_tokens": schema.Int64Attribute{
						Optional: true,
						MarkdownDescription: "Tokens at the start of every prompt that are the same text for all requests (a common system " +
							"prompt, the realistic chat case), counted within `input_tokens`. The cache is still flushed before every trial, " +
							"so the prefix is computed once per trial and served from the prefix cache after that: expected cache hits, " +
							"not a measurement error. Default 0: nothing shared.",
					},
				}},
			},
			"slos": sloListAttribute(),
			"search": schema.SingleNestedAttribute{
				Optional:            true,
				Computed:            true,
				MarkdownDescription: fmt.Sprintf("Concurrency bounds of the search (default %d to %d), or a plain grid of levels.", def.MinConcurrency, def.MaxConcurrency),
				Default:             objectDefault(ctx, searchAttributes),
				PlanModifiers:       []planmodifier.Object{objectplanmodifier.RequiresReplace()},
				Attributes:          searchAttributes,
			},
			"trial": schema.SingleNestedAttribute{
				Optional: true,
				Computed: true,
				MarkdownDescription: fmt.Sprintf("Shape of every trial. Defaults match the reference AIPerf protocol: %d warmups, %d measured requests, %d confirmation trials, cache flushed.",
					def.WarmupRequests, def.MeasuredRequests, def.ConfirmationTrials),
				Default: objectDefault(ctx, trialAttributes),
				// A new comparison_budget only measures the comparison again (Update), as
				// a new baseline does; every other change is a new measurement.
				PlanModifiers: []planmodifier.Object{objectplanmodifier.RequiresReplaceIf(trialChangeReplaces,
					"A change of the trial shape re-runs the benchmark; comparison_budget alone measures only the comparison again.",
					"A change of the trial shape re-runs the benchmark; `comparison_budget` alone measures only the comparison again.")},
				Attributes: trialAttributes,
			},
			"baseline": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "An earlier run's `results_json` to measure against: `file(\"baseline.json\")`, the `llmserve_capacity_report` data source's " +
					"`results_json`, or another benchmark's. After each workload's search the benchmark measures the levels the comparison needs " +
					"(the baseline's maximum passing and first failing level, up to `trial.confirmation_trials` full trials each, even outside the search's bounds; " +
					"where the first verdict's interval would be at least the band wide whatever its centre, every level the baseline measured in full), " +
					"reads the verdict, and while it is `inconclusive` adds one full trial at a time where it narrows the interval most and reads it again, " +
					"until the verdict is `regressed`, `improved` or `unchanged` or `trial.comparison_budget` trials are spent. Each look spends its own share " +
					"of the 5 % false-alarm level (4 % at the first, 5 %/(5 j (j+1)) at the j-th after it), so looking after every trial keeps the stated error " +
					"rates. The trials added are listed in `results_json` with `for_comparison` (the look) and never move the capacity; `comparison` is the verdict. " +
					"Changing only `baseline` (or `trial.comparison_budget`) keeps every trial of the stored result and measures only what the new comparison needs, " +
					"reusing the comparison trials it measured before at the same level and number; removing it keeps the stored searches and drops the comparison " +
					"without sending a request. Closed-loop searches only (concurrency, or users of `conversation` workloads): an open-loop `arrival` is refused at plan. " +
					"The \"Gate on change\" guide shows the gate.",
				Validators: []validator.String{nonEmptyString{}},
			},
			"comparison": schema.ObjectAttribute{
				Computed:       true,
				AttributeTypes: comparisonAttrTypes,
				MarkdownDescription: "This run compared with `baseline` at the look it stopped at; null without a baseline. The same object, value for value, as " +
					"`provider::llmserve::compare(baseline, results_json)` returns: gate on `self.comparison.regressed` or a workload's `verdict` in a `postcondition`. " +
					descCompareMethod + "\n\nAttributes: " + comparisonAttributesDescription,
				PlanModifiers: []planmodifier.Object{objectplanmodifier.UseStateForUnknown()},
			},
			"triggers": schema.MapAttribute{
				Optional:            true,
				ElementType:         types.StringType,
				MarkdownDescription: "Arbitrary values; any change re-runs the benchmark (e.g. the inference server's container id).",
				Validators:          []validator.Map{mapvalidator.ValueStringsAre(printableValidator{}), mapvalidator.KeysAre(printableValidator{})},
				PlanModifiers:       []planmodifier.Map{mapplanmodifier.RequiresReplace()},
			},
			"experiment": schema.SingleNestedAttribute{
				Optional:            true,
				MarkdownDescription: "What was measured, recorded in `results_json`'s `experiment` block. Pass `llmserve_inference_server.<name>.experiment` or write it out.",
				Attributes:          experimentSchemaAttributes(),
				PlanModifiers:       []planmodifier.Object{objectplanmodifier.RequiresReplace()},
			},
			"progress_file": schema.StringAttribute{
				Optional:   true,
				Validators: []validator.String{progressFileValidator{}, printableValidator{}},
				MarkdownDescription: "Path of a file to append one JSON line per finished trial (its short fields first: time, workload, concurrency, kind, index, verdict, duration; " +
					"then each objective's value and the trial's full metrics), the machine record of a long run; `progress_log` is the one to read. " +
					"Trials recorded there for the same configuration are reused when an interrupted run (an interrupted apply, a server that went away, a timeout) is applied again: " +
					"only the trials not yet finished are measured, and the apply warns how many it reused and which lines it ignored (another configuration, damaged lines) and why. " +
					"Trials with failed requests are kept as a record but measured again. " +
					"Must be a file path: not empty (omit the attribute for no journal) and not a directory. " + fileRule(capacity.JournalFile),
			},
			"progress_log": schema.StringAttribute{
				Optional:   true,
				Validators: []validator.String{progressFileValidator{}, printableValidator{}},
				MarkdownDescription: "Path of a text file to append one line a person reads per finished trial, for `tail -f` during a long run: " +
					"time, workload, concurrency, trial kind and number (`probe`, `confirmation 2/3`), verdict, each objective's value against its threshold, " +
					"the trial's duration and how much of it the server was idle, and for the run: trials done (and resumed), elapsed, and the trials left " +
					"(a range over where the boundary may still lie, with the time they take at this run's mean trial duration). " +
					"Also a line when the run starts (what the progress file gives it, and what it ignores there), per finished workload, and when it finishes or stops. " +
					"The same lines go to the provider's log at INFO. Changing it does not re-run the benchmark.",
			},
			"records_directory": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Directory to write per-request records to: one JSONL file per trial (probes included), one line per " +
					"request, warmups flagged, with its timestamps (Unix ns), chunk count, token counts, finish reason, HTTP status and " +
					"error, and what the degenerate-output rules read (the prompt's and output's hashes, the output's code points and its first 40); in a trial spread over `runner.kubernetes.pods`, the `pod` that sent it. Each trial in `results_json` names its file (`records_file`, relative to this directory) and `records_sha256`. " +
					"`llmserve-recompute -results result.json -records <dir> -check` (in the release zip beside the provider) recomputes every trial's metrics from " +
					"them, bit for bit. Changing it re-runs the benchmark (the files belong to the run). Created when missing; plan refuses an " +
					"existing file or a path below one.",
				Validators:    []validator.String{stringvalidator.LengthAtLeast(1), recordsDirectoryValidator{}, printableValidator{}},
				PlanModifiers: replace,
			},
			"telemetry_endpoints": schema.ListAttribute{
				Optional:    true,
				ElementType: types.StringType,
				MarkdownDescription: "Prometheus metrics URLs of the accelerators' exporters, e.g. NVIDIA's DCGM exporter (`http://gpu-node:9400/metrics`) or Intel's XPU Manager exporter. " +
					"Each is scraped before every trial, once a second while it runs (in its own goroutine, never on the request path), as its measured requests begin and after it; " +
					"each trial in `results_json` then carries `accelerators`: per device (`endpoint`, `exporter`, `device`) and summed (`total`), " +
					"the mean and peak power (W), mean utilisation (%), peak memory used (bytes), energy (J: the exporter's energy counter over the measured requests where it has one, " +
					"`DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION` or `xpum_energy_joules_total`, else its power integrated over the scrapes; `energy_source` says which) and joules per output token. " +
					"A figure no exporter gave is `null`, never 0; a scrape that fails is a warning in the trial, never a failed trial. " +
					"A device's series given twice (or by two endpoints) count once; an energy counter that goes back is read as a reset; " +
					"a value beyond any accelerator (power over 3000 W, memory used over 1 TiB, utilisation over 100 %) is `null`; each is a warning in the trial. " +
					"DCGM exporter reads its GPUs every 30 s unless started with a shorter collection interval (`-c 1000` or `DCGM_EXPORTER_INTERVAL=1000`): set it, or the power of a short trial is one reading. " +
					"URLs with credentials or a query string are refused (they would be stored in state), and so is the same exporter twice. " +
					"Changing the list re-runs the benchmark; it is not part of the progress journal's configuration, so an interrupted run resumes with it.",
				Validators:    []validator.List{listvalidator.ValueStringsAre(printableValidator{})},
				PlanModifiers: []planmodifier.List{listplanmodifier.RequiresReplace()},
			},
			"record_chunk_times": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "With `records_directory`, also record each content chunk's arrival after the request was sent " +
					"(`chunk_offsets_ns`): about 10 bytes per streamed chunk on disk (a records file is about 360 KiB per 1 000 requests without them, 5.3 MiB with them at 512 chunks per request). Default `false`.",
				PlanModifiers: []planmodifier.Bool{boolplanmodifier.RequiresReplace()},
			},
			"runner": benchmarkRunnerAttribute(),
			"timeouts": positiveTimeouts(ctx, timeouts.Opts{
				Create: true,
				CreateDescription: "How long the whole benchmark may run, as a Go duration (`\"90m\"`, `\"36h\"`). Default `24h`; must be positive. " +
					"Plan sets against it what a trial waits however fast the server answers (conversations' think time, a constant-arrival rate trial at `search.rate.max`, a replay's span at `search.speedup.max`), with the arithmetic: " +
					"an error when one trial cannot fit (a trial cut short keeps nothing), a warning when random pauses make that likely, when a runner would finish it after the apply, or when the fewest trials the search can ask for do not fit together.",
			}),

			"arrival":                      arrivalAttribute(),
			"maximum_passing_request_rate": float64MapAttribute(descMaximumPassingRate),
			"first_failing_request_rate":   float64MapAttribute(descFirstFailingRate),
			"maximum_passing_speedup":      float64MapAttribute(descMaximumPassingSpeedup),
			"first_failing_speedup":        float64MapAttribute(descFirstFailingSpeedup),
			"maximum_passing_users": schema.MapAttribute{
				Computed:    true,
				ElementType: types.Int64Type,
				MarkdownDescription: "Per workload label, for `conversation` workloads: the most users (each holding multi-turn " +
					"conversations with think time) at which every confirmation trial met the objectives, the number of people who can " +
					"chat at once; null when even the fewest users tried failed, or for single-request workloads." + labelKeyedPlan,
				PlanModifiers: []planmodifier.Map{mapplanmodifier.UseStateForUnknown()},
			},
			"first_failing_users": schema.MapAttribute{
				Computed:    true,
				ElementType: types.Int64Type,
				MarkdownDescription: "Per workload label, for `conversation` workloads: the fewest users above `maximum_passing_users` " +
					"at which a confirmation trial failed; null when every level tried passed, or for single-request workloads." + labelKeyedPlan,
				PlanModifiers: []planmodifier.Map{mapplanmodifier.UseStateForUnknown()},
			},
			"maximum_passing_concurrency": schema.MapAttribute{
				Computed:            true,
				ElementType:         types.Int64Type,
				MarkdownDescription: "Per workload label, " + descMaximumPassing + labelKeyedPlan,
				PlanModifiers:       []planmodifier.Map{mapplanmodifier.UseStateForUnknown()},
			},
			"first_failing_concurrency": schema.MapAttribute{
				Computed:            true,
				ElementType:         types.Int64Type,
				MarkdownDescription: "Per workload label, " + descFirstFailing + labelKeyedPlan,
				PlanModifiers:       []planmodifier.Map{mapplanmodifier.UseStateForUnknown()},
			},
			"capacity_bounded_by_search": schema.MapAttribute{
				Computed:    true,
				ElementType: types.BoolType,
				MarkdownDescription: "Per workload label, " + descBoundedBySearch + " A bounded workload also gets a warning at apply " +
					"and a note in `workload_results` and `results_json`. Gate on it: " +
					"`condition = !self.capacity_bounded_by_search[\"8K / 1K\"]`." + labelKeyedPlan,
				PlanModifiers: []planmodifier.Map{mapplanmodifier.UseStateForUnknown()},
			},
			"workload_results": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Per workload, the boundary and the full metrics of the confirmation trials on both sides.",
				NestedObject:        schema.NestedAttributeObject{Attributes: workloadResultSchemaAttributes()},
				PlanModifiers:       []planmodifier.List{listplanmodifier.UseStateForUnknown()},
			},
			"results_json": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The whole result as a schema v1 JSON document (the reference AIPerf result's shape).",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
		},
	}
}

// benchmarkSearchAttributes are the attributes of `search`; their defaults are the domain's.
func benchmarkSearchAttributes(def capacity.Config) map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"min_concurrency": schema.Int64Attribute{
			Optional: true, Computed: true, Default: int64default.StaticInt64(int64(def.MinConcurrency)),
			MarkdownDescription: fmt.Sprintf("Lowest concurrency tried, 1 to %d. Default %d.", capacity.MaxConcurrency, def.MinConcurrency),
		},
		"max_concurrency": schema.Int64Attribute{
			Optional: true, Computed: true, Default: int64default.StaticInt64(int64(def.MaxConcurrency)),
			MarkdownDescription: fmt.Sprintf("Highest concurrency tried, 1 to %d. Default %d.", capacity.MaxConcurrency, def.MaxConcurrency),
		},
		"concurrency_levels": schema.ListAttribute{
			Optional:    true,
			ElementType: types.Int64Type,
			MarkdownDescription: "A plain grid instead of the adaptive search: exactly these concurrencies, each with " +
				"`trial.confirmation_trials` full trials (no probes, nothing stopped early), all reported in `results_json`; " +
				"the boundary is the first failing level and the level before it. For a full curve, or to reproduce a " +
				"published table; a grid of one level asks whether that level holds (the apply does not warn that every " +
				"level passed). Replaces `min_concurrency`/`max_concurrency`, which must then be left unset. " +
				fmt.Sprintf("Each level 1 to %d, each listed once.", capacity.MaxConcurrency),
		},
		"rate":    rateSearchAttribute(),
		"speedup": speedupSearchAttribute(),
	}
}

// benchmarkTrialAttributes are the attributes of `trial`; their defaults are the domain's.
func benchmarkTrialAttributes(def capacity.Config) map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"warmup_requests": schema.Int64Attribute{
			Optional: true, Computed: true, Default: int64default.StaticInt64(int64(def.WarmupRequests)),
			MarkdownDescription: fmt.Sprintf("Requests sent before each trial's measured requests, not measured; 0 to %d. Default %d.", capacity.MaxRequests, def.WarmupRequests),
		},
		// Optional without a default: state written before it existed reads it as null, as a
		// configuration that leaves it out plans it, so adding it replaced no benchmark.
		"engine_warmup_requests": schema.Int64Attribute{
			Optional: true,
			MarkdownDescription: fmt.Sprintf("Primes the engine once, before each workload's first measured trial: this many requests of the workload's shape at each "+
				"concurrency 1, 2, 4, … up to the server's running-request limit (llama.cpp slots, SGLang and vLLM running requests; 8 when the server does not say; at most %d), "+
				"not measured and not recorded; the workload's `notes` say what was sent. For engines that build their kernels on first use: llama.cpp's Vulkan backend "+
				"compiles a pipeline per prefill shape the first time it meets one (seconds each on a GPU), which would fail the first trial of a fresh server. "+
				"0 to %d; 0: no warm-up. Not with a `trace` workload (it has no synthetic prompts). "+
				"Unset, it is %d when `experiment.accelerator` is `vulkan` or `xpu` (the `experiment` of an `llmserve_inference_server` or `llmserve_inference_deployment` the provider launched there records it) and no workload replays a trace, else 0: "+
				"on those accelerators the engines build kernels on first use of a shape (llama.cpp's Vulkan backend a pipeline per prefill shape, SGLang and vLLM on XPU their Triton kernels and oneDNN primitives), "+
				"and a lent H200's fresh llama.cpp Vulkan server held 18 users with 16 warm-up requests at each level where it held none cold.", capacity.EngineWarmupMaxConcurrency, capacity.MaxRequests, capacity.EngineWarmupOnGPU),
		},
		"measured_requests": schema.Int64Attribute{
			Optional: true, Computed: true, Default: int64default.StaticInt64(int64(def.MeasuredRequests)),
			MarkdownDescription: fmt.Sprintf("Measured requests per trial, 1 to %d. Default %d.", capacity.MaxRequests, def.MeasuredRequests),
		},
		"confirmation_trials": schema.Int64Attribute{
			Optional: true, Computed: true, Default: int64default.StaticInt64(int64(def.ConfirmationTrials)),
			MarkdownDescription: fmt.Sprintf("Independent full trials on each side of the boundary; all must pass at the maximum passing concurrency. 1 to %d; default %d.", capacity.MaxConfirmationTrials, def.ConfirmationTrials),
		},
		// Optional without a default, as engine_warmup_requests: state written before it
		// existed reads it as null, which means the default.
		"comparison_budget": schema.Int64Attribute{
			Optional: true,
			MarkdownDescription: fmt.Sprintf("With a `baseline`: the most full trials a workload adds one at a time while its comparison is `inconclusive`, "+
				"beside the levels the comparison needs; 0 to %d, unset: %d. More cannot narrow the interval below what the baseline's own trials allow: "+
				"with 3 confirmation trials a side the comparison decides when repeated trials of the server spread by about 3 %% or less; "+
				"at 5 %% measure the baseline with `confirmation_trials = 5` (the \"Gate on change\" guide has the measured rates). "+
				"Changing it alone measures only the comparison again.", capacity.MaxComparisonBudget, compare.DefaultComparisonBudget),
		},
		"cache_flush": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString(def.CacheFlush),
			MarkdownDescription: "Prefix cache flush before every trial: `auto` (detect the server), `sglang` (`/flush_cache`), `vllm` (`/reset_prefix_cache`), `llamacpp` (`cache_prompt: false` per request) or `none`. Default `" + def.CacheFlush + "`.",
		},
		"stall_timeout": schema.StringAttribute{
			CustomType: durationType{},
			Optional:   true, Computed: true, Default: stringdefault.StaticString(def.StallTimeout.String()),
			MarkdownDescription: "A request fails as `stalled` when no byte of its response arrives for this long: not the headers, not a chunk, " +
				"not a keep-alive comment. A positive Go duration, e.g. `90s`. Default `" + def.StallTimeout.String() + "`: a 16K-token prefill takes seconds to tens of seconds on one accelerator, " +
				"and a request queued behind a full batch waits minutes at most at the concurrencies a search visits (probes past the boundary stop early), " +
				"so five silent minutes mean a stalled server, reported within ten minutes rather than at `timeouts.create`.",
		},
		"request_timeout": schema.StringAttribute{
			CustomType: durationType{},
			Optional:   true, Computed: true, Default: stringdefault.StaticString(def.RequestTimeout.String()),
			MarkdownDescription: "A request fails as `request_timeout` when it has not finished this long after it was sent, however steadily it streams. " +
				"A positive Go duration. Default `" + def.RequestTimeout.String() + "`: 2K output tokens at a slow 200 ms per token under load take about 7 minutes, plus the stall allowance " +
				"for the first token; 30 minutes leaves room for slower hardware while a stuck request cannot hold an apply for hours.",
		},
	}
}
