package provider

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// Each validator through the framework's interface: the summary of the one error for a
// refused value, none for an accepted, null or unknown one.
func TestStringValidators(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		v     validator.String
		value types.String
		want  string // diagnostic summary; "" for no diagnostic
	}{
		{"printable ok", printableValidator{}, types.StringValue("qwen-0.5b é"), ""},
		{"printable escape", printableValidator{}, types.StringValue("a\x1b[2Jb"), "Control character in value"},
		{"printable C1", printableValidator{}, types.StringValue("a\u0085"), "Control character in value"},
		{"printable null", printableValidator{}, types.StringNull(), ""},
		{"printable unknown", printableValidator{}, types.StringUnknown(), ""},
		{"ip ok", ipAddressValidator{}, types.StringValue("0.0.0.0"), ""},
		{"ip v6 ok", ipAddressValidator{}, types.StringValue("::1"), ""},
		{"ip host name", ipAddressValidator{}, types.StringValue("localhost"), "Not an IP address"},
		{"progress ok", progressFileValidator{}, types.StringValue(filepath.Join(dir, "p.jsonl")), ""},
		{"progress blank", progressFileValidator{}, types.StringValue("  "), "Empty progress file path"},
		{"progress directory", progressFileValidator{}, types.StringValue(dir), "Progress file is a directory"},
		{"duration ok", durationValidator{}, types.StringValue("90s"), ""},
		{"duration zero", durationValidator{}, types.StringValue("0s"), "Invalid duration"},
		{"duration negative", durationValidator{}, types.StringValue("-5m"), "Invalid duration"},
		{"duration words", durationValidator{}, types.StringValue("five minutes"), "Invalid duration"},
		{"duration unknown", durationValidator{}, types.StringUnknown(), ""},
		{"non-empty ok", nonEmptyString{}, types.StringValue("{}"), ""},
		{"non-empty empty", nonEmptyString{}, types.StringValue(""), "Empty value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &validator.StringResponse{}
			tc.v.ValidateString(context.Background(), validator.StringRequest{Path: path.Root("x"), ConfigValue: tc.value}, resp)
			checkSummary(t, resp.Diagnostics.Errors(), tc.want)
		})
	}
}

func TestFloat64Validators(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		v     validator.Float64
		value types.Float64
		want  string
	}{
		{"fraction 1", fractionValidator{}, types.Float64Value(1), ""},
		{"fraction 0", fractionValidator{}, types.Float64Value(0), "Fraction out of range"},
		{"fraction 1.2", fractionValidator{}, types.Float64Value(1.2), "Fraction out of range"},
		{"fraction unknown", fractionValidator{}, types.Float64Unknown(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &validator.Float64Response{}
			tc.v.ValidateFloat64(context.Background(), validator.Float64Request{Path: path.Root("x"), ConfigValue: tc.value}, resp)
			checkSummary(t, resp.Diagnostics.Errors(), tc.want)
		})
	}
}

// checkSummary wants no error, or exactly one with that summary whose detail starts with
// the attribute path.
func checkSummary(t *testing.T, got diag.Diagnostics, want string) {
	t.Helper()
	switch {
	case want == "" && len(got) != 0:
		t.Errorf("errors %v, want none", got)
	case want != "" && (len(got) != 1 || got[0].Summary() != want || !strings.HasPrefix(got[0].Detail(), "x ")):
		t.Errorf("errors %v, want one %q naming x", got, want)
	}
}

func TestValidatorDescriptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, v := range []validator.Describer{printableValidator{}, fractionValidator{}} {
		if d, md := v.Description(ctx), v.MarkdownDescription(ctx); d == "" || d != md {
			t.Errorf("%T: Description %q, MarkdownDescription %q", v, d, md)
		}
	}
}
