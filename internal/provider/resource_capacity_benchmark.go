package provider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

var (
	_ resource.Resource                   = (*capacityBenchmarkResource)(nil)
	_ resource.ResourceWithConfigure      = (*capacityBenchmarkResource)(nil)
	_ resource.ResourceWithValidateConfig = (*capacityBenchmarkResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*capacityBenchmarkResource)(nil)
)

// defaultBenchmarkTimeout is generous because the reference trials took up to 13 minutes each.
const defaultBenchmarkTimeout = 24 * time.Hour

// NewCapacityBenchmarkResource is the llmserve_capacity_benchmark constructor.
func NewCapacityBenchmarkResource() resource.Resource { return &capacityBenchmarkResource{} }

type capacityBenchmarkResource struct {
	data *providerData
}

type capacityBenchmarkModel struct {
	ID           types.String   `tfsdk:"id"`
	Endpoint     types.String   `tfsdk:"endpoint"`
	Model        types.String   `tfsdk:"model"`
	API          types.String   `tfsdk:"api"`
	APIKey       types.String   `tfsdk:"api_key"`
	AdminAPIKey  types.String   `tfsdk:"admin_api_key"`
	Workloads    types.List     `tfsdk:"workloads"`
	SLOs         types.List     `tfsdk:"slos"`
	Search       types.Object   `tfsdk:"search"`
	Trial        types.Object   `tfsdk:"trial"`
	Triggers     types.Map      `tfsdk:"triggers"`
	Experiment   types.Object   `tfsdk:"experiment"`
	ProgressFile types.String   `tfsdk:"progress_file"`
	RecordsDir   types.String   `tfsdk:"records_directory"`
	ChunkTimes   types.Bool     `tfsdk:"record_chunk_times"`
	Timeouts     timeouts.Value `tfsdk:"timeouts"`

	MaximumPassingConcurrency types.Map    `tfsdk:"maximum_passing_concurrency"`
	FirstFailingConcurrency   types.Map    `tfsdk:"first_failing_concurrency"`
	CapacityBoundedBySearch   types.Map    `tfsdk:"capacity_bounded_by_search"`
	WorkloadResults           types.List   `tfsdk:"workload_results"`
	ResultsJSON               types.String `tfsdk:"results_json"`
}

type workloadModel struct {
	Label              types.String  `tfsdk:"label"`
	InputTokens        types.Int64   `tfsdk:"input_tokens"`
	OutputTokens       types.Int64   `tfsdk:"output_tokens"`
	InputTokensStddev  types.Float64 `tfsdk:"input_tokens_stddev"`
	OutputTokensStddev types.Float64 `tfsdk:"output_tokens_stddev"`
	SharedPrefixTokens types.Int64   `tfsdk:"shared_prefix_tokens"`
}

type searchModel struct {
	MinConcurrency    types.Int64 `tfsdk:"min_concurrency"`
	MaxConcurrency    types.Int64 `tfsdk:"max_concurrency"`
	ConcurrencyLevels types.List  `tfsdk:"concurrency_levels"`
}

type trialModel struct {
	WarmupRequests     types.Int64  `tfsdk:"warmup_requests"`
	MeasuredRequests   types.Int64  `tfsdk:"measured_requests"`
	ConfirmationTrials types.Int64  `tfsdk:"confirmation_trials"`
	CacheFlush         types.String `tfsdk:"cache_flush"`
	StallTimeout       types.String `tfsdk:"stall_timeout"`
	RequestTimeout     types.String `tfsdk:"request_timeout"`
}

var (
	searchAttrTypes = map[string]attr.Type{
		"min_concurrency":    types.Int64Type,
		"max_concurrency":    types.Int64Type,
		"concurrency_levels": types.ListType{ElemType: types.Int64Type},
	}
	trialAttrTypes = map[string]attr.Type{
		"warmup_requests":     types.Int64Type,
		"measured_requests":   types.Int64Type,
		"confirmation_trials": types.Int64Type,
		"cache_flush":         types.StringType,
		"stall_timeout":       types.StringType,
		"request_timeout":     types.StringType,
	}
)

func (r *capacityBenchmarkResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_capacity_benchmark"
}

