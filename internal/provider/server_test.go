package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
)

func TestReadableDiagnostics(t *testing.T) {
	t.Parallel()
	at := tftypes.NewAttributePath().WithAttributeName("workloads").WithElementKeyInt(0).WithAttributeName("input_tokens")
	diags := []*tfprotov6.Diagnostic{
		{Severity: tfprotov6.DiagnosticSeverityError, Summary: "Configuration Read Error",
			Detail: "An unexpected error was encountered ... This is always an error in the provider.\n\nError: Value %!s(*big.Float=1.5) is not an integer."},
		{Severity: tfprotov6.DiagnosticSeverityError, Summary: "Configuration Read Error", Attribute: at,
			Detail: "This is always an error in the provider.\n\nError: Value %!s(*big.Float=1.5) is not an integer."},
		{Severity: tfprotov6.DiagnosticSeverityError, Summary: "Int64 Type Validation Error", Attribute: at,
			Detail: "Value %!s(*big.Float=1.5) is not an integer."},
		{Severity: tfprotov6.DiagnosticSeverityError, Summary: "Int64 Type Validation Error",
			Attribute: tftypes.NewAttributePath().WithAttributeName("port"),
			Detail:    "Value %!s(*big.Float=1e+30) cannot be represented as a 64-bit integer."},
		{Severity: tfprotov6.DiagnosticSeverityWarning, Summary: "Unrelated", Detail: "kept as is"},
	}
	got := readableDiagnostics(diags, nil)
	want := []struct{ summary, detail string }{
		{"Not a whole number", "workloads[0].input_tokens must be a whole number, got 1.5. Remove the fractional part."},
		{"Number out of range", "port is 1e+30, far outside what it accepts; give a value within the range its documentation states."},
		{"Unrelated", "kept as is"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d diagnostics, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Summary != w.summary || got[i].Detail != w.detail {
			t.Errorf("diagnostic %d = %q / %q, want %q / %q", i, got[i].Summary, got[i].Detail, w.summary, w.detail)
		}
	}
}

func TestAttributePath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   attrpath.Path
		want path.Path
	}{
		{attrpath.Root("port"), path.Root("port")},
		{attrpath.Root("speculative").At("draft_tokens"), path.Root("speculative").AtName("draft_tokens")},
		{attrpath.Root("mounts").Index(1).At("target"), path.Root("mounts").AtListIndex(1).AtName("target")},
		{attrpath.Root("environment").Key("A.B=C"), path.Root("environment").AtMapKey("A.B=C")},
		{attrpath.Root("gpu_ids").Index(2), path.Root("gpu_ids").AtListIndex(2)},
		{attrpath.Root("search").At("concurrency_levels").Index(0), path.Root("search").AtName("concurrency_levels").AtListIndex(0)},
	}
	for _, tt := range tests {
		if got := attributePath(tt.in); !got.Equal(tt.want) {
			t.Errorf("attributePath(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// OpenTofu sends a null function argument as an empty DynamicValue; the function must still
// run and give its own message about the null, not the framework's "report this" error.
func TestCallFunctionEmptyArgumentIsNull(t *testing.T) {
	t.Parallel()
	server, err := ProtocolServer("test")()
	if err != nil {
		t.Fatal(err)
	}
	encode := func(v tftypes.Value) *tfprotov6.DynamicValue {
		dv, err := tfprotov6.NewDynamicValue(v.Type(), v)
		if err != nil {
			t.Fatal(err)
		}
		return &dv
	}
	for name, capacity := range map[string]*tfprotov6.DynamicValue{
		"empty (OpenTofu)":    {},
		"msgpack (Terraform)": encode(tftypes.NewValue(tftypes.Number, nil)),
	} {
		resp, err := server.CallFunction(t.Context(), &tfprotov6.CallFunctionRequest{
			Name: "replicas_for",
			Arguments: []*tfprotov6.DynamicValue{
				encode(tftypes.NewValue(tftypes.Number, 10)),
				capacity,
				encode(tftypes.NewValue(tftypes.Number, 0.2)),
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Error == nil || !strings.Contains(resp.Error.Text, "capacity is null: no concurrency tried passed") {
			t.Errorf("%s: got %+v, want the function's own message about a null capacity", name, resp.Error)
		}
	}
}
