package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
)

// Conversions between Terraform values and the domain's plain ones, shared by the resources.

// fullyKnown is false when v or anything inside it is unknown.
func fullyKnown(v attr.Value) bool {
	if v.IsUnknown() {
		return false
	}
	var elems []attr.Value
	switch c := v.(type) {
	case types.List:
		elems = c.Elements()
	case types.Map:
		for _, e := range c.Elements() {
			elems = append(elems, e)
		}
	case types.Object:
		for _, e := range c.Attributes() {
			elems = append(elems, e)
		}
	}
	for _, e := range elems {
		if !fullyKnown(e) {
			return false
		}
	}
	return true
}

// attributePath is the Terraform path of a domain path: the domain names a setting as the
// user writes it, attribute by attribute, so the steps map one to one.
func attributePath(p attrpath.Path) path.Path {
	var out path.Path
	for i, s := range p {
		switch {
		case i == 0:
			out = path.Root(s.Name)
		case s.Kind == attrpath.ListIndex:
			out = out.AtListIndex(s.Index)
		case s.Kind == attrpath.MapKey:
			out = out.AtMapKey(s.Name)
		default:
			out = out.AtName(s.Name)
		}
	}
	return out
}

func orString(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

func enumStrings[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

func nullableString(v string) types.String {
	if v == "" {
		return types.StringNull()
	}
	return types.StringValue(v)
}

func nullableInt(v int) types.Int64 {
	if v == 0 {
		return types.Int64Null()
	}
	return types.Int64Value(int64(v))
}

// stringList is vs as a list: nil is unset (null), and an empty list was configured as []
// and is restored as such, so an import plans no replacement.
func stringList(ctx context.Context, vs []string, diags *diag.Diagnostics) types.List {
	if vs == nil {
		return types.ListNull(types.StringType)
	}
	l, d := types.ListValueFrom(ctx, types.StringType, vs)
	diags.Append(d...)
	return l
}

// stringMap is vs as a map: nil is unset (null), empty was configured as {}.
func stringMap(ctx context.Context, vs map[string]string, diags *diag.Diagnostics) types.Map {
	if vs == nil {
		return types.MapNull(types.StringType)
	}
	v, d := types.MapValueFrom(ctx, types.StringType, vs)
	diags.Append(d...)
	return v
}

// objectAttrTypes are the attribute types of a nested attribute's object (of its elements,
// for a list), read from the schema so that they are written once.
func objectAttrTypes(a interface{ GetType() attr.Type }) map[string]attr.Type {
	t := a.GetType()
	if l, ok := t.(attr.TypeWithElementType); ok {
		t = l.ElementType()
	}
	return t.(attr.TypeWithAttributeTypes).AttributeTypes()
}

// stringsOf reads a list of strings into *out as ElementsAs does, except that a null element,
// which ElementsAs reports as a Value Conversion Error addressed to the provider's
// developer, is an error at that element saying what to write instead.
func stringsOf(ctx context.Context, at path.Path, l types.List, out *[]string) diag.Diagnostics {
	var diags diag.Diagnostics
	for i, e := range l.Elements() {
		if e.IsNull() {
			diags.Append(nullElement(at.AtListIndex(i), "list"))
		}
	}
	if diags.HasError() {
		return diags
	}
	return l.ElementsAs(ctx, out, false)
}

// stringMapOf is stringsOf for a map of strings.
func stringMapOf(ctx context.Context, at path.Path, m types.Map, out *map[string]string) diag.Diagnostics {
	var diags diag.Diagnostics
	for _, k := range slices.Sorted(maps.Keys(m.Elements())) {
		if m.Elements()[k].IsNull() {
			diags.Append(nullElement(at.AtMapKey(k), "map"))
		}
	}
	if diags.HasError() {
		return diags
	}
	return m.ElementsAs(ctx, out, false)
}

func nullElement(at path.Path, kind string) diag.Diagnostic {
	return diag.NewAttributeErrorDiagnostic(at, "Null "+kind+" element",
		fmt.Sprintf("%s is null: every element of this %s must be a string. Remove the element, or drop nulls where the %s is built (compact() for a list, "+
			"a for expression with an if clause for a map)", at, kind, kind))
}