func (r *capacityBenchmarkResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
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
				Validators:          []validator.String{endpointValidator{}},
				PlanModifiers:       replace,
			},
			"model": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Model name sent in every request (as listed by the server's `/v1/models`).",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1), printableValidator{}},
				PlanModifiers:       replace,
			},
			"api": schema.StringAttribute{
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString("chat"),
				MarkdownDescription: "`chat` (`/v1/chat/completions`, the server applies its chat template) or `completions` (`/v1/completions`). Default `chat`.",
				Validators:          []validator.String{stringvalidator.OneOf("chat", "completions")},
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
			},
			"workloads": schema.ListNestedAttribute{
				Required:            true,
				MarkdownDescription: "Input/output shapes to find the boundary for. Labels key the result maps.",
				Validators:          []validator.List{listvalidator.SizeAtLeast(1)},
				PlanModifiers:       []planmodifier.List{listplanmodifier.RequiresReplace()},
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"label": schema.StringAttribute{
						Required:            true,
						MarkdownDescription: "Unique name of the workload, e.g. `8K / 1K`.",
						Validators:          []validator.String{stringvalidator.LengthAtLeast(1), printableValidator{}},
					},
					"input_tokens": schema.Int64Attribute{
						Required:            true,
						MarkdownDescription: fmt.Sprintf("Prompt length in tokens, not counting the server's chat template; 1 to %d (1 Mi).", capacity.MaxTokens),
						Validators:          []validator.Int64{intRange{min: 1, max: capacity.MaxTokens}},
					},
					"output_tokens": schema.Int64Attribute{
						Required:            true,
						MarkdownDescription: fmt.Sprintf("Tokens generated per request (`max_tokens` with `ignore_eos`); 1 to %d (1 Mi).", capacity.MaxTokens),
						Validators:          []validator.Int64{intRange{min: 1, max: capacity.MaxTokens}},
					},
					"input_tokens_stddev": schema.Float64Attribute{
						Optional: true,
						MarkdownDescription: "Spread of the prompt length: each request's `input_tokens` is drawn from a normal distribution " +
							"with this standard deviation (seeded, rounded, clipped at 1), as AIPerf's `--synthetic-input-tokens-stddev`. " +
							"Default 0: every prompt the same length.",
						Validators: []validator.Float64{float64validator.AtLeast(0)},
					},
					"output_tokens_stddev": schema.Float64Attribute{
						Optional: true,
						MarkdownDescription: "Spread of the output length (`max_tokens`), drawn like `input_tokens_stddev`, as AIPerf's " +
							"`--output-tokens-stddev`. Output length mismatches are then judged against each request's own length. Default 0.",
						Validators: []validator.Float64{float64validator.AtLeast(0)},
					},
					"shared_prefix_tokens": schema.Int64Attribute{
						Optional: true,
						MarkdownDescription: "Tokens at the start of every prompt that are the same text for all requests (a common system " +
							"prompt, the realistic chat case), counted within `input_tokens`. The cache is still flushed before every trial, " +
							"so the prefix is computed once per trial and served from the prefix cache after that: expected cache hits, " +
							"not a measurement error. Default 0: nothing shared.",
						Validators: []validator.Int64{int64validator.AtLeast(0)},
					},
				}},
			},
			"slos": sloListAttribute(),
			"search": schema.SingleNestedAttribute{
				Optional:            true,
				Computed:            true,
				MarkdownDescription: "Concurrency bounds of the search (default 1 to 64), or a plain grid of levels.",
				Default: objectdefault.StaticValue(types.ObjectValueMust(searchAttrTypes, map[string]attr.Value{
					"min_concurrency":    types.Int64Value(1),
					"max_concurrency":    types.Int64Value(64),
					"concurrency_levels": types.ListNull(types.Int64Type),
				})),
				PlanModifiers: []planmodifier.Object{objectplanmodifier.RequiresReplace()},
				Attributes: map[string]schema.Attribute{
					"min_concurrency": schema.Int64Attribute{
						Optional: true, Computed: true, Default: int64default.StaticInt64(1),
						MarkdownDescription: fmt.Sprintf("Lowest concurrency tried, 1 to %d. Default 1.", capacity.MaxConcurrency),
						Validators:          []validator.Int64{intRange{min: 1, max: capacity.MaxConcurrency}},
					},
					"max_concurrency": schema.Int64Attribute{
						Optional: true, Computed: true, Default: int64default.StaticInt64(64),
						MarkdownDescription: fmt.Sprintf("Highest concurrency tried, 1 to %d. Default 64.", capacity.MaxConcurrency),
						Validators:          []validator.Int64{intRange{min: 1, max: capacity.MaxConcurrency}},
					},
					"concurrency_levels": schema.ListAttribute{
						Optional:    true,
						ElementType: types.Int64Type,
						MarkdownDescription: "A plain grid instead of the adaptive search: exactly these concurrencies, each with " +
							"`trial.confirmation_trials` full trials (no probes, nothing stopped early), all reported in `results_json`; " +
							"the boundary is the first failing level and the level before it. For a full curve, or to reproduce a " +
							"published table. Replaces `min_concurrency`/`max_concurrency`, which must then be left unset. " +
							fmt.Sprintf("Each level 1 to %d.", capacity.MaxConcurrency),
						Validators: []validator.List{
							listvalidator.SizeAtLeast(1),
							listvalidator.UniqueValues(),
							listvalidator.ValueInt64sAre(intRange{min: 1, max: capacity.MaxConcurrency}),
						},
					},
				},
			},
			"trial": schema.SingleNestedAttribute{
				Optional:            true,
				Computed:            true,
				MarkdownDescription: "Shape of every trial. Defaults match the reference AIPerf protocol: 8 warmups, 64 measured requests, 3 confirmation trials, cache flushed.",
				Default: objectdefault.StaticValue(types.ObjectValueMust(trialAttrTypes, map[string]attr.Value{
					"warmup_requests":     types.Int64Value(8),
					"measured_requests":   types.Int64Value(64),
					"confirmation_trials": types.Int64Value(3),
					"cache_flush":         types.StringValue("auto"),
					"stall_timeout":       types.StringValue(load.DefaultStallTimeout.String()),
					"request_timeout":     types.StringValue(load.DefaultRequestTimeout.String()),
				})),
				PlanModifiers: []planmodifier.Object{objectplanmodifier.RequiresReplace()},
				Attributes: map[string]schema.Attribute{
					"warmup_requests": schema.Int64Attribute{
						Optional: true, Computed: true, Default: int64default.StaticInt64(8),
						MarkdownDescription: fmt.Sprintf("Requests sent before each trial's measured requests, not measured; 0 to %d. Default 8.", capacity.MaxRequests),
						Validators:          []validator.Int64{intRange{min: 0, max: capacity.MaxRequests}},
					},
					"measured_requests": schema.Int64Attribute{
						Optional: true, Computed: true, Default: int64default.StaticInt64(64),
						MarkdownDescription: fmt.Sprintf("Measured requests per trial, 1 to %d. Default 64.", capacity.MaxRequests),
						Validators:          []validator.Int64{intRange{min: 1, max: capacity.MaxRequests}},
					},
					"confirmation_trials": schema.Int64Attribute{
						Optional: true, Computed: true, Default: int64default.StaticInt64(3),
						MarkdownDescription: fmt.Sprintf("Independent full trials on each side of the boundary; all must pass at the maximum passing concurrency. 1 to %d; default 3.", capacity.MaxConfirmationTrials),
						Validators:          []validator.Int64{intRange{min: 1, max: capacity.MaxConfirmationTrials}},
					},
					"cache_flush": schema.StringAttribute{
						Optional: true, Computed: true, Default: stringdefault.StaticString("auto"),
						MarkdownDescription: "Prefix cache flush before every trial: `auto` (detect the server), `sglang` (`/flush_cache`), `vllm` (`/reset_prefix_cache`), `llamacpp` (`cache_prompt: false` per request) or `none`.",
						Validators:          []validator.String{stringvalidator.OneOf("auto", "none", "sglang", "vllm", "llamacpp")},
					},
					"stall_timeout": schema.StringAttribute{
						Optional: true, Computed: true, Default: stringdefault.StaticString(load.DefaultStallTimeout.String()),
						MarkdownDescription: "A request fails as `stalled` when no byte of its response arrives for this long: not the headers, not a chunk, " +
							"not a keep-alive comment. Go duration, e.g. `90s`. Default `5m0s`: a 16K-token prefill takes seconds to tens of seconds on one accelerator, " +
							"and a request queued behind a full batch waits minutes at most at the concurrencies a search visits (probes past the boundary stop early), " +
							"so five silent minutes mean a stalled server, reported within ten minutes rather than at `timeouts.create`.",
						Validators: []validator.String{durationValidator{}},
					},
					"request_timeout": schema.StringAttribute{
						Optional: true, Computed: true, Default: stringdefault.StaticString(load.DefaultRequestTimeout.String()),
						MarkdownDescription: "A request fails as `request_timeout` when it has not finished this long after it was sent, however steadily it streams. " +
							"Go duration. Default `30m0s`: 2K output tokens at a slow 200 ms per token under load take about 7 minutes, plus the stall allowance " +
							"for the first token; 30 minutes leaves room for slower hardware while a stuck request cannot hold an apply for hours.",
						Validators: []validator.String{durationValidator{}},
					},
				},
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
				MarkdownDescription: "Path of a file to append one JSON line per finished trial (workload, concurrency, kind, verdict, metric value), " +
					"so `tail -f` shows a long run. Trials recorded there for the same configuration are reused when an interrupted run is applied again. " +
					"Must be a file path: not empty (omit the attribute for no journal) and not a directory.",
			},
			"records_directory": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Directory to write per-request records to: one JSONL file per trial (probes included), one line per " +
					"request, warmups flagged, with its timestamps (Unix ns), chunk count, token counts, finish reason, HTTP status and " +
					"error. Each trial in `results_json` names its file (`records_file`, relative to this directory) and `records_sha256`. " +
					"`go run ./cmd/llmserve-recompute -results result.json -records <dir> -check` recomputes every trial's metrics from " +
					"them, bit for bit. Changing it re-runs the benchmark (the files belong to the run).",
				Validators:    []validator.String{stringvalidator.LengthAtLeast(1), printableValidator{}},
				PlanModifiers: replace,
			},
			"record_chunk_times": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "With `records_directory`, also record each content chunk's arrival after the request was sent " +
					"(`chunk_offsets_ns`): about 10 bytes per streamed chunk on disk (a records file is about 420 KiB per 1 000 requests without them, 5.3 MiB with them at 512 chunks per request). Default `false`.",
				PlanModifiers: []planmodifier.Bool{boolplanmodifier.RequiresReplace()},
			},
			"timeouts": positiveTimeouts(ctx, timeouts.Opts{
				Create:            true,
				CreateDescription: "How long the whole benchmark may run, as a Go duration (`\"90m\"`, `\"36h\"`). Default `24h`; must be positive.",
			}),

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

