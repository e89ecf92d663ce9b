package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/defaults"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectdefault"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// Object defaults derived from the schema, so that a nested object's default is not written
// a second time beside its attributes' own.

// objectDefault is a nested object's default when it is left out: each attribute's own
// default, null where it has none.
func objectDefault(ctx context.Context, attrs map[string]schema.Attribute) defaults.Object {
	values := make(map[string]attr.Value, len(attrs))
	for name, a := range attrs {
		values[name] = attributeDefault(ctx, a)
	}
	return objectdefault.StaticValue(types.ObjectValueMust(objectAttrTypes(schema.SingleNestedAttribute{Attributes: attrs}), values))
}

// attributeDefault is the value an attribute takes when it is left out, in its own type.
func attributeDefault(ctx context.Context, a schema.Attribute) attr.Value {
	switch a := a.(type) {
	case schema.Int64Attribute:
		if a.Default != nil {
			var resp defaults.Int64Response
			a.Default.DefaultInt64(ctx, defaults.Int64Request{}, &resp)
			return resp.PlanValue
		}
	case schema.StringAttribute:
		if a.Default != nil {
			var resp defaults.StringResponse
			a.Default.DefaultString(ctx, defaults.StringRequest{}, &resp)
			if a.CustomType != nil {
				v, _ := a.CustomType.ValueFromString(ctx, resp.PlanValue) // a custom string type takes any string
				return v
			}
			return resp.PlanValue
		}
	}
	typ := a.GetType()
	v, _ := typ.ValueFromTerraform(ctx, tftypes.NewValue(typ.TerraformType(ctx), nil)) // null of any type converts
	return v
}
