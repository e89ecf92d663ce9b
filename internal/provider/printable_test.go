package provider

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/enginetest"
)

// escape is a terminal escape sequence (clear screen) plus a C1 control: a string holding it
// would rewrite what a terminal shows when it reaches plan output, a log, a header or a file.
const escape = "\x1b[2J\u009b"

// Every string a user can configure reaches a header, a file, a container or a terminal, so
// each one refuses control characters at plan. The test finds every configurable string in
// the schemas (attributes, list elements, map keys and values, nested objects), sets it in a
// configuration that is otherwise valid, and expects an error. A new attribute fails the test
// until a base configuration below gives it a value, so no string is left out by accident.
func TestEveryConfigurableStringRefusesControlCharacters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := providerserver.NewProtocol6WithError(New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := srv.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	workloads := []any{map[string]any{"label": "a", "input_tokens": 8, "output_tokens": 8, "input_tokens_stddev": 1.0, "output_tokens_stddev": 1.0, "shared_prefix_tokens": 2}}
	bases := map[string][]map[string]any{
		"llmserve_inference_server": {
			{"name": "s", "image": "lmsysorg/sglang:v0.5.4", "engine": "sglang", "model": "/models/m", "revision": "main", "served_model_name": "m",
				"accelerator": "cuda", "gpu_ids": []any{"0"}, "extra_args": []any{"--log-level", "debug"}, "entrypoint": []any{"python3"},
				"engine_version": "0.5.4", "hub_token_wo": "hf", "api_key_wo": "k", "admin_api_key_wo": "a", "secrets_version": "1",
				"readiness_timeout": "30m", "speculative": map[string]any{"algorithm": "EAGLE", "steps": 3, "topk": 1, "draft_tokens": 4, "draft_model": "org/draft"},
				"bind_address": "127.0.0.1", "model_host_path": "/srv/m", "mounts": []any{map[string]any{"type": "bind", "source": "/srv/hf", "target": "/data"}},
				"environment": map[string]any{"A": "1"}, "labels": map[string]any{"team": "x"}, "group_add": []any{"video"},
				"network_mode": "bridge", "restart_policy": "no", "timeouts": map[string]any{"create": "40m", "update": "40m", "delete": "10m"}},
			{"name": "v", "image": "llmserve/llamacpp-vulkan:latest", "engine": "llamacpp", "model": "/models/m.gguf",
				"accelerator": "vulkan", "gpu_ids": []any{"0"}, "devices": []any{"/dev/dri/renderD128"}},
		},
		"llmserve_inference_deployment": {
			{"name": "d", "image": "llmserve/llamacpp:latest", "engine": "llamacpp", "model": "/models/m.gguf", "engine_version": "b8846",
				"accelerator_resource": "nvidia.com/gpu", "node_selector": map[string]any{"gpu": "yes"}, "environment": map[string]any{"A": "1"},
				"tolerations": []any{map[string]any{"key": "gpu", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}},
				"model_cache": map[string]any{"host_path": "/srv/models", "mount_path": "/models"},
				"labels":      map[string]any{"team": "x"}, "annotations": map[string]any{"example.com/a": "b"}, "service_type": "ClusterIP",
				"namespace": "default", "pod_access": "pod_network", "api_key_wo": "k", "hub_token_wo": "hf", "secrets_version": "1",
				"served_model_name": "m", "extra_args": []any{"--verbose"}, "entrypoint": []any{"llama-server"}, "accelerator": "cpu",
				"readiness_timeout": "30m", "speculative": map[string]any{"algorithm": "draft", "steps": 4, "draft_model": "/models/d.gguf"},
				"timeouts": map[string]any{"create": "40m", "update": "40m", "delete": "10m"}},
			{"name": "d", "image": "vllm/vllm-openai:v0.11.0", "engine": "vllm", "model": "org/m", "revision": "main",
				"model_cache": map[string]any{"claim_name": "hf-cache", "mount_path": "/models"}},
			{"name": "d", "image": "lmsysorg/sglang:v0.5.4", "engine": "sglang", "model": "org/m", "admin_api_key_wo": "a"},
			{"name": "d", "image": "lmsysorg/sglang:v0.5.20-xpu", "engine": "sglang", "model": "org/m", "accelerator": "xpu", "gpu_ids": []any{"0"},
				"accelerator_claim": map[string]any{"device_class": "gpu.intel.com", "selectors": []any{`device.driver == "gpu.intel.com"`}}},
		},
		"llmserve_capacity_benchmark": {
			{"endpoint": "http://127.0.0.1:9", "replica_endpoints": []any{"http://127.0.0.1:10"}, "model": "m", "api": "chat", "api_key": "k", "admin_api_key": "a",
				"workloads": workloads, "slos": []any{map[string]any{"metric": "time_to_first_token", "percentile": 95.0, "threshold_ms": 100.0, "comparison": "strictly_less_than"}},
				"trial":    map[string]any{"cache_flush": "auto", "stall_timeout": "90s", "request_timeout": "30m"},
				"triggers": map[string]any{"server": "x"}, "progress_file": "p.jsonl", "progress_log": "p.log", "records_directory": "records", "telemetry_endpoints": []any{"http://gpu-node:9400/metrics"},
				"timeouts": map[string]any{"create": "1h"}, "experiment": experimentBase(), "baseline": referenceDocument(t)},
			{"endpoint": "http://127.0.0.1:9", "model": "m", "workloads": workloads,
				"slos":    []any{map[string]any{"metric": "time_to_first_token", "percentile": 95.0, "threshold_ms": 100.0}},
				"arrival": map[string]any{"pattern": "poisson"}, "search": map[string]any{"rate": map[string]any{"min": 1.0, "max": 4.0}},
				"runner": map[string]any{"docker": map[string]any{"container": "qwen", "image": "llmserve-runner:x"}}},
			{"endpoint": "http://127.0.0.1:9", "model": "m", "workloads": []any{map[string]any{"label": "t", "trace": map[string]any{"file": writeReplayTrace(t, 20, 100), "block_tokens": 32}}},
				"slos":   []any{map[string]any{"metric": "time_to_first_token", "percentile": 95.0, "threshold_ms": 100.0}},
				"search": map[string]any{"speedup": map[string]any{"min": 1.0, "max": 4.0}}},
			{"endpoint": "http://qwen.llm.svc:8000", "model": "m", "workloads": workloads,
				"slos": []any{map[string]any{"metric": "time_to_first_token", "percentile": 95.0, "threshold_ms": 100.0}},
				"runner": map[string]any{"kubernetes": map[string]any{"namespace": "llm", "image": "ghcr.io/llmserve/runner:1",
					"node_selector": map[string]any{"pool": "gpu"}, "pod_access": "pod_network",
					"tolerations": []any{map[string]any{"key": "gpu", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}}}}},
			{"endpoint": "http://127.0.0.1:9", "model": "m", "workloads": []any{map[string]any{"label": "c", "input_tokens": 64, "output_tokens": 8,
				"conversation": map[string]any{"turns": 3, "think_time": map[string]any{"distribution": "exponential", "mean": "10s"}}}},
				"slos": []any{map[string]any{"metric": "time_to_first_token", "percentile": 95.0, "threshold_ms": 100.0}}},
		},
	}
	for typeName, configs := range bases {
		s := schemas.ResourceSchemas[typeName]
		if s == nil {
			t.Fatalf("no resource %s", typeName)
		}
		covered := map[string]bool{}
		for bi, base := range configs {
			if ds := validateResourceConfig(t, typeName, base); hasError(ds) {
				t.Fatalf("%s base %d is not valid: %q", typeName, bi, diagSummaries(ds))
			}
			for _, leaf := range stringLeaves(s.Block.Attributes, nil) {
				cfg, ok := withEscape(base, leaf)
				if !ok {
					continue // not set in this base
				}
				covered[leaf.String()] = true
				t.Run(fmt.Sprintf("%s/%d/%s", typeName, bi, leaf), func(t *testing.T) {
					if ds := validateResourceConfig(t, typeName, cfg.(map[string]any)); !hasError(ds) {
						t.Errorf("%s = %q planned without an error (diagnostics %q)", leaf, escape, diagSummaries(ds))
					}
				})
			}
		}
		for _, leaf := range stringLeaves(s.Block.Attributes, nil) {
			if !covered[leaf.String()] {
				t.Errorf("%s: %s is a configurable string no base configuration sets; give it a value above", typeName, leaf)
			}
		}
	}
}

