package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/kubernetes"
)

// validateProviderConfig sends a provider configuration through the protocol server as
// Terraform's validate step does and returns every diagnostic.
func validateProviderConfig(t *testing.T, config map[string]any) []*tfprotov6.Diagnostic {
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
	val, err := protocolValue(schemas.Provider.ValueType(), config)
	if err != nil {
		t.Fatal(err)
	}
	dv, err := tfprotov6.NewDynamicValue(schemas.Provider.ValueType(), val)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.ValidateProviderConfig(ctx, &tfprotov6.ValidateProviderConfigRequest{Config: &dv})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Diagnostics
}

// The secrets every bad value below carries; none may appear in any diagnostic.
const (
	secretPassword = "PW-S3CRET"
	secretToken    = "TOK-S3CRET"
)

// secretBearingURLs are bad URLs (a bad port, a trailing space, a query, a fragment, no
// host, another scheme) each carrying a password or a token, with scheme as given.
func secretBearingURLs(scheme string) []string {
	return []string{
		scheme + "://u:" + secretPassword + "@127.0.0.1:8x8/",
		scheme + "://u:" + secretPassword + "@127.0.0.1:8000 ",
		scheme + "://u:" + secretPassword + "@127.0.0.1:8000",
		scheme + "://127.0.0.1:8000/metrics?token=" + secretToken,
		scheme + "://127.0.0.1:8000/metrics?" + secretToken,
		scheme + "://127.0.0.1:8000/metrics#access_token=" + secretToken,
		scheme + "://u:" + secretPassword + "@/metrics?token=" + secretToken,
		scheme + "://u:" + secretPassword + "@127.0.0.1:8000/v1?token=" + secretToken,
		"htp://u:" + secretPassword + "@127.0.0.1:8000/?token=" + secretToken,
		"u:" + secretPassword + "@127.0.0.1:8000",
		scheme + "://u:" + secretPassword + "@127.0.0.1:8000/metrics\x00",
	}
}

// urlAttribute is one URL-bearing attribute, driven through the provider's validation (or,
// where plan has no check, the domain call that first reads it). A new URL-bearing attribute
// joins the sweep by adding a row.
type urlAttribute struct {
	name   string
	scheme string
	// check returns every message the provider gives for the value.
	check func(t *testing.T, value string) []string
}

func benchmarkWith(attr string, value any) map[string]any {
	c := map[string]any{
		"endpoint":  "http://127.0.0.1:9",
		"model":     "m",
		"workloads": []any{map[string]any{"label": "a", "input_tokens": 8, "output_tokens": 8}},
		"slos":      []any{map[string]any{"percentile": 95, "threshold_ms": 100}},
	}
	c[attr] = value
	return c
}

func diagTexts(ds []*tfprotov6.Diagnostic) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Summary+": "+d.Detail)
	}
	return out
}

func urlAttributes() []urlAttribute {
	bench := func(attr string, list bool) func(*testing.T, string) []string {
		return func(t *testing.T, v string) []string {
			var val any = v
			if list {
				val = []any{v}
			}
			return diagTexts(validateResourceConfig(t, "llmserve_capacity_benchmark", benchmarkWith(attr, val)))
		}
	}
	return []urlAttribute{
		{"endpoint", "http", bench("endpoint", false)},
		{"replica_endpoints", "http", bench("replica_endpoints", true)},
		{"telemetry_endpoints", "http", bench("telemetry_endpoints", true)},
		{"docker_host (tcp)", "tcp", func(t *testing.T, v string) []string {
			return diagTexts(validateProviderConfig(t, map[string]any{"docker_host": v}))
		}},
		{"docker_host (ssh)", "ssh", func(t *testing.T, v string) []string {
			return diagTexts(validateProviderConfig(t, map[string]any{"docker_host": v}))
		}},
		// Plan does not check kubernetes.host; the client built from it at apply is the
		// first to quote it.
		{"kubernetes.host", "https", func(t *testing.T, v string) []string {
			cfg, err := kubernetes.Config{Host: v, Token: "t"}.RESTConfig()
			if err == nil {
				_, err = kubernetes.NewCluster(cfg)
			}
			if err != nil {
				return []string{err.Error()}
			}
			return nil
		}},
	}
}

// TestURLsNeverEchoSecrets sweeps every URL-bearing attribute with bad values that carry a
// password or a token: whatever else is wrong, no message repeats the secret.
func TestURLsNeverEchoSecrets(t *testing.T) {
	for _, a := range urlAttributes() {
		for _, v := range secretBearingURLs(a.scheme) {
			msgs := a.check(t, v)
			if len(msgs) == 0 {
				t.Errorf("%s = %q: accepted; want it refused", a.name, v)
			}
			for _, m := range msgs {
				if strings.Contains(m, secretPassword) || strings.Contains(m, secretToken) {
					t.Errorf("%s = %q: the message repeats the secret:\n%s", a.name, v, m)
				}
			}
		}
	}
}