func (r *capacityBenchmarkResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if req.ProviderData == nil {
		return
	}
	data, ok := req.ProviderData.(*providerData)
	if !ok {
		resp.Diagnostics.AddError("Unexpected provider data",
			fmt.Sprintf("Expected *providerData, got %T. This is a bug in the provider; please report it.", req.ProviderData))
		return
	}
	r.data = data
}

// ValidateConfig catches what single-attribute validators cannot: duplicate labels and
// inverted search bounds. Unknown values (from other resources) are checked at apply.
func (r *capacityBenchmarkResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var workloads types.List
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("workloads"), &workloads)...)
	if !workloads.IsNull() && !workloads.IsUnknown() {
		// Elements may be unknown objects (built from another resource's attributes).
		var items []types.Object
		resp.Diagnostics.Append(workloads.ElementsAs(ctx, &items, false)...)
		seen := map[string]int{}
		for i, obj := range items {
			if obj.IsNull() || obj.IsUnknown() {
				continue
			}
			var w workloadModel
			resp.Diagnostics.Append(obj.As(ctx, &w, basetypes.ObjectAsOptions{UnhandledUnknownAsEmpty: true})...)
			validateWorkloadShape(path.Root("workloads").AtListIndex(i), w, &resp.Diagnostics)
			if w.Label.IsNull() || w.Label.IsUnknown() {
				continue
			}
			if first, dup := seen[w.Label.ValueString()]; dup {
				resp.Diagnostics.AddAttributeError(path.Root("workloads").AtListIndex(i).AtName("label"), "Duplicate workload label",
					fmt.Sprintf("workloads[%d].label: the label %q is already used by workloads[%d]. Labels key maximum_passing_concurrency and first_failing_concurrency, so each must be unique; rename one.", i, w.Label.ValueString(), first))
				continue
			}
			seen[w.Label.ValueString()] = i
		}
	}

	var slos types.List
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("slos"), &slos)...)
	if !slos.IsNull() && !slos.IsUnknown() {
		var items []types.Object
		resp.Diagnostics.Append(slos.ElementsAs(ctx, &items, false)...)
		for i, obj := range items {
			if obj.IsNull() || obj.IsUnknown() {
				continue
			}
			var o sloModel
			resp.Diagnostics.Append(obj.As(ctx, &o, basetypes.ObjectAsOptions{UnhandledUnknownAsEmpty: true})...)
			resp.Diagnostics.Append(sloUnitSlips(path.Root("slos").AtListIndex(i), o)...)
		}
	}

	var minC, maxC types.Int64
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("search").AtName("min_concurrency"), &minC)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("search").AtName("max_concurrency"), &maxC)...)
	lo, hi := int64(1), int64(64)
	if !minC.IsNull() && !minC.IsUnknown() {
		lo = minC.ValueInt64()
	}
	if !maxC.IsNull() && !maxC.IsUnknown() {
		hi = maxC.ValueInt64()
	}
	validateSLOsConfig(ctx, req.Config, &resp.Diagnostics)
	var recordsDir types.String
	var chunkTimes types.Bool
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("records_directory"), &recordsDir)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("record_chunk_times"), &chunkTimes)...)
	if chunkTimes.ValueBool() && recordsDir.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("record_chunk_times"), "Chunk times without records",
			"record_chunk_times adds chunk arrival times to the per-request records, which are only written with records_directory; set records_directory or remove record_chunk_times.")
	}
	var levels types.List
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("search").AtName("concurrency_levels"), &levels)...)
	if !levels.IsNull() && (!minC.IsNull() || !maxC.IsNull()) {
		resp.Diagnostics.AddAttributeError(path.Root("search").AtName("concurrency_levels"), "Grid and search bounds both set",
			"search.concurrency_levels runs exactly the listed levels, so search.min_concurrency and search.max_concurrency would be ignored; remove them, or remove concurrency_levels to search between them.")
		return
	}
	if minC.IsUnknown() || maxC.IsUnknown() {
		return
	}
	if lo > hi {
		resp.Diagnostics.AddAttributeError(path.Root("search").AtName("min_concurrency"), "Search bounds inverted",
			fmt.Sprintf("search.min_concurrency (%d) is greater than search.max_concurrency (%d); lower min_concurrency or raise max_concurrency.", lo, hi))
	}
}

