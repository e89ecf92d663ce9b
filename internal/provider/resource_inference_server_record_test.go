package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

// An import restores what was configured: an empty environment, label map or argument list
// comes back empty (not null, which would plan a replacement), and an unset one as null.
func TestFromRecordKeepsEmptyCollections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	emptyList := types.ListValueMust(types.StringType, []attr.Value{})
	emptyMap := types.MapValueMust(types.StringType, map[string]attr.Value{})
	mountType := types.ObjectType{AttrTypes: mountAttrTypes}
	m := inferenceServerModel{
		engineResourceModel: engineResourceModel{engineSettings: engineSettings{
			Image: types.StringValue("img:1"), Engine: types.StringValue("sglang"), Model: types.StringValue("org/m"),
			TensorParallelSize: types.Int64Value(1), Accelerator: types.StringValue("cpu"), Port: types.Int64Value(30000),
			ReadinessTimeout: newDurationValue("30m"), ExtraArgs: emptyList, Entrypoint: types.ListNull(types.StringType),
		}, Name: types.StringValue("s"), Environment: emptyMap, Labels: emptyMap},
		BindAddress: types.StringValue("127.0.0.1"), NetworkMode: types.StringValue("bridge"), RestartPolicy: types.StringValue("no"),
		Mounts: types.ListValueMust(mountType, []attr.Value{}), GroupAdd: types.ListNull(types.StringType), GPUIDs: types.ListNull(types.StringType),
		Devices: emptyList, // lavapipe: no device node, recorded as [] and imported as []
	}
	spec, diags := m.spec(ctx)
	p, d := m.placement(ctx)
	diags.Append(d...)
	if diags.HasError() {
		t.Fatal(diags)
	}
	c, err := deploy.NewContainer(spec, p, engine.Secrets{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := deploy.ParseLaunchRecord(c.Labels[deploy.SpecLabel])
	if err != nil {
		t.Fatal(err)
	}
	var got inferenceServerModel
	if diags := got.fromRecord(ctx, rec); diags.HasError() {
		t.Fatal(diags)
	}
	for name, pair := range map[string][2]attr.Value{
		"environment": {got.Environment, m.Environment},
		"labels":      {got.Labels, m.Labels},
		"extra_args":  {got.ExtraArgs, m.ExtraArgs},
		"mounts":      {got.Mounts, m.Mounts},
		"group_add":   {got.GroupAdd, m.GroupAdd},
		"gpu_ids":     {got.GPUIDs, m.GPUIDs},
		"devices":     {got.Devices, m.Devices},
		"entrypoint":  {got.Entrypoint, m.Entrypoint},
	} {
		if !pair[0].Equal(pair[1]) {
			t.Errorf("%s: imported %s, configured %s", name, pair[0], pair[1])
		}
	}
}
