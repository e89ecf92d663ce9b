package provider

import (
	"context"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// ProtocolServer serves the provider over protocol 6, as providerserver does, with the
// framework's number conversion errors rewritten into messages a user can act on.
func ProtocolServer(version string) func() (tfprotov6.ProviderServer, error) {
	return func() (tfprotov6.ProviderServer, error) {
		s, err := providerserver.NewProtocol6WithError(New(version)())()
		if err != nil {
			return nil, err
		}
		return &readableServer{ProviderServer: s}, nil
	}
}

// readableServer fixes one class of framework diagnostics. A fractional or huge number
// given for a whole-number attribute (input_tokens = 1.5, max_concurrency = 1e30) fails in
// the framework's conversion before any validator runs, with a message that formats a
// *big.Float with %s ("Value %!s(*big.Float=1.5) is not an integer") and blames the
// provider. The framework offers no hook for it, so the responses are rewritten here.
type readableServer struct {
	tfprotov6.ProviderServer

	// The schemas, read once, to decode a configuration and find the number a framework
	// diagnostic is about when it only points at the enclosing list or object.
	schemaOnce sync.Once
	schemas    *tfprotov6.GetProviderSchemaResponse
}

// configLocator finds, in the configuration the request carried, the attribute under at
// that holds value, so the message can name workloads[0].input_tokens rather than
// workloads. It returns at when it cannot tell.
func (s *readableServer) configLocator(ctx context.Context, schema func(*tfprotov6.GetProviderSchemaResponse) *tfprotov6.Schema, config *tfprotov6.DynamicValue) locator {
	return func(at *tftypes.AttributePath, value string) *tftypes.AttributePath {
		s.schemaOnce.Do(func() { s.schemas, _ = s.ProviderServer.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{}) })
		if s.schemas == nil || config == nil {
			return at
		}
		sch := schema(s.schemas)
		if sch == nil {
			return at
		}
		v, err := config.Unmarshal(sch.ValueType())
		if err != nil {
			return at
		}
		var found *tftypes.AttributePath
		_ = tftypes.Walk(v, func(p *tftypes.AttributePath, v tftypes.Value) (bool, error) {
			if found != nil {
				return false, nil
			}
			if !v.Type().Is(tftypes.Number) || !v.IsKnown() || v.IsNull() || !hasPrefix(p, at) {
				return true, nil
			}
			var f *big.Float
			if v.As(&f) == nil && f != nil && fmt.Sprintf("%v", f) == value {
				found = p
			}
			return true, nil
		})
		if found == nil {
			return at
		}
		return found
	}
}

func hasPrefix(p, prefix *tftypes.AttributePath) bool {
	if prefix == nil {
		return true
	}
	ps, pre := p.Steps(), prefix.Steps()
	if len(pre) > len(ps) {
		return false
	}
	for i := range pre {
		if !ps[i].Equal(pre[i]) {
			return false
		}
	}
	return true
}

type locator func(at *tftypes.AttributePath, value string) *tftypes.AttributePath

func (s *readableServer) ValidateProviderConfig(ctx context.Context, req *tfprotov6.ValidateProviderConfigRequest) (*tfprotov6.ValidateProviderConfigResponse, error) {
	resp, err := s.ProviderServer.ValidateProviderConfig(ctx, req)
	if resp != nil {
		resp.Diagnostics = readableDiagnostics(resp.Diagnostics, s.configLocator(ctx, func(r *tfprotov6.GetProviderSchemaResponse) *tfprotov6.Schema { return r.Provider }, req.Config))
	}
	return resp, err
}

func (s *readableServer) ConfigureProvider(ctx context.Context, req *tfprotov6.ConfigureProviderRequest) (*tfprotov6.ConfigureProviderResponse, error) {
	resp, err := s.ProviderServer.ConfigureProvider(ctx, req)
	if resp != nil {
		resp.Diagnostics = readableDiagnostics(resp.Diagnostics, nil)
	}
	return resp, err
}

func (s *readableServer) ValidateResourceConfig(ctx context.Context, req *tfprotov6.ValidateResourceConfigRequest) (*tfprotov6.ValidateResourceConfigResponse, error) {
	resp, err := s.ProviderServer.ValidateResourceConfig(ctx, req)
	if resp != nil {
		resp.Diagnostics = readableDiagnostics(resp.Diagnostics, s.configLocator(ctx, func(r *tfprotov6.GetProviderSchemaResponse) *tfprotov6.Schema { return r.ResourceSchemas[req.TypeName] }, req.Config))
	}
	return resp, err
}

func (s *readableServer) ValidateDataResourceConfig(ctx context.Context, req *tfprotov6.ValidateDataResourceConfigRequest) (*tfprotov6.ValidateDataResourceConfigResponse, error) {
	resp, err := s.ProviderServer.ValidateDataResourceConfig(ctx, req)
	if resp != nil {
		resp.Diagnostics = readableDiagnostics(resp.Diagnostics, s.configLocator(ctx, func(r *tfprotov6.GetProviderSchemaResponse) *tfprotov6.Schema {
			return r.DataSourceSchemas[req.TypeName]
		}, req.Config))
	}
	return resp, err
}

