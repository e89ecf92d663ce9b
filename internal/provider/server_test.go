package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

func TestReadableDiagnostics(t *testing.T) {
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

func TestProblemPath(t *testing.T) {
	tests := []struct {
		in   string
		want path.Path
	}{
		{"port", path.Root("port")},
		{"speculative.draft_tokens", path.Root("speculative").AtName("draft_tokens")},
		{"mounts[1].target", path.Root("mounts").AtListIndex(1).AtName("target")},
		{`environment["A.B=C"]`, path.Root("environment").AtMapKey("A.B=C")},
		{"gpu_ids[2]", path.Root("gpu_ids").AtListIndex(2)},
	}
	for _, tt := range tests {
		if got := problemPath(tt.in); !got.Equal(tt.want) {
			t.Errorf("problemPath(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