// labelKeyedPlan is appended to the descriptions of the maps ModifyPlan plans by label.
const labelKeyedPlan = " Planned with one key per configured workload label (values known after apply), so a " +
	"misspelt label in a `postcondition` or `check` fails at plan, before any load is sent."

// ModifyPlan plans the per-label result maps with their keys, the configured labels, and
// unknown values: `self.maximum_passing_concurrency["typo"]` then fails at plan instead of
// after hours of load. Only a new measurement is planned this way; an in-place update keeps
// the stored result (UseStateForUnknown).
func (r *capacityBenchmarkResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || !req.State.Raw.IsNull() {
		return
	}
	var workloads types.List
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("workloads"), &workloads)...)
	if resp.Diagnostics.HasError() || workloads.IsNull() || workloads.IsUnknown() {
		return
	}
	var items []types.Object
	resp.Diagnostics.Append(workloads.ElementsAs(ctx, &items, false)...)
	if resp.Diagnostics.HasError() {
		return
	}
	labels := make([]string, 0, len(items))
	for _, obj := range items {
		if obj.IsNull() || obj.IsUnknown() {
			return
		}
		label, ok := obj.Attributes()["label"].(types.String)
		if !ok || label.IsNull() || label.IsUnknown() {
			return // a label known only at apply: the maps stay wholly unknown
		}
		labels = append(labels, label.ValueString())
	}
	for name, elem := range map[string]attr.Type{
		"maximum_passing_concurrency": types.Int64Type,
		"first_failing_concurrency":   types.Int64Type,
		"capacity_bounded_by_search":  types.BoolType,
	} {
		values := make(map[string]attr.Value, len(labels))
		for _, l := range labels {
			values[l] = unknownOf(elem)
		}
		m, d := types.MapValue(elem, values)
		resp.Diagnostics.Append(d...)
		if d.HasError() {
			return
		}
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root(name), m)...)
	}
}