func (s *readableServer) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	resp, err := s.ProviderServer.PlanResourceChange(ctx, req)
	if resp != nil {
		resp.Diagnostics = readableDiagnostics(resp.Diagnostics, nil)
	}
	return resp, err
}

func (s *readableServer) ApplyResourceChange(ctx context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	resp, err := s.ProviderServer.ApplyResourceChange(ctx, req)
	if resp != nil {
		resp.Diagnostics = readableDiagnostics(resp.Diagnostics, nil)
	}
	return resp, err
}

func (s *readableServer) ReadDataSource(ctx context.Context, req *tfprotov6.ReadDataSourceRequest) (*tfprotov6.ReadDataSourceResponse, error) {
	resp, err := s.ProviderServer.ReadDataSource(ctx, req)
	if resp != nil {
		resp.Diagnostics = readableDiagnostics(resp.Diagnostics, nil)
	}
	return resp, err
}

// bigFloatRE matches the framework's conversion errors for Number values.
var bigFloatRE = regexp.MustCompile(`Value %!s\(\*big\.Float=([^)]*)\) (is not an integer|cannot be represented as a 64-bit integer|cannot be represented as a 64-bit floating point)`)

// readableDiagnostics rewrites the framework's number conversion errors and drops the copies
// the framework reports for the same value without an attribute path (from reading the whole
// configuration), so each bad number is reported once, at its attribute.
func readableDiagnostics(diags []*tfprotov6.Diagnostic, locate locator) []*tfprotov6.Diagnostic {
	type key struct{ value, kind string }
	located := map[key]bool{}
	matches := make([][]string, len(diags))
	for i, d := range diags {
		if d == nil {
			continue
		}
		if m := bigFloatRE.FindStringSubmatch(d.Detail); m != nil {
			matches[i] = m
			if locate != nil {
				d.Attribute = locate(d.Attribute, m[1])
			}
			if d.Attribute != nil && len(d.Attribute.Steps()) > 0 {
				located[key{m[1], m[2]}] = true
			}
		}
	}
	out := diags[:0]
	seen := map[string]bool{}
	for i, d := range diags {
		m := matches[i]
		if m == nil {
			out = append(out, d)
			continue
		}
		at := attributePathString(d.Attribute)
		if at == "" && located[key{m[1], m[2]}] {
			continue
		}
		if seen[at+"\x00"+m[1]+"\x00"+m[2]] {
			continue
		}
		seen[at+"\x00"+m[1]+"\x00"+m[2]] = true
		subject := "A number in this configuration"
		if at != "" {
			subject = at
		}
		switch m[2] {
		case "is not an integer":
			d.Summary = "Not a whole number"
			d.Detail = fmt.Sprintf("%s must be a whole number, got %s. Remove the fractional part.", subject, m[1])
		default:
			d.Summary = "Number out of range"
			d.Detail = fmt.Sprintf("%s is %s, far outside what it accepts; give a value within the range its documentation states.", subject, m[1])
		}
		out = append(out, d)
	}
	return out
}

// attributePathString writes a protocol attribute path as Terraform users write it:
// workloads[0].input_tokens, environment["HF_TOKEN"].
func attributePathString(p *tftypes.AttributePath) string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	for _, step := range p.Steps() {
		switch s := step.(type) {
		case tftypes.AttributeName:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(string(s))
		case tftypes.ElementKeyInt:
			fmt.Fprintf(&b, "[%d]", int64(s))
		case tftypes.ElementKeyString:
			fmt.Fprintf(&b, "[%q]", string(s))
		default:
			b.WriteString("[*]")
		}
	}
	return b.String()
}

// CallFunction gives the framework a null it can decode. OpenTofu (1.12) sends a null
// function argument as a DynamicValue with neither msgpack nor JSON bytes, which the
// framework refuses with "This is always an issue in terraform-plugin-framework" before the
// function runs, so replicas_for(users, null, …) could not say why null is not a capacity.
// A msgpack nil decodes as the null of any type.
func (s *readableServer) CallFunction(ctx context.Context, req *tfprotov6.CallFunctionRequest) (*tfprotov6.CallFunctionResponse, error) {
	if req != nil {
		for i, arg := range req.Arguments {
			if arg == nil || (len(arg.MsgPack) == 0 && len(arg.JSON) == 0) {
				req.Arguments[i] = &tfprotov6.DynamicValue{MsgPack: []byte{msgpackNil}}
			}
		}
	}
	return s.ProviderServer.CallFunction(ctx, req)
}

// msgpackNil is MessagePack's encoding of nil.
const msgpackNil = 0xc0
