package provider

import (
	"context"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
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

// problemPath turns a domain Problem.Field ("speculative.steps", "mounts[1].target",
// `environment["HF_TOKEN"]`) into the attribute path the diagnostic points at.
func problemPath(field string) path.Path {
	var p path.Path
	first := true
	for field != "" {
		var step string
		switch {
		case strings.HasPrefix(field, "["):
			end := strings.Index(field, "]")
			if end < 0 {
				return p
			}
			step, field = field[1:end], field[end+1:]
			if key, err := strconv.Unquote(step); err == nil {
				p = p.AtMapKey(key)
			} else if i, err := strconv.Atoi(step); err == nil {
				p = p.AtListIndex(i)
			}
			continue
		case strings.HasPrefix(field, "."):
			field = field[1:]
			continue
		}
		end := strings.IndexAny(field, ".[")
		if end < 0 {
			end = len(field)
		}
		step, field = field[:end], field[end:]
		if first {
			p, first = path.Root(step), false
		} else {
			p = p.AtName(step)
		}
	}
	return p
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
