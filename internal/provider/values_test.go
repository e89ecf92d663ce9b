package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// The attribute types of nested objects are read from their schemas; these are the types the
// models' tfsdk tags need, written out by hand once, here.
func TestObjectAttrTypesFromSchemas(t *testing.T) {
	t.Parallel()
	str, num, boolean := types.StringType, types.Int64Type, types.BoolType
	tests := []struct {
		name string
		got  map[string]attr.Type
		want map[string]attr.Type
	}{
		{"mounts (list of objects)", mountAttrTypes, map[string]attr.Type{"type": str, "source": str, "target": str, "read_only": boolean}},
		{"tolerations (list of objects)", tolerationAttrTypes, map[string]attr.Type{"key": str, "operator": str, "value": str, "effect": str, "toleration_seconds": num}},
		{"model_cache (object)", modelCacheAttrTypes, map[string]attr.Type{"host_path": str, "claim_name": str, "mount_path": str, "read_only": boolean}},
		{"speculative", speculativeAttrTypes, map[string]attr.Type{"algorithm": str, "steps": num, "topk": num, "draft_tokens": num, "draft_model": str}},
		{"experiment.speculative_mode", speculativeModeAttrTypes, map[string]attr.Type{"algorithm": str, "steps": num, "topk": num, "draft_tokens": num}},
		{"experiment", experimentAttrTypes, map[string]attr.Type{
			"image_tag": str, "image_digest": str, "model": str, "checkpoint": str, "hardware": str, "driver": str, "kernel": str,
			"tensor_parallelism": num, "context_length": num, "physical_token_pool": num, "replicas": num, "accelerator": str,
			"speculative_mode": types.ObjectType{AttrTypes: map[string]attr.Type{"algorithm": str, "steps": num, "topk": num, "draft_tokens": num}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.got) != len(tt.want) {
				t.Fatalf("got %d attributes %v, want %d %v", len(tt.got), tt.got, len(tt.want), tt.want)
			}
			for name, want := range tt.want {
				if got, ok := tt.got[name]; !ok || !got.Equal(want) {
					t.Errorf("%s: got %v, want %v", name, got, want)
				}
			}
		})
	}
}