func unknownOf(t attr.Type) attr.Value {
	if t == types.BoolType {
		return types.BoolUnknown()
	}
	return types.Int64Unknown()
}

// sloUnitSlips warns about values that are valid but almost certainly a slip of units, with
// the likely intent: a percentile written as a fraction, a latency threshold written in
// seconds. Both would otherwise measure for hours against an objective nobody meant.
func sloUnitSlips(p path.Path, o sloModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if pct := o.Percentile; !pct.IsNull() && !pct.IsUnknown() && pct.ValueFloat64() > 0 && pct.ValueFloat64() < 1 {
		v := pct.ValueFloat64()
		diags.AddAttributeWarning(p.AtName("percentile"), "Percentile below 1",
			fmt.Sprintf("percentile = %g asks for p%g, almost the fastest request of each trial: percentiles are on a 0-100 scale. Did you mean %g (p%g)?", v, v, v*100, v*100))
	}
	metric := o.Metric.ValueString()
	if o.Metric.IsNull() {
		metric = results.MetricTTFT // the attribute's default
	}
	if th := o.ThresholdMs; !th.IsNull() && !th.IsUnknown() && th.ValueFloat64() > 0 && th.ValueFloat64() < 50 &&
		(metric == results.MetricTTFT || metric == results.MetricRequestLatency) {
		v := th.ValueFloat64()
		diags.AddAttributeWarning(p.AtName("threshold_ms"), "Latency threshold below 50 ms",
			fmt.Sprintf("threshold_ms = %g demands a %s under %g ms: thresholds are in milliseconds. Did you mean %g s (threshold_ms = %g)?", v, strings.ReplaceAll(metric, "_", " "), v, v, v*1000))
	}
	return diags
}

