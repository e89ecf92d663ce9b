package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// A flush through a Service reaches one replica. With replica_endpoints fed from the
// deployment, the benchmark waits for idle and flushes every pod before every trial, and
// each trial's results say per pod what was proven: two SGLang and two vLLM pods on the kwok
// control plane, each served by its engine's protocol double, which records the idle checks
// and flushes it answered.
func TestAccInferenceDeployment_perPodFlush(t *testing.T) {
	kubeconfig, cs := kubeTestEnv(t)
	engines := startKubeDoubles(t, cs, "default")
	for _, tc := range []struct{ engine, port string }{{"sglang", "30000"}, {"vllm", "8000"}} {
		t.Run(tc.engine, func(t *testing.T) {
			name := "flush-" + tc.engine
			dep, bench := "llmserve_inference_deployment.doubles", "llmserve_capacity_benchmark.per_pod"
			podURL := knownvalue.StringRegexp(regexp.MustCompile(`^http://10\.244\.0\.\d+:` + tc.port + `$`))
			var endpoints []string // the deployment's replica_endpoints, as the checks read them
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				CheckDestroy:             kubeCheckGone(cs, "default", name),
				Steps: []resource.TestStep{{
					Config: perPodFlushConfig(kubeconfig, name, tc.engine),
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(dep, tfjsonpath.New("replica_endpoints"), knownvalue.ListExact([]knownvalue.Check{podURL, podURL})),
						statecheck.CompareValuePairs(dep, tfjsonpath.New("replica_endpoints"), bench, tfjsonpath.New("replica_endpoints"), compare.ValuesSame()),
						statecheck.ExpectKnownValue(dep, tfjsonpath.New("replica_endpoints"), listInto{&endpoints}),
						// The grid runs two trials, one per level, each after its own flushes.
						statecheck.ExpectKnownValue(bench, tfjsonpath.New("results_json"), perPodProof{engines: engines, endpoints: &endpoints, trials: 2}),
					},
				}, {
					// Import reads the same pods back, in the same order.
					ResourceName: dep, ImportState: true, ImportStateId: "default/" + name,
					ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts"},
				}},
			})
		})
	}
}

func perPodFlushConfig(kubeconfig, name, engine string) string {
	return fmt.Sprintf(`
provider "llmserve" {
  kubernetes {
    config_path = %[1]q
  }
}

resource "llmserve_inference_deployment" "doubles" {
  name                 = %[2]q
  image                = "llmserve/%[3]s-double:kwok"
  engine               = %[3]q
  model                = "sim/qwen-test"
  replicas             = 2
  accelerator_resource = "nvidia.com/gpu"
  accelerator_count    = 1
  node_selector        = { type = "kwok" }
  tolerations          = [{ key = "kwok.x-k8s.io/node", operator = "Exists", effect = "NoSchedule" }]
  pod_access           = "pod_network"
  readiness_timeout    = "2m"
}

resource "llmserve_capacity_benchmark" "per_pod" {
  endpoint          = llmserve_inference_deployment.doubles.endpoint
  replica_endpoints = llmserve_inference_deployment.doubles.replica_endpoints
  model             = llmserve_inference_deployment.doubles.served_model_name
  workloads         = [{ label = "64 / 8", input_tokens = 64, output_tokens = 8 }]
  slos              = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 60000 }]
  search            = { concurrency_levels = [1, 2] }
  trial             = { warmup_requests = 2, measured_requests = 6, confirmation_trials = 1, cache_flush = "auto" }
  experiment        = llmserve_inference_deployment.doubles.experiment
}
`, kubeconfig, name, engine)
}

// listInto is a knownvalue check that keeps a list of strings for later checks.
type listInto struct{ dst *[]string }

func (l listInto) CheckValue(v any) error {
	items, ok := v.([]any)
	if !ok {
		return fmt.Errorf("want a list, got %T", v)
	}
	*l.dst = (*l.dst)[:0]
	for _, it := range items {
		s, ok := it.(string)
		if !ok {
			return fmt.Errorf("want strings, got %T", it)
		}
		*l.dst = append(*l.dst, s)
	}
	return nil
}

func (l listInto) String() string { return "a list of strings" }

// perPodProof checks results_json against the pods' doubles: every trial names every replica
// in replica_endpoints' order as idle and flushed, with its own prefix-cache counters; every
// pod's double answered a flush for every trial, each right after an idle check on that pod
// (except at most one: the flush at connect, through the Service, whose idle check went to
// whichever pod the Service picked).
type perPodProof struct {
	engines   *kubeEngines
	endpoints *[]string
	trials    int // the trials the run measured (the document reports those on the boundary's sides)
}

func (p perPodProof) String() string {
	return "results_json with every replica flushed and idle-checked before every trial"
}

func (p perPodProof) CheckValue(v any) error {
	raw, ok := v.(string)
	if !ok {
		return fmt.Errorf("want a string, got %T", v)
	}
	doc, err := results.Parse([]byte(raw))
	if err != nil {
		return fmt.Errorf("results_json does not parse: %w", err)
	}
	eps := *p.endpoints
	if len(eps) != 2 {
		return fmt.Errorf("replica_endpoints %q, want 2", eps)
	}
	trials := doc.Workloads[0].Trials()
	if len(trials) == 0 {
		return fmt.Errorf("no trials in results_json")
	}
	for _, tr := range trials {
		reps := tr.Trial.Replicas
		if len(reps) != len(eps) {
			return fmt.Errorf("trial at concurrency %d: %d replica checks, want %d", tr.Concurrency, len(reps), len(eps))
		}
		for i, c := range reps {
			if c.Endpoint != eps[i] || !c.IdleVerified || !c.CacheFlushed || c.PrefixCacheHitTokens == nil || c.PromptTokens == nil {
				return fmt.Errorf("trial at concurrency %d, replica %d: %+v; want %s idle, flushed, with its counters", tr.Concurrency, i+1, c, eps[i])
			}
		}
		if c := tr.Trial.Correctness; c.CachedPromptTokens == nil || !c.CachedPromptTokens.Known || c.RequestsCachedBeyondSharedPrefix != 0 {
			return fmt.Errorf("trial at concurrency %d: cached %+v, %d beyond the shared prefix; want a known cold cache", tr.Concurrency, c.CachedPromptTokens, c.RequestsCachedBeyondSharedPrefix)
		}
	}
	doubles := p.engines.doubles()
	unpreceded := 0
	for _, ep := range eps {
		d := doubles[ep]
		if d == nil {
			return fmt.Errorf("no engine double serves replica %s (doubles: %d)", ep, len(doubles))
		}
		n, afterIdle := d.flushes()
		if n < p.trials {
			return fmt.Errorf("pod %s (%s) answered %d flushes for %d trials", d.pod, ep, n, p.trials)
		}
		for i, ok := range afterIdle {
			if !ok {
				unpreceded++
				if i != 0 {
					return fmt.Errorf("pod %s: flush %d of %d did not follow an idle check on the pod", d.pod, i+1, n)
				}
			}
		}
	}
	if unpreceded > 1 {
		return fmt.Errorf("%d pods were flushed before any idle check; only the flush at connect may be", unpreceded)
	}
	return nil
}
