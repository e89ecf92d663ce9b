package provider

import (
	"context"
	"fmt"
	"net/url"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

// httpURLValidator accepts absolute http(s) base URLs.
type httpURLValidator struct{}

func (httpURLValidator) Description(context.Context) string {
	return "must be an absolute http:// or https:// URL"
}
func (v httpURLValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (httpURLValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	raw := req.ConfigValue.ValueString()
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid endpoint URL",
			fmt.Sprintf("%q is not an absolute http:// or https:// URL. Give the server's base URL, e.g. \"http://gpu-host.example.com:30000\".", raw))
	}
}

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
			fmt.Sprintf("percentile must be in (0, 100], got %g; use e.g. 95 for p95.", p))
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
			fmt.Sprintf("threshold_ms must be greater than 0, got %g; give the SLO limit in milliseconds, e.g. 10000 for 10 s.", v))
	}
}
