package provider

import (
	"context"
	"fmt"
	"math"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/compare"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

var _ function.Function = compareFunction{}

// NewCompareFunction compares a capacity result with a baseline result.
func NewCompareFunction() function.Function { return compareFunction{} }

type compareFunction struct{}

func (compareFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "compare"
}

// descCompareMethod is the method in a paragraph, shared by the function and the data source.
const descCompareMethod = "Per workload present in both documents it returns both capacities and their difference, " +
	"each objective's value at the levels both runs measured in full (concurrencies; for an open-loop search the offered " +
	"request rates, for a replay the speed-ups: each workload on its own `axis`), and a verdict: `regressed`, `improved`, " +
	"`unchanged` or `inconclusive`. At every common level the change of the objective's value (in log terms, so a " +
	"relative change) is pooled over the levels, with its noise from the trials themselves (the spread of repeated " +
	"confirmation trials at a level, pooled over both runs; a bootstrap over per-request records where the data source " +
	"is given them; the levels' own scatter where it is significantly larger) and a confidence interval (Student's t at " +
	"a two-sided 5 %, split over the objectives). `regressed` (or `improved`): the change is beyond the noise and at " +
	"least 5 %. `unchanged` is a finding, not the absence of one: the interval lies inside ±10 %. Anything else is " +
	"`inconclusive`, and the workload's `notes` say what would decide it (more confirmation trials, more " +
	"`measured_requests`, a quieter host). A maximum passing level that moved by more than one of the levels the runs " +
	"tried is never `unchanged`: down where the current run failed a level the baseline passed in every confirmation " +
	"trial is `regressed` whatever the common levels show; without such a contradiction, `inconclusive`. Without any " +
	"level measured by both runs the boundaries decide the same way, and nothing else can be told (`inconclusive`). " +
	"Documents whose protocols differ (other objectives, measured requests per trial, arrival pattern, model, " +
	"engine image, hardware) are not compared: `comparable` is false, `refused` says why and every verdict is " +
	"`incomparable`; so are documents of which only one recorded its model, engine image or hardware, unless you say " +
	"they measured the same setup (`same_setup`); a workload whose lengths or axis differ is `incomparable` on its own. " +
	"Differences that leave the numbers comparable (threshold, warmups, engine warm-up, confirmation trials, cache " +
	"policy, a model named differently that is the same file) are listed in `flagged`. The result is the same for the same documents, " +
	"whatever order they list their workloads and trials in. The \"Gate on change\" guide describes the method and " +
	"its measured rates."

func (compareFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	doc := "A schema v1 results document as a JSON string, for example `file(\"baseline.json\")` or " +
		"`llmserve_capacity_benchmark.example.results_json`."
	resp.Definition = function.Definition{
		Summary:             "Compare a capacity result with a baseline result",
		MarkdownDescription: "Compares `current_json` with `baseline_json`. " + descCompareMethod,
		Parameters: []function.Parameter{
			function.StringParameter{Name: "baseline_json", MarkdownDescription: "The baseline: " + doc},
			function.StringParameter{Name: "current_json", MarkdownDescription: "The candidate: " + doc},
		},
		VariadicParameter: function.ObjectParameter{Name: "options", AttributeTypes: compareOptionTypes,
			MarkdownDescription: "At most one object: `{ same_setup = true }` says both documents measured the same model, " +
				"engine and hardware, so a setup one of them did not record (or records differently) is flagged, " +
				"not refused. Without it such documents are not compared: a document that recorded nothing may have " +
				"measured anything."},
		Return: function.ObjectReturn{AttributeTypes: comparisonAttrTypes},
	}
}

func (compareFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var baseline, current string
	var options []compareOptions
	resp.Error = function.ConcatFuncErrors(req.Arguments.Get(ctx, &baseline, &current, &options))
	if resp.Error != nil {
		return
	}
	if len(options) > 1 {
		resp.Error = function.NewArgumentFuncError(3, fmt.Sprintf("At most one options object, got %d: merge them into one { same_setup = ... }", len(options)))
		return
	}
	var o compare.Options
	if len(options) == 1 {
		o.SameSetup = options[0].SameSetup.ValueBool()
	}
	docs := make([]*results.Document, 2)
	for i, s := range []string{baseline, current} {
		d, err := results.Parse([]byte(s))
		if err != nil {
			name := [...]string{"baseline_json", "current_json"}[i]
			resp.Error = function.NewArgumentFuncError(int64(i), fmt.Sprintf("The %s argument is not a schema v1 results document: %v", name, err))
			return
		}
		docs[i] = d
	}
	v := comparisonValue(compare.Compare(docs[0], docs[1], o))
	resp.Error = function.ConcatFuncErrors(resp.Result.Set(ctx, v))
}

// compareOptions is compare()'s optional last argument.
type compareOptions struct {
	SameSetup types.Bool `tfsdk:"same_setup"`
}

var compareOptionTypes = map[string]attr.Type{"same_setup": types.BoolType}

var (
	comparisonLevelType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"concurrency": types.Int64Type, "at": types.Float64Type, "baseline": types.Float64Type, "current": types.Float64Type,
		"baseline_trials": types.Int64Type, "current_trials": types.Int64Type,
		"baseline_met": types.BoolType, "current_met": types.BoolType,
	}}
	comparisonObjectiveType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"objective": types.StringType, "unit": types.StringType, "verdict": types.StringType,
		"change_percent": types.Float64Type, "noise_percent": types.Float64Type, "noise_source": types.StringType,
		"change_low_percent": types.Float64Type, "change_high_percent": types.Float64Type,
		"t": types.Float64Type, "critical_t": types.Float64Type, "to_decide": types.StringType,
		"levels": types.ListType{ElemType: comparisonLevelType},
	}}
	comparisonWorkloadType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"verdict": types.StringType, "reason": types.StringType, "notes": types.ListType{ElemType: types.StringType},
		"baseline_capacity": types.Int64Type, "current_capacity": types.Int64Type, "capacity_change": types.Int64Type,
		"axis": types.StringType, "baseline_maximum_passing": types.Float64Type, "current_maximum_passing": types.Float64Type,
		"capacity_steps": types.Int64Type,
		"objectives":     types.ListType{ElemType: comparisonObjectiveType},
	}}
	comparisonAttrTypes = map[string]attr.Type{
		"comparable":       types.BoolType,
		"refused":          types.ListType{ElemType: types.StringType},
		"flagged":          types.ListType{ElemType: types.StringType},
		"regressed":        types.ListType{ElemType: types.StringType},
		"improved":         types.ListType{ElemType: types.StringType},
		"inconclusive":     types.ListType{ElemType: types.StringType},
		"summary":          types.StringType,
		"workloads":        types.MapType{ElemType: comparisonWorkloadType},
		"only_in_baseline": types.ListType{ElemType: types.StringType},
		"only_in_current":  types.ListType{ElemType: types.StringType},
	}
)