// The provider block's strings too: paths, hosts and the token reach headers and error
// messages; PEM text keeps its line breaks and refuses every other control character.
func TestEveryProviderStringRefusesControlCharacters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := providerserver.NewProtocol6WithError(New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := srv.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	tlsm, err := enginetest.NewTLSMaterial()
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(edKey)
	sshKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	certDir := t.TempDir()
	for name, b := range map[string][]byte{"ca.pem": tlsm.CAPEM, "cert.pem": tlsm.ClientCertPEM, "key.pem": tlsm.ClientKeyPEM} {
		if err := os.WriteFile(filepath.Join(certDir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	bases := []map[string]any{
		{"docker_host": "tcp://gpu-host.example.com:2376", "ca_pem": string(tlsm.CAPEM), "cert_pem": string(tlsm.ClientCertPEM), "key_pem": string(tlsm.ClientKeyPEM),
			"kubernetes": map[string]any{"host": "https://203.0.113.10:6443", "token": "t", "client_certificate": string(tlsm.ClientCertPEM),
				"client_key": string(tlsm.ClientKeyPEM), "cluster_ca_certificate": string(tlsm.CAPEM)}},
		{"docker_host": "tcp://gpu-host.example.com:2376", "cert_path": certDir, "kubernetes": map[string]any{"config_path": "~/.kube/config", "config_context": "prod"}},
		{"docker_host": "ssh://deploy@gpu-host.example.com", "ssh_private_key": sshKey, "ssh_known_hosts_file": "/root/.ssh/known_hosts", "ssh_socket_path": "/run/docker.sock"},
	}
	attrs := slices.Clone(schemas.Provider.Block.Attributes)
	for _, b := range schemas.Provider.Block.BlockTypes {
		attrs = append(attrs, &tfprotov6.SchemaAttribute{Name: b.TypeName, Optional: true,
			NestedType: &tfprotov6.SchemaObject{Nesting: tfprotov6.SchemaObjectNestingModeSingle, Attributes: b.Block.Attributes}})
	}
	validate := func(t *testing.T, config map[string]any) []*tfprotov6.Diagnostic {
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
	covered := map[string]bool{}
	for bi, base := range bases {
		if ds := validate(t, base); hasError(ds) {
			t.Fatalf("provider base %d is not valid: %q", bi, diagSummaries(ds))
		}
		for _, leaf := range stringLeaves(attrs, nil) {
			cfg, ok := withEscape(base, leaf)
			if !ok {
				continue
			}
			covered[leaf.String()] = true
			t.Run(fmt.Sprintf("%d/%s", bi, leaf), func(t *testing.T) {
				if ds := validate(t, cfg.(map[string]any)); !hasError(ds) {
					t.Errorf("%s = …%q planned without an error (diagnostics %q)", leaf, escape, diagSummaries(ds))
				}
			})
		}
	}
	for _, leaf := range stringLeaves(attrs, nil) {
		if !covered[leaf.String()] {
			t.Errorf("provider: %s is a configurable string no base configuration sets; give it a value above", leaf)
		}
	}
}

// experimentBase sets every string of the benchmark's experiment block.
func experimentBase() map[string]any {
	return map[string]any{"image_tag": "img:1", "image_digest": "sha256:0", "model": "m", "checkpoint": "c", "hardware": "cpu",
		"driver": "d", "kernel": "k", "accelerator": "vulkan", "speculative_mode": map[string]any{"algorithm": "EAGLE"}}
}

func hasError(ds []*tfprotov6.Diagnostic) bool {
	return slices.ContainsFunc(ds, func(d *tfprotov6.Diagnostic) bool { return d.Severity == tfprotov6.DiagnosticSeverityError })
}

// leafStep is one step to a configurable string: an attribute, the first list element, or
// a map's value ("k") or key.
type leafStep struct {
	attr  string
	index bool
	value bool
	key   bool
}

type leaf []leafStep

func (l leaf) String() string {
	var b strings.Builder
	for _, s := range l {
		switch {
		case s.index:
			b.WriteString("[0]")
		case s.value:
			b.WriteString("[value]")
		case s.key:
			b.WriteString("[key]")
		default:
			if b.Len() > 0 {
				b.WriteString(".")
			}
			b.WriteString(s.attr)
		}
	}
	return b.String()
}

// stringLeaves lists every string a configuration can set below attrs.
func stringLeaves(attrs []*tfprotov6.SchemaAttribute, prefix leaf) []leaf {
	var out []leaf
	with := func(steps ...leafStep) leaf { return append(slices.Clone(prefix), steps...) }
	for _, a := range attrs {
		if a.Computed && !a.Optional && !a.Required {
			continue
		}
		at := leafStep{attr: a.Name}
		if nt := a.NestedType; nt != nil {
			switch nt.Nesting {
			case tfprotov6.SchemaObjectNestingModeSingle:
				out = append(out, stringLeaves(nt.Attributes, with(at))...)
			case tfprotov6.SchemaObjectNestingModeList, tfprotov6.SchemaObjectNestingModeSet:
				out = append(out, stringLeaves(nt.Attributes, with(at, leafStep{index: true}))...)
			}
			continue
		}
		switch typ := a.Type.(type) {
		case tftypes.List:
			if typ.ElementType.Is(tftypes.String) {
				out = append(out, with(at, leafStep{index: true}))
			}
		case tftypes.Set:
			if typ.ElementType.Is(tftypes.String) {
				out = append(out, with(at, leafStep{index: true}))
			}
		case tftypes.Map:
			if typ.ElementType.Is(tftypes.String) {
				out = append(out, with(at, leafStep{value: true}), with(at, leafStep{key: true}))
			}
		default:
			if a.Type.Is(tftypes.String) {
				out = append(out, with(at))
			}
		}
	}
	return out
}

// withEscape copies config with the escape appended to the string at l; false when config
// does not set it.
func withEscape(v any, l leaf) (any, bool) {
	if len(l) == 0 {
		s, ok := v.(string)
		return s + escape, ok
	}
	s := l[0]
	switch x := v.(type) {
	case map[string]any:
		out := maps.Clone(x)
		switch {
		case s.value || s.key:
			if len(x) == 0 {
				return nil, false
			}
			k := slices.Sorted(maps.Keys(x))[0]
			if s.key {
				delete(out, k)
				out[k+escape] = x[k]
			} else {
				nv, ok := withEscape(x[k], nil)
				if !ok {
					return nil, false
				}
				out[k] = nv
			}
			return out, true
		case s.attr != "":
			child, ok := x[s.attr]
			if !ok {
				return nil, false
			}
			nv, ok := withEscape(child, l[1:])
			if !ok {
				return nil, false
			}
			out[s.attr] = nv
			return out, true
		}
	case []any:
		if !s.index || len(x) == 0 {
			return nil, false
		}
		out := slices.Clone(x)
		nv, ok := withEscape(x[0], l[1:])
		if !ok {
			return nil, false
		}
		out[0] = nv
		return out, true
	}
	return nil, false
}

// referenceDocument is the reference results document, a valid baseline.
func referenceDocument(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "results", "testdata", "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
