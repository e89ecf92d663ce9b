package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestPlanDefault(t *testing.T) {
	t.Parallel()
	port := planDefault[types.Int64]{fill: func(context.Context, defaultRequest, *diag.Diagnostics) (types.Int64, bool) {
		return types.Int64Value(8080), true
	}}
	var resp planmodifier.Int64Response
	port.PlanModifyInt64(t.Context(), planmodifier.Int64Request{ConfigValue: types.Int64Null()}, &resp)
	if !resp.PlanValue.Equal(types.Int64Value(8080)) || resp.Diagnostics.HasError() {
		t.Errorf("omitted: plan = %v, %v; want 8080", resp.PlanValue, resp.Diagnostics)
	}
	resp = planmodifier.Int64Response{PlanValue: types.Int64Value(1)}
	port.PlanModifyInt64(t.Context(), planmodifier.Int64Request{ConfigValue: types.Int64Value(1)}, &resp)
	if !resp.PlanValue.Equal(types.Int64Value(1)) {
		t.Errorf("configured: plan = %v; the configuration must win", resp.PlanValue)
	}
	// A number default on a string attribute is a schema mistake: an error, not a panic.
	var sresp planmodifier.StringResponse
	port.PlanModifyString(t.Context(), planmodifier.StringRequest{ConfigValue: types.StringNull()}, &sresp)
	if !sresp.Diagnostics.HasError() {
		t.Error("a number default on a string attribute: want an error")
	}
}