// comparisonAttributesDescription documents the object both the function and the data source
// return.
const comparisonAttributesDescription = "`comparable` (false when the protocols differ; `refused` lists why), " +
	"`refused` and `flagged` (differences of protocol and setup, as sentences), `regressed`, `improved` and " +
	"`inconclusive` (workload labels), `summary` (one line per workload with its verdict and figures, for an error " +
	"message), `workloads` (per label: `verdict`, `reason`, `notes`, `axis` (`concurrency`, `request_rate`, " +
	"`speedup` or `users`), `baseline_maximum_passing` and `current_maximum_passing` on that axis, `capacity_steps` (how many of " +
	"the levels tried the maximum passing level moved, negative down), `baseline_capacity`, `current_capacity` and " +
	"`capacity_change` (concurrency only, else null), and per objective `objective`, `unit`, `verdict`, " +
	"`change_percent`, `change_low_percent` and `change_high_percent` (its confidence interval), `noise_percent`, " +
	"`noise_source`, `t`, `critical_t`, `to_decide` (for `inconclusive`: what would decide it) and the common `levels` " +
	"with `at` (the level on the axis), `concurrency` (null on the other axes), `baseline`, `current`, " +
	"`baseline_trials`, `current_trials`, `baseline_met`, `current_met`), `only_in_baseline`, `only_in_current`."

type comparisonModel struct {
	Comparable     bool                          `tfsdk:"comparable"`
	Refused        []string                      `tfsdk:"refused"`
	Flagged        []string                      `tfsdk:"flagged"`
	Regressed      []string                      `tfsdk:"regressed"`
	Improved       []string                      `tfsdk:"improved"`
	Inconclusive   []string                      `tfsdk:"inconclusive"`
	Summary        string                        `tfsdk:"summary"`
	Workloads      map[string]comparisonWorkload `tfsdk:"workloads"`
	OnlyInBaseline []string                      `tfsdk:"only_in_baseline"`
	OnlyInCurrent  []string                      `tfsdk:"only_in_current"`
}

