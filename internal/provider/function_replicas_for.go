package provider

import (
	"context"
	"fmt"
	"math"
	"math/big"

	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/sizing"
)

var _ function.Function = replicasForFunction{}

// NewReplicasForFunction turns a demand and a measured capacity into replicas.
func NewReplicasForFunction() function.Function { return replicasForFunction{} }

type replicasForFunction struct{}

func (replicasForFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "replicas_for"
}

func (replicasForFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "Replicas that serve a demand at a measured capacity, with headroom",
		MarkdownDescription: "Returns how many replicas serve `users` concurrent users when one replica holds `capacity` of " +
			"them within its objectives, keeping `headroom` of every replica's capacity free: " +
			"`ceil(users / (capacity × (1 − headroom)))`, and 0 for no users. A `capacity` of 0 (one replica missed the " +
			"objectives with a single user) serves nobody: any demand is an error saying so, never a division by zero. " +
			"A null `capacity` (no level tried passed, so the capacity is below the search's minimum) is an error too. A " +
			"capacity bounded by the search (`capacity_bounded_by_search`: every level tried passed) is a lower bound of " +
			"the real one, so the replicas are an upper bound: safe, perhaps more than needed. More than 1 000 000 " +
			"replicas is refused as a unit slip.",
		// Numbers, not float64/int64 parameters: the framework's own conversion of an infinite
		// users (1/0) or a fractional capacity fails as "report this to the provider
		// developer"; converted here, each is an argument error naming the argument.
		Parameters: []function.Parameter{
			function.NumberParameter{Name: "users", MarkdownDescription: "Concurrent users to serve at peak, 0 or more (a fraction is rounded up with the replicas)."},
			function.NumberParameter{Name: "capacity", AllowNullValue: true, MarkdownDescription: "One replica's measured capacity, a whole number: " +
				"`maximum_passing_concurrency[\"<label>\"]` of `llmserve_capacity_benchmark` or `llmserve_capacity_report`, measured against one replica, " +
				"or `maximum_passing_users[\"<label>\"]` of a `conversation` workload (then `users` counts people chatting at once)."},
			function.NumberParameter{Name: "headroom", MarkdownDescription: "The fraction of each replica's capacity kept free, from 0 up to but not including 1: 0.2 plans 80 % of it."},
		},
		Return: function.Int64Return{},
	}
}

// finiteArg is argument i (name) as a float64, or an argument error: an infinity (1/0) or a
// number beyond float64 says so.
func finiteArg(i int64, name string, n types.Number) (float64, *function.FuncError) {
	v := n.ValueBigFloat()
	if v.IsInf() {
		return 0, function.NewArgumentFuncError(i, fmt.Sprintf("%s is infinite (a division by zero, such as 1/0?); give a finite number", name))
	}
	f, _ := v.Float64()
	if math.IsInf(f, 0) {
		return 0, function.NewArgumentFuncError(i, fmt.Sprintf("%s is %s, beyond the largest number the function computes with (%g)", name, v.Text('g', 6), math.MaxFloat64))
	}
	return f, nil
}

func (replicasForFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var usersArg, capacityArg, headroomArg types.Number
	resp.Error = function.ConcatFuncErrors(req.Arguments.Get(ctx, &usersArg, &capacityArg, &headroomArg))
	if resp.Error != nil {
		return
	}
	if capacityArg.IsNull() {
		resp.Error = function.NewArgumentFuncError(1, "capacity is null: no concurrency tried passed, so the capacity is below the search's minimum (maximum_passing_concurrency is null); lower search.min_concurrency and measure again, or coalesce(capacity, 0) to treat it as 0")
		return
	}
	users, ferr := finiteArg(0, "users", usersArg)
	if ferr != nil {
		resp.Error = ferr
		return
	}
	headroom, ferr := finiteArg(2, "headroom", headroomArg)
	if ferr != nil {
		resp.Error = ferr
		return
	}
	c := capacityArg.ValueBigFloat()
	capacity, acc := c.Int64()
	if c.IsInf() || !c.IsInt() || acc != big.Exact {
		resp.Error = function.NewArgumentFuncError(1, fmt.Sprintf("capacity must be a whole number of concurrent users (maximum_passing_concurrency is one), got %s", c.Text('g', 10)))
		return
	}
	n, err := sizing.Replicas(users, capacity, headroom)
	if err != nil {
		// Name the argument at fault where there is one; too many replicas is all three's.
		switch {
		case math.IsNaN(users) || math.IsInf(users, 0) || users < 0:
			resp.Error = function.NewArgumentFuncError(0, err.Error())
		case math.IsNaN(headroom) || headroom < 0 || headroom >= 1:
			resp.Error = function.NewArgumentFuncError(2, err.Error())
		case capacity <= 0:
			resp.Error = function.NewArgumentFuncError(1, err.Error())
		default:
			resp.Error = function.NewFuncError(err.Error())
		}
		return
	}
	resp.Error = function.ConcatFuncErrors(resp.Result.Set(ctx, n))
}
