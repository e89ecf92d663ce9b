package provider

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/kubernetes"
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
			podURL := knownvalue.StringRegexp(regexp.MustCompile(`^http://127\.0\.100\.\d+:` + tc.port + `$`))
			var endpoints []string // the deployment's replica_endpoints, as the checks read them
			var moved []string     // the replica_endpoints expected after one pod is replaced
			gens := 0              // the generations the doubles had answered before the second apply
			sameResults := statecheck.CompareValue(compare.ValuesSame())
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
						sameResults.AddStateValue(bench, tfjsonpath.New("results_json")),
					},
				}, {
					// A pod restarts and comes back at another address. The refresh reads the new
					// pod set; the benchmark takes the new list in place (its documented promise:
					// changing replica_endpoints does not re-run it), keeps its result and sends
					// no request to any replica.
					PreConfig: func() {
						moved = replacePod(t, cs, engines, name, endpoints)
						gens = engines.generations()
					},
					Config: perPodFlushConfig(kubeconfig, name, tc.engine),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(dep, plancheck.ResourceActionNoop),
						plancheck.ExpectResourceAction(bench, plancheck.ResourceActionUpdate),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(dep, tfjsonpath.New("replica_endpoints"), listEquals{&moved}),
						statecheck.CompareValuePairs(dep, tfjsonpath.New("replica_endpoints"), bench, tfjsonpath.New("replica_endpoints"), compare.ValuesSame()),
						sameResults.AddStateValue(bench, tfjsonpath.New("results_json")),
					},
					Check: func(*terraform.State) error {
						if n := engines.generations(); n != gens {
							return fmt.Errorf("the doubles answered %d generations during the apply that only changed replica_endpoints; want none", n-gens)
						}
						return nil
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

// replacePod deletes the deployment's first pod (by replica_endpoints' order, which is pod-name
// order) and waits until its replacement is Running and Ready at a new pod IP, with an engine
// double answering there. It returns the replica_endpoints the deployment should then read: the
// kept pod's and the new pod's base URLs, in pod-name order.
func replacePod(t *testing.T, cs k8s.Interface, engines *kubeEngines, name string, before []string) []string {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: kubernetes.InstanceLabel + "=" + name}
	pods, err := cs.CoreV1().Pods("default").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 || len(before) != 2 {
		t.Fatalf("want 2 pods and 2 replica_endpoints before the restart, got %d pods, %q", len(pods.Items), before)
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	gone, kept := pods.Items[0], pods.Items[1].Name
	port := before[0][strings.LastIndex(before[0], ":")+1:]
	// kwok hands a freed pod IP to the next pod it starts. So that the replacement really
	// moves, the nodes are cordoned while the pod goes, a bare placeholder pod (no llmserve
	// labels: no engine double, not the deployment's) takes the freed IP, and only then may
	// the replacement be scheduled.
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
	if err != nil {
		t.Fatal(err)
	}
	cordon := func(on bool) {
		for _, n := range nodes.Items {
			patch := fmt.Appendf(nil, `{"spec":{"unschedulable":%t}}`, on)
			if _, err := cs.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Errorf("node %s: unschedulable=%t: %v", n.Name, on, err)
			}
		}
	}
	cordon(true)
	defer cordon(false)
	zero := int64(0)
	if err := cs.CoreV1().Pods("default").Delete(ctx, gone.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		if _, err := cs.CoreV1().Pods("default").Get(ctx, gone.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s still there 90 s after its deletion", gone.Name)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Other IPs may be free too (pods of earlier tests): placeholders take them until one
	// holds the deleted pod's.
	for i := 0; ; i++ {
		holder := fmt.Sprintf("%s-ip-holder-%d", name, i)
		t.Cleanup(func() {
			_ = cs.CoreV1().Pods("default").Delete(context.Background(), holder, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		})
		_, err = cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: holder},
			Spec: corev1.PodSpec{NodeName: gone.Spec.NodeName, Containers: []corev1.Container{{Name: "hold", Image: "pause"}},
				Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ip := ""
		for ip == "" {
			if p, err := cs.CoreV1().Pods("default").Get(ctx, holder, metav1.GetOptions{}); err == nil {
				ip = p.Status.PodIP
			}
			if time.Now().After(deadline) {
				t.Fatalf("placeholder pod %s got no IP in 90 s", holder)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if ip == gone.Status.PodIP {
			t.Logf("placeholder pod %s holds %s, the deleted pod's IP", holder, ip)
			break
		}
		if i == 9 {
			t.Fatalf("10 placeholder pods, none got %s, the deleted pod's IP", gone.Status.PodIP)
		}
	}
	cordon(false)
	for {
		pods, err := cs.CoreV1().Pods("default").List(ctx, sel)
		if err == nil {
			var ready []corev1.Pod
			for _, p := range pods.Items {
				if p.Name != gone.Name && p.DeletionTimestamp == nil && p.Status.PodIP != "" && podReady(p) {
					ready = append(ready, p)
				}
			}
			if len(ready) == 2 {
				slices.SortFunc(ready, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
				var want []string
				fresh := ""
				for _, p := range ready {
					u := "http://" + net.JoinHostPort(p.Status.PodIP, port)
					want = append(want, u)
					if p.Name != kept {
						fresh = u
					}
				}
				// kwok could hand the freed IP to the replacement; the test needs a pod that moved.
				if _, served := engines.doubles()[fresh]; served && !slices.Contains(before, fresh) {
					t.Logf("pod %s (%s) replaced: replica_endpoints %q -> %q", gone.Name, before[0], before, want)
					return want
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s deleted: no ready replacement at a new pod IP with an engine double after 90 s (%s)", gone.Name, engines)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// listEquals is a knownvalue check against a list of strings known only when the step runs.
type listEquals struct{ want *[]string }

func (l listEquals) CheckValue(v any) error {
	var got []string
	if err := (listInto{&got}).CheckValue(v); err != nil {
		return err
	}
	if !slices.Equal(got, *l.want) {
		return fmt.Errorf("got %q, want %q", got, *l.want)
	}
	return nil
}

func (l listEquals) String() string { return fmt.Sprintf("%q", *l.want) }

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