type comparisonWorkload struct {
	Verdict          string                `tfsdk:"verdict"`
	Reason           string                `tfsdk:"reason"`
	Notes            []string              `tfsdk:"notes"`
	BaselineCapacity *int64                `tfsdk:"baseline_capacity"`
	CurrentCapacity  *int64                `tfsdk:"current_capacity"`
	CapacityChange   *int64                `tfsdk:"capacity_change"`
	Axis             string                `tfsdk:"axis"`
	BaselineMaximum  *float64              `tfsdk:"baseline_maximum_passing"`
	CurrentMaximum   *float64              `tfsdk:"current_maximum_passing"`
	CapacitySteps    int64                 `tfsdk:"capacity_steps"`
	Objectives       []comparisonObjective `tfsdk:"objectives"`
}

type comparisonObjective struct {
	Objective     string            `tfsdk:"objective"`
	Unit          string            `tfsdk:"unit"`
	Verdict       string            `tfsdk:"verdict"`
	ChangePercent *float64          `tfsdk:"change_percent"`
	NoisePercent  *float64          `tfsdk:"noise_percent"`
	NoiseSource   string            `tfsdk:"noise_source"`
	ChangeLow     *float64          `tfsdk:"change_low_percent"`
	ChangeHigh    *float64          `tfsdk:"change_high_percent"`
	T             *float64          `tfsdk:"t"`
	CriticalT     *float64          `tfsdk:"critical_t"`
	ToDecide      *string           `tfsdk:"to_decide"`
	Levels        []comparisonLevel `tfsdk:"levels"`
}

type comparisonLevel struct {
	Concurrency    *int64  `tfsdk:"concurrency"`
	At             float64 `tfsdk:"at"`
	Baseline       float64 `tfsdk:"baseline"`
	Current        float64 `tfsdk:"current"`
	BaselineTrials int64   `tfsdk:"baseline_trials"`
	CurrentTrials  int64   `tfsdk:"current_trials"`
	BaselineMet    bool    `tfsdk:"baseline_met"`
	CurrentMet     bool    `tfsdk:"current_met"`
}

// comparisonValue is the Terraform shape of a comparison; lists are empty, never null, so a
// configuration can take length() of them.
func comparisonValue(r compare.Result) comparisonModel {
	m := comparisonModel{
		Comparable: len(r.Refused) == 0, Refused: nonNil(r.Refused), Flagged: nonNil(r.Flagged),
		Regressed: []string{}, Improved: []string{}, Inconclusive: []string{}, Summary: r.Summary(),
		Workloads:      map[string]comparisonWorkload{},
		OnlyInBaseline: nonNil(r.OnlyInBaseline), OnlyInCurrent: nonNil(r.OnlyInCurrent),
	}
	for _, w := range r.Workloads {
		switch w.Verdict {
		case compare.Regressed:
			m.Regressed = append(m.Regressed, w.Label)
		case compare.Improved:
			m.Improved = append(m.Improved, w.Label)
		case compare.Inconclusive:
			m.Inconclusive = append(m.Inconclusive, w.Label)
		}
		cw := comparisonWorkload{Verdict: w.Verdict, Reason: w.Reason, Notes: nonNil(w.Notes),
			BaselineCapacity: int64Ptr(w.BaselineCapacity), CurrentCapacity: int64Ptr(w.CurrentCapacity),
			CapacityChange: int64Ptr(w.CapacityChange), Axis: string(w.Axis),
			BaselineMaximum: w.BaselineMaximumPassing, CurrentMaximum: w.CurrentMaximumPassing,
			CapacitySteps: int64(w.CapacitySteps), Objectives: []comparisonObjective{}}
		for _, o := range w.Objectives {
			co := comparisonObjective{Objective: o.Key, Unit: o.Unit, Verdict: o.Verdict, NoiseSource: o.NoiseSource,
				ChangePercent: finite(o.Change * 100), NoisePercent: finite(o.Noise * 100), T: finite(o.T),
				ChangeLow: finite(o.Low * 100), ChangeHigh: finite(o.High * 100),
				CriticalT: finite(o.Critical), Levels: []comparisonLevel{}}
			if o.Decide != "" {
				co.ToDecide = &o.Decide
			}
			if len(o.Levels) == 0 {
				co.CriticalT = nil
			}
			for _, l := range o.Levels {
				var c *int64
				if w.Axis == compare.AxisConcurrency {
					v := int64(l.Concurrency)
					c = &v
				}
				co.Levels = append(co.Levels, comparisonLevel{Concurrency: c, At: l.At, Baseline: l.Baseline, Current: l.Current,
					BaselineTrials: int64(l.BaselineN), CurrentTrials: int64(l.CurrentN), BaselineMet: l.BaselinePass, CurrentMet: l.CurrentPass})
			}
			cw.Objectives = append(cw.Objectives, co)
		}
		m.Workloads[w.Label] = cw
	}
	return m
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func int64Ptr(p *int) *int64 {
	if p == nil {
		return nil
	}
	v := int64(*p)
	return &v
}

func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
