package provider

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/llmserve/terraform-provider-llmserve/internal/endpoint"
)

// percentileValidator accepts (0, 100]: p0 is meaningless for an SLO, p100 is the maximum.
type percentileValidator struct{}

func (percentileValidator) Description(context.Context) string {
	return "must be greater than 0 and at most 100"
}
func (v percentileValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (percentileValidator) ValidateFloat64(_ context.Context, req validator.Float64Request, resp *validator.Float64Response) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if p := req.ConfigValue.ValueFloat64(); p <= 0 || p > 100 {
		resp.Diagnostics.AddAttributeError(req.Path, "Percentile out of range",
			fmt.Sprintf("%s must be in (0, 100], got %g; use e.g. 95 for p95.", req.Path, p))
	}
}

// positiveFloatValidator rejects zero and negative thresholds.
type positiveFloatValidator struct{}

func (positiveFloatValidator) Description(context.Context) string { return "must be greater than 0" }
func (v positiveFloatValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (positiveFloatValidator) ValidateFloat64(_ context.Context, req validator.Float64Request, resp *validator.Float64Response) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if v := req.ConfigValue.ValueFloat64(); v <= 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Threshold must be positive",
			fmt.Sprintf("%s must be greater than 0, got %g; give the SLO limit in milliseconds, e.g. 10000 for 10 s.", req.Path, v))
	}
}

// printableValidator refuses control characters (C0, DEL, C1): they would reach a
// container's command line or environment, and plan output on a terminal, where an escape
// sequence can rewrite what the operator sees.
type printableValidator struct{}

func (printableValidator) Description(context.Context) string {
	return "must not contain control characters"
}
func (v printableValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (printableValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if i := strings.IndexFunc(req.ConfigValue.ValueString(), unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(req.ConfigValue.ValueString()[i:])
		resp.Diagnostics.AddAttributeError(req.Path, "Control character in value",
			fmt.Sprintf("%s contains the control character %U at byte %d; control characters reach containers and terminals (an escape sequence can rewrite what a terminal shows). Remove it.", req.Path, r, i))
	}
}

// intRange accepts min ≤ v ≤ max and says what to do otherwise. hint is the fix for a value
// below min (e.g. "omit it for the engine's default"); the upper bound is documented on the
// attribute, so its message points there.
type intRange struct {
	min, max int64
	hint     string
}

func (v intRange) Description(context.Context) string {
	if v.max == 0 {
		return fmt.Sprintf("must be at least %d", v.min)
	}
	return fmt.Sprintf("must be between %d and %d", v.min, v.max)
}
func (v intRange) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v intRange) ValidateInt64(_ context.Context, req validator.Int64Request, resp *validator.Int64Response) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	got := req.ConfigValue.ValueInt64()
	switch {
	case got < v.min:
		detail := fmt.Sprintf("%s must be at least %d, got %d.", req.Path, v.min, got)
		if v.hint != "" {
			detail += " " + v.hint
		}
		resp.Diagnostics.AddAttributeError(req.Path, "Value too small", detail)
	case v.max != 0 && got > v.max:
		resp.Diagnostics.AddAttributeError(req.Path, "Value too large",
			fmt.Sprintf("%s must be at most %d, got %d. The bound keeps a run's memory and time finite; no real server needs more.", req.Path, v.max, got))
	}
}

// fractionValidator accepts (0, 1]: a share of accelerator memory.
type fractionValidator struct{}

func (fractionValidator) Description(context.Context) string {
	return "must be greater than 0 and at most 1"
}
func (v fractionValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (fractionValidator) ValidateFloat64(_ context.Context, req validator.Float64Request, resp *validator.Float64Response) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if f := req.ConfigValue.ValueFloat64(); f <= 0 || f > 1 {
		resp.Diagnostics.AddAttributeError(req.Path, "Fraction out of range",
			fmt.Sprintf("%s must be greater than 0 and at most 1, got %g; give a share such as 0.85, or omit it for the engine's default.", req.Path, f))
	}
}

// ipAddressValidator demands an IP literal. A host name is resolved by the engine host,
// which publishes the port on every address it resolves to: "localhost" would publish on
// 0.0.0.0 and [::] while state said 127.0.0.1.
type ipAddressValidator struct{}

func (ipAddressValidator) Description(context.Context) string {
	return "must be an IP address such as 127.0.0.1 or 0.0.0.0"
}
func (v ipAddressValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (ipAddressValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if raw := req.ConfigValue.ValueString(); net.ParseIP(raw) == nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Not an IP address",
			fmt.Sprintf("%s must be an IP address literal, got %q. A host name is resolved by the engine host, which would publish the port on every address it resolves to (for \"localhost\" on all interfaces) while state said otherwise. Use \"127.0.0.1\" for this host only or \"0.0.0.0\" for every interface.", req.Path, raw))
	}
}

// endpointValidator applies endpoint.Parse, the same rule apply enforces for values
// that were unknown at plan.
type endpointValidator struct{}

func (endpointValidator) Description(context.Context) string {
	return "must be the server's http:// or https:// base URL, without credentials, /v1, query or fragment"
}
func (v endpointValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (endpointValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := endpoint.Parse(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid endpoint URL", fmt.Sprintf("%s %v.", req.Path, err))
	}
}

// progressFileValidator refuses a path that could never be the journal: empty (omit the
// attribute instead) or an existing directory. Whether it can be written is found at apply.
type progressFileValidator struct{}

func (progressFileValidator) Description(context.Context) string {
	return "must be a file path, not empty and not a directory"
}
func (v progressFileValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (progressFileValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	p := req.ConfigValue.ValueString()
	if strings.TrimSpace(p) == "" {
		resp.Diagnostics.AddAttributeError(req.Path, "Empty progress file path",
			fmt.Sprintf("%s is empty; give a file path such as \"capacity.progress.jsonl\", or omit it to keep no journal.", req.Path))
		return
	}
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		resp.Diagnostics.AddAttributeError(req.Path, "Progress file is a directory",
			fmt.Sprintf("%s %q is a directory; give a file path inside it, e.g. %q.", req.Path, p, filepath.Join(p, "capacity.progress.jsonl")))
	}
}

// positiveTimeouts is timeouts.Attributes with every duration required to be positive: the
// package accepts "0s" and "-5m", which would fail the operation at once with a bare
// "context deadline exceeded".
func positiveTimeouts(ctx context.Context, opts timeouts.Opts) schema.Attribute {
	attr := timeouts.Attributes(ctx, opts).(schema.SingleNestedAttribute)
	for name, a := range attr.Attributes {
		if s, ok := a.(schema.StringAttribute); ok {
			s.Validators = append(s.Validators, durationValidator{})
			attr.Attributes[name] = s
		}
	}
	return attr
}