func (r *capacityBenchmarkResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan capacityBenchmarkModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	var apiKey, adminKey types.String
	// Write-only values are only in the config, never in the plan.
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("api_key"), &apiKey)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("admin_api_key"), &adminKey)...)
	if resp.Diagnostics.HasError() {
		return
	}

	timeout, diags := plan.Timeouts.Create(ctx, defaultBenchmarkTimeout)
	resp.Diagnostics.Append(diags...)
	cfg, diags := plan.capacityConfig(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	cfg.APIKey, cfg.AdminAPIKey = apiKey.ValueString(), adminKey.ValueString()
	if exp := cfg.Experiment; exp != nil && exp.Replicas > 1 && cfg.CacheFlush != "none" && cfg.CacheFlush != "llamacpp" {
		resp.Diagnostics.AddAttributeWarning(path.Root("trial").AtName("cache_flush"), "Cache flush reaches one replica",
			fmt.Sprintf("The endpoint serves %d replicas behind one Service. A flush by endpoint (SGLang /flush_cache, vLLM /reset_prefix_cache) "+
				"reaches only the replica the Service picks, so the others may keep warm prefix caches between trials; the provider cannot flush each pod "+
				"through a Service. llama.cpp is unaffected (cache_prompt: false on every request). Use one replica to measure without prefix-cache reuse.", exp.Replicas))
	}
	if r.data != nil {
		cfg.ToolVersion = r.data.version
	}

	journal, err := capacity.OpenJournal(plan.ProgressFile.ValueString(), cfg)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("progress_file"), "Cannot use progress file", err.Error())
		return
	}
	defer journal.Close()
	cfg.History = journal.History()
	var failures []string
	cfg.Progress = func(t capacity.TrialRecord) {
		tflog.Info(ctx, "trial finished", t.LogFields())
		if line := t.FailureLine(); line != "" {
			failures = append(failures, line)
		}
		if err := journal.Append(t); err != nil {
			tflog.Warn(ctx, "cannot append to progress file", map[string]any{"error": err.Error()})
		}
	}

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	doc, err := capacity.Run(ctx, cfg)
	if len(failures) > 0 {
		resp.Diagnostics.AddWarning("Requests failed during the capacity benchmark", failureWarning(failures))
	}
	if err != nil {
		detail := err.Error()
		if plan.ProgressFile.ValueString() != "" {
			detail += fmt.Sprintf("\n\nEvery finished trial is kept in %s; applying again with the same configuration resumes from there.", plan.ProgressFile.ValueString())
		}
		resp.Diagnostics.AddError("Capacity benchmark failed", detail)
		return
	}

	resp.Diagnostics.Append(plan.setResults(ctx, doc)...)
	if resp.Diagnostics.HasError() {
		return
	}
	for _, w := range doc.Workloads {
		if w.SearchBound() != results.BoundNone {
			resp.Diagnostics.AddAttributeWarning(path.Root("capacity_bounded_by_search").AtMapKey(w.Label),
				fmt.Sprintf("Capacity of workload %q is bounded by the search", w.Label),
				fmt.Sprintf("Workload %q: %s. maximum_passing_concurrency and first_failing_concurrency are the edge of the search, not the capacity; capacity_bounded_by_search[%q] is true.", w.Label, capacity.BoundNote(w, len(cfg.ConcurrencyLevels) > 0), w.Label))
		}
	}
	if warm := capacity.WarmCacheTrials(doc); len(warm) > 0 {
		resp.Diagnostics.AddWarning("Prompts were served from a cache that should have been cold",
			fmt.Sprintf("With cache_flush = %q, the server reported cached prompt tokens beyond the prefix all prompts share in %s. "+
				"The flush did not take effect, so those trials' latencies are too low and the capacity may be too high; "+
				"each trial's note in results_json says more. Check that the server honours the flush (vLLM: VLLM_SERVER_DEV_MODE=1; SGLang: admin_api_key) and apply again.",
				cfg.CacheFlush, strings.Join(warm, "; ")))
	}
	if err := journal.Complete(); err != nil {
		tflog.Warn(ctx, "cannot mark the run complete in the progress file", map[string]any{"error": err.Error()})
	}
	plan.ID = types.StringValue(randomID())
	plan.APIKey, plan.AdminAPIKey = types.StringNull(), types.StringNull()
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// Read keeps the stored result: a benchmark measures a moment, there is nothing remote to refresh.
func (r *capacityBenchmarkResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state capacityBenchmarkModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Update only happens for attributes that do not re-run the benchmark (progress_file, timeouts, api_key).
func (r *capacityBenchmarkResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state capacityBenchmarkModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	state.ProgressFile = plan.ProgressFile
	state.Timeouts = plan.Timeouts
	state.APIKey, state.AdminAPIKey = types.StringNull(), types.StringNull()
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Delete only forgets the result; the server is left as it is.
func (r *capacityBenchmarkResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {
}

// capacityConfig translates the planned values into the domain configuration.
func (m capacityBenchmarkModel) capacityConfig(ctx context.Context) (capacity.Config, diag.Diagnostics) {
	var diags diag.Diagnostics
	var workloads []workloadModel
	var slos []sloModel
	var search searchModel
	var trial trialModel
	diags.Append(m.Workloads.ElementsAs(ctx, &workloads, false)...)
	diags.Append(m.SLOs.ElementsAs(ctx, &slos, false)...)
	diags.Append(m.Search.As(ctx, &search, basetypes.ObjectAsOptions{})...)
	diags.Append(m.Trial.As(ctx, &trial, basetypes.ObjectAsOptions{})...)
	if diags.HasError() {
		return capacity.Config{}, diags
	}
	// Validated at plan time; unknown or null values fall back to the defaults (zero).
	stall, _ := time.ParseDuration(trial.StallTimeout.ValueString())
	total, _ := time.ParseDuration(trial.RequestTimeout.ValueString())
	cfg := capacity.Config{
		StallTimeout:       stall,
		RequestTimeout:     total,
		Endpoint:           m.Endpoint.ValueString(),
		Model:              m.Model.ValueString(),
		API:                m.API.ValueString(),
		MinConcurrency:     int(search.MinConcurrency.ValueInt64()),
		MaxConcurrency:     int(search.MaxConcurrency.ValueInt64()),
		ConcurrencyLevels:  levelsOf(ctx, search.ConcurrencyLevels, &diags),
		WarmupRequests:     int(trial.WarmupRequests.ValueInt64()),
		MeasuredRequests:   int(trial.MeasuredRequests.ValueInt64()),
		ConfirmationTrials: int(trial.ConfirmationTrials.ValueInt64()),
		CacheFlush:         trial.CacheFlush.ValueString(),
		RecordsDirectory:   m.RecordsDir.ValueString(),
		RecordChunkTimes:   m.ChunkTimes.ValueBool(),
		Seed:               1,
	}
	for _, s := range slos {
		cfg.SLOs = append(cfg.SLOs, s.domain())
	}
	for _, w := range workloads {
		cfg.Workloads = append(cfg.Workloads, capacity.Workload{
			Label:              w.Label.ValueString(),
			InputTokens:        int(w.InputTokens.ValueInt64()),
			OutputTokens:       int(w.OutputTokens.ValueInt64()),
			InputTokensStddev:  w.InputTokensStddev.ValueFloat64(),
			OutputTokensStddev: w.OutputTokensStddev.ValueFloat64(),
			SharedPrefixTokens: int(w.SharedPrefixTokens.ValueInt64()),
		})
	}
	exp, d := experimentFromObject(ctx, m.Experiment)
	diags.Append(d...)
	cfg.Experiment = exp
	if !m.Triggers.IsNull() && !m.Triggers.IsUnknown() {
		// A changed trigger is a new measurement, never a replay (capacity keys the journal by it).
		diags.Append(m.Triggers.ElementsAs(ctx, &cfg.Triggers, false)...)
	}
	if err := cfg.Validate(); err != nil {
		diags.AddError("Invalid capacity benchmark configuration", err.Error())
	}
	return cfg, diags
}

// setResults fills the computed attributes from the results document.
func (m *capacityBenchmarkModel) setResults(ctx context.Context, doc *results.Document) diag.Diagnostics {
	var diags diag.Diagnostics
	raw, err := results.Marshal(doc)
	if err != nil {
		diags.AddError("Cannot encode results", err.Error())
		return diags
	}
	m.ResultsJSON = types.StringValue(string(raw))
	var d diag.Diagnostics
	m.MaximumPassingConcurrency, m.FirstFailingConcurrency, m.CapacityBoundedBySearch, d = boundaryMaps(doc)
	diags.Append(d...)
	m.WorkloadResults, d = workloadResultsValue(ctx, doc)
	diags.Append(d...)
	return diags
}

// validateWorkloadShape checks what one attribute cannot: a shared prefix is part of the
// prompt, so it must be shorter than input_tokens, and a spread wider than its mean length
// would clip most draws at 1.
func validateWorkloadShape(p path.Path, w workloadModel, diags *diag.Diagnostics) {
	in, out := w.InputTokens, w.OutputTokens
	if pre := w.SharedPrefixTokens; !pre.IsNull() && !pre.IsUnknown() && !in.IsNull() && !in.IsUnknown() && pre.ValueInt64() >= in.ValueInt64() {
		diags.AddAttributeError(p.AtName("shared_prefix_tokens"), "Shared prefix as long as the prompt",
			fmt.Sprintf("shared_prefix_tokens (%d) counts within input_tokens (%d) and must be below it, leaving each prompt a part of its own; lower shared_prefix_tokens or raise input_tokens.",
				pre.ValueInt64(), in.ValueInt64()))
	}
	for _, sd := range []struct {
		name string
		v    types.Float64
		mean types.Int64
	}{{"input_tokens_stddev", w.InputTokensStddev, in}, {"output_tokens_stddev", w.OutputTokensStddev, out}} {
		if sd.v.IsNull() || sd.v.IsUnknown() || sd.mean.IsNull() || sd.mean.IsUnknown() {
			continue
		}
		if sd.v.ValueFloat64() > float64(sd.mean.ValueInt64()) {
			diags.AddAttributeError(p.AtName(sd.name), "Length spread wider than the length",
				fmt.Sprintf("%s (%g) is above the mean length (%d): most draws would be clipped at 1 token; give at most the mean.", sd.name, sd.v.ValueFloat64(), sd.mean.ValueInt64()))
		}
	}
}

// levelsOf reads search.concurrency_levels; nil when unset.
func levelsOf(ctx context.Context, l types.List, diags *diag.Diagnostics) []int {
	if l.IsNull() || l.IsUnknown() {
		return nil
	}
	var vs []int64
	diags.Append(l.ElementsAs(ctx, &vs, false)...)
	out := make([]int, len(vs))
	for i, v := range vs {
		out[i] = int(v)
	}
	return out
}

// failureWarning lists the trials with failed requests, a screenful at most.
func failureWarning(lines []string) string {
	const shown = 10
	var b strings.Builder
	fmt.Fprintf(&b, "%d trials had failed measured requests. Each failed request fails its trial (a user who got an error did not get the SLO), "+
		"so these trials count as failing; their error summaries are in results_json and workload_results.\n", len(lines))
	for i, l := range lines {
		if i == shown {
			fmt.Fprintf(&b, "\n... and %d more (see the progress file or the provider's log)", len(lines)-shown)
			break
		}
		b.WriteString("\n- " + l)
	}
	return b.String()
}

func randomID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
