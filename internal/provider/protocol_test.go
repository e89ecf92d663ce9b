package provider

import (
	"context"
	"fmt"
	"math/big"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// validateResourceConfig sends a configuration, written as Go values, through the provider's
// protocol server as Terraform's validate step does, and returns every diagnostic. Unlike the
// CLI-driven tests it sees warnings and can count diagnostics. Attributes left out are null.
func validateResourceConfig(t *testing.T, typeName string, config map[string]any) []*tfprotov6.Diagnostic {
	t.Helper()
	ctx := context.Background()
	srv, err := providerserver.NewProtocol6WithError(New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := srv.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	s, ok := schemas.ResourceSchemas[typeName]
	if !ok {
		t.Fatalf("no resource %s", typeName)
	}
	val, err := protocolValue(s.ValueType(), config)
	if err != nil {
		t.Fatal(err)
	}
	dv, err := tfprotov6.NewDynamicValue(s.ValueType(), val)
	if err != nil {
		t.Fatal(err)
	}
	// As Terraform >= 1.11, which sends write-only attributes.
	resp, err := srv.ValidateResourceConfig(ctx, &tfprotov6.ValidateResourceConfigRequest{TypeName: typeName, Config: &dv,
		ClientCapabilities: &tfprotov6.ValidateResourceConfigClientCapabilities{WriteOnlyAttributesAllowed: true}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Diagnostics
}

// protocolValue builds a value of typ from Go values: map[string]any for objects (missing
// attributes null) and maps, []any for lists and sets, string, bool, int and float64, and
// tftypes.UnknownValue for a value known only at apply.
func protocolValue(typ tftypes.Type, v any) (tftypes.Value, error) {
	if v == nil || v == tftypes.UnknownValue {
		return tftypes.NewValue(typ, v), nil
	}
	switch typ := typ.(type) {
	case tftypes.Object:
		in, ok := v.(map[string]any)
		if !ok {
			return tftypes.Value{}, fmt.Errorf("object wants map[string]any, got %T", v)
		}
		out := map[string]tftypes.Value{}
		for name, at := range typ.AttributeTypes {
			av, err := protocolValue(at, in[name])
			if err != nil {
				return tftypes.Value{}, fmt.Errorf("%s: %w", name, err)
			}
			out[name] = av
		}
		for name := range in {
			if _, ok := typ.AttributeTypes[name]; !ok {
				return tftypes.Value{}, fmt.Errorf("no attribute %q", name)
			}
		}
		return tftypes.NewValue(typ, out), nil
	case tftypes.List, tftypes.Set:
		var elem tftypes.Type
		if l, ok := typ.(tftypes.List); ok {
			elem = l.ElementType
		} else {
			elem = typ.(tftypes.Set).ElementType
		}
		var out []tftypes.Value
		for i, e := range v.([]any) {
			ev, err := protocolValue(elem, e)
			if err != nil {
				return tftypes.Value{}, fmt.Errorf("[%d]: %w", i, err)
			}
			out = append(out, ev)
		}
		return tftypes.NewValue(typ, out), nil
	case tftypes.Map:
		out := map[string]tftypes.Value{}
		for k, e := range v.(map[string]any) {
			ev, err := protocolValue(typ.ElementType, e)
			if err != nil {
				return tftypes.Value{}, err
			}
			out[k] = ev
		}
		return tftypes.NewValue(typ, out), nil
	}
	switch x := v.(type) {
	case int:
		return tftypes.NewValue(typ, big.NewFloat(float64(x))), nil
	case float64:
		return tftypes.NewValue(typ, big.NewFloat(x)), nil
	}
	return tftypes.NewValue(typ, v), nil
}

// diagSummaries lists "severity: summary" of each diagnostic, for test messages.
func diagSummaries(ds []*tfprotov6.Diagnostic) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		sev := "warning"
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			sev = "error"
		}
		out = append(out, sev+": "+d.Summary+": "+d.Detail)
	}
	return out
}
