package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timetypes/timetypes"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/attr/xattr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// durationType is timetypes.GoDurationType with an error that names the attribute and the
// fix. The library's own message names neither, and Terraform shows only the enclosing
// line for a nested attribute such as trial.stall_timeout, so a user could not tell which
// value to change.
type durationType struct {
	timetypes.GoDurationType
}

var (
	_ basetypes.StringTypable                    = durationType{}
	_ basetypes.StringValuableWithSemanticEquals = durationValue{}
	_ xattr.ValidateableAttribute                = durationValue{}
)

func (durationType) String() string { return "provider.durationType" }

func (durationType) ValueType(context.Context) attr.Value { return durationValue{} }

func (t durationType) Equal(o attr.Type) bool {
	other, ok := o.(durationType)
	return ok && t.GoDurationType.Equal(other.GoDurationType)
}

func (durationType) ValueFromString(_ context.Context, in basetypes.StringValue) (basetypes.StringValuable, diag.Diagnostics) {
	return durationValue{timetypes.GoDuration{StringValue: in}}, nil
}

func (t durationType) ValueFromTerraform(ctx context.Context, in tftypes.Value) (attr.Value, error) {
	v, err := t.StringType.ValueFromTerraform(ctx, in)
	if err != nil {
		return nil, err
	}
	s, ok := v.(basetypes.StringValue)
	if !ok {
		return nil, fmt.Errorf("unexpected value type %T", v)
	}
	return durationValue{timetypes.GoDuration{StringValue: s}}, nil
}

// durationValue is a Go duration string; see durationType.
type durationValue struct {
	timetypes.GoDuration
}

func newDurationValue(s string) durationValue {
	return durationValue{timetypes.GoDuration{StringValue: basetypes.NewStringValue(s)}}
}

func (durationValue) Type(context.Context) attr.Type { return durationType{} }

func (d durationValue) Equal(o attr.Value) bool {
	other, ok := o.(durationValue)
	return ok && d.StringValue.Equal(other.StringValue)
}

func (d durationValue) StringSemanticEquals(ctx context.Context, newValuable basetypes.StringValuable) (bool, diag.Diagnostics) {
	other, ok := newValuable.(durationValue)
	if !ok {
		return false, nil
	}
	return d.GoDuration.StringSemanticEquals(ctx, other.GoDuration)
}

// ValidateAttribute refuses a value that is not a Go duration. Whether it must be positive is
// the attribute's own rule (durationValidator or the domain's), checked only once it parses.
func (d durationValue) ValidateAttribute(_ context.Context, req xattr.ValidateAttributeRequest, resp *xattr.ValidateAttributeResponse) {
	if d.IsNull() || d.IsUnknown() {
		return
	}
	if _, err := time.ParseDuration(d.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration", fmt.Sprintf(
			"%s must be a Go duration: a number and a unit (ns, us, ms, s, m, h) such as \"90s\", \"30m\" or \"1h30m\", got %q.",
			req.Path, d.ValueString()))
	}
}
