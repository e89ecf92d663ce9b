package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/kubernetes"
)

const kubeAccResource = "llmserve_inference_deployment.tiny"

// kubeAccConfig is a llama.cpp deployment of the tiny model on the kwok nodes' fake GPUs.
// pod_network: the direct path these tests share with the per-pod flush; the API server's
// pod proxy (the default) is what TestAccInferenceDeployment_runner goes through.
func kubeAccConfig(kubeconfig, name string, replicas, gpus int, extra string) string {
	return fmt.Sprintf(`
provider "llmserve" {
  kubernetes {
    config_path = %[1]q
  }
}

resource "llmserve_inference_deployment" "tiny" {
  name                 = %[2]q
  image                = "llmserve/llamacpp:kwok"
  engine               = "llamacpp"
  model                = "/models/tiny-llama.gguf"
  served_model_name    = "tiny"
  max_running_requests = 2
  context_length       = 4096
  extra_args           = ["--threads", "1"]
  replicas             = %[3]d
  accelerator_resource = "nvidia.com/gpu"
  accelerator_count    = %[4]d
  node_selector        = { type = "kwok" }
  tolerations          = [{ key = "kwok.x-k8s.io/node", operator = "Exists", effect = "NoSchedule" }]
  shm_size_mb          = 64
  model_cache          = { host_path = "/var/cache/llmserve-models", mount_path = "/models", read_only = true }
  labels               = { team = "inference" }
  annotations          = { "example.com/owner" = "acc" }
  pod_access           = "pod_network"
  readiness_timeout    = "2m"
}
%[5]s`, kubeconfig, name, replicas, gpus, extra)
}

func TestAccInferenceDeployment_lifecycle(t *testing.T) {
	kubeconfig, cs := kubeTestEnv(t)
	engines := startKubeEngines(t, cs, "default")
	ctx := context.Background()
	const name = "tiny"
	// A bystander with the deployment's name but another kind: destroy must leave it.
	bystander := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string]string{"keep": "me"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, bystander, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().ConfigMaps("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})

	benchmark := `
resource "llmserve_capacity_benchmark" "through_service" {
  endpoint   = llmserve_inference_deployment.tiny.endpoint
  model      = "tiny"
  api        = "completions"
  workloads  = [{ label = "64 / 8", input_tokens = 64, output_tokens = 8 }]
  slos       = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 60000 }]
  search     = { min_concurrency = 1, max_concurrency = 2 }
  trial      = { warmup_requests = 1, measured_requests = 4, confirmation_trials = 1, cache_flush = "none" }
  experiment = llmserve_inference_deployment.tiny.experiment
}
`
	endpointRE := regexp.MustCompile(`^http://127\.0\.96\.\d+:8080$`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             kubeCheckGone(cs, "default", name),
		Steps: []resource.TestStep{
			{
				Config: kubeAccConfig(kubeconfig, name, 1, 1, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(kubeAccResource, tfjsonpath.New("id"), knownvalue.StringExact("default/tiny")),
					statecheck.ExpectKnownValue(kubeAccResource, tfjsonpath.New("endpoint"), knownvalue.StringRegexp(endpointRE)),
					statecheck.ExpectKnownValue(kubeAccResource, tfjsonpath.New("service_port"), knownvalue.Int64Exact(8080)),
					statecheck.ExpectKnownValue(kubeAccResource, tfjsonpath.New("command"), knownvalue.ListPartial(map[int]knownvalue.Check{
						0: knownvalue.StringExact("llama-server"), 1: knownvalue.StringExact("--model"), 2: knownvalue.StringExact("/models/tiny-llama.gguf"),
					})),
					// llama-server reports its build and the context each slot runs with: 4096 / 2 slots.
					statecheck.ExpectKnownValue(kubeAccResource, tfjsonpath.New("server_version"), knownvalue.StringRegexp(regexp.MustCompile(`.+`))),
					statecheck.ExpectKnownValue(kubeAccResource, tfjsonpath.New("experiment").AtMapKey("context_length"), knownvalue.Int64Exact(2048)),
				},
				Check: func(*terraform.State) error { return kubeCheckObjects(ctx, cs, name, 1, engines) },
			},
			{
				// In place: one more replica, which must generate before apply returns.
				Config: kubeAccConfig(kubeconfig, name, 2, 1, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(kubeAccResource, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(kubeAccResource, tfjsonpath.New("replicas"), knownvalue.Int64Exact(2)),
				},
				Check: func(*terraform.State) error { return kubeCheckObjects(ctx, cs, name, 2, engines) },
			},
			{
				// Drift: scaled down by hand; the plan restores the configured count in place.
				PreConfig: func() { kubeScale(t, cs, name, 1) },
				Config:    kubeAccConfig(kubeconfig, name, 2, 1, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(kubeAccResource, plancheck.ResourceActionUpdate),
				}},
				Check: func(*terraform.State) error { return kubeCheckObjects(ctx, cs, name, 2, engines) },
			},
			{
				// Drift: the Service deleted by hand is re-created.
				PreConfig: func() {
					if err := cs.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config: kubeAccConfig(kubeconfig, name, 2, 1, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(kubeAccResource, plancheck.ResourceActionCreate),
				}},
				Check: func(*terraform.State) error { return kubeCheckObjects(ctx, cs, name, 2, engines) },
			},
			{
				ResourceName:            kubeAccResource,
				ImportState:             true,
				ImportStateId:           "default/tiny",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
			{
				// Changing the pod template is a replacement the plan shows.
				Config: kubeAccConfig(kubeconfig, name, 2, 2, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(kubeAccResource, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: func(*terraform.State) error { return kubeCheckObjects(ctx, cs, name, 2, engines) },
			},
			{
				// A capacity benchmark of the replicated service, through its endpoint.
				Config: kubeAccConfig(kubeconfig, name, 2, 2, benchmark),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.through_service", tfjsonpath.New("maximum_passing_concurrency").AtMapKey("64 / 8"), knownvalue.Int64Exact(2)),
				},
				// The results say what was measured: two replicas behind the Service.
				Check: func(s *terraform.State) error {
					var doc struct {
						Experiment struct {
							Replicas int `json:"replicas"`
						} `json:"experiment"`
					}
					raw := s.RootModule().Resources["llmserve_capacity_benchmark.through_service"].Primary.Attributes["results_json"]
					if err := json.Unmarshal([]byte(raw), &doc); err != nil {
						return err
					}
					if doc.Experiment.Replicas != 2 {
						return fmt.Errorf("results experiment.replicas = %d, want 2", doc.Experiment.Replicas)
					}
					return nil
				},
			},
		},
	})
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Errorf("destroy removed a ConfigMap it did not create: %v", err)
	}
}

func TestAccInferenceDeployment_failingRollout(t *testing.T) {
	kubeconfig, cs := kubeTestEnv(t)
	startKubeEngines(t, cs, "default")
	const name = "toobig"
	cfg := kubeAccConfig(kubeconfig, name, 1, 8, "")
	cfg = regexp.MustCompile(`readiness_timeout    = "2m"`).ReplaceAllString(cfg, `readiness_timeout    = "15s"`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             kubeCheckGone(cs, "default", name),
		Steps: []resource.TestStep{{
			// No kwok node has 8 fake GPUs: the scheduler says so, and the error quotes it.
			Config:      cfg,
			ExpectError: regexp.MustCompile(`(?s)did not roll out.*Pod toobig-.*Unschedulable.*Insufficient nvidia\.com/gpu.*the engine container never started`),
		}},
	})
	if err := kubeCheckGone(cs, "default", name)(nil); err != nil {
		t.Errorf("a failed create left objects behind: %v", err)
	}
}

// kubeCheckObjects checks what create/update left in the cluster: the Deployment with its
// replicas ready, the Service, no Secret (no write-only values given), a real engine per
// replica, and the provider's field manager.
func kubeCheckObjects(ctx context.Context, cs k8s.Interface, name string, replicas int32, engines *kubeEngines) error {
	dep, err := cs.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if *dep.Spec.Replicas != replicas || dep.Status.ReadyReplicas != replicas {
		return fmt.Errorf("deployment: %d replicas, %d ready; want %d", *dep.Spec.Replicas, dep.Status.ReadyReplicas, replicas)
	}
	managers := map[string]bool{}
	for _, f := range dep.ManagedFields {
		managers[f.Manager] = true
	}
	if !managers[kubernetes.FieldManager] {
		return fmt.Errorf("deployment fields are not applied by %q: %v", kubernetes.FieldManager, managers)
	}
	tmpl := dep.Spec.Template.Spec
	if l := tmpl.Containers[0].Resources.Limits["nvidia.com/gpu"]; l.IsZero() {
		return fmt.Errorf("pods request no nvidia.com/gpu: %v", tmpl.Containers[0].Resources)
	}
	if tmpl.Containers[0].StartupProbe == nil || tmpl.Containers[0].StartupProbe.HTTPGet.Path != "/health" {
		return fmt.Errorf("no startup probe on /health: %+v", tmpl.Containers[0].StartupProbe)
	}
	var shm bool
	for _, v := range tmpl.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory {
			shm = true
		}
	}
	if !shm {
		return fmt.Errorf("no memory-backed emptyDir for /dev/shm: %+v", tmpl.Volumes)
	}
	if _, err := cs.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{}); err != nil {
		return err
	}
	if _, err := cs.CoreV1().Secrets("default").Get(ctx, kubernetes.SecretName(name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		return fmt.Errorf("a Secret exists without write-only values (err %v)", err)
	}
	if n := engines.running(); n != int(replicas) {
		return fmt.Errorf("want %d engines running on pod IPs, have %s", replicas, engines)
	}
	return nil
}

func kubeScale(t *testing.T, cs k8s.Interface, name string, replicas int32) {
	t.Helper()
	ctx := context.Background()
	s, err := cs.AppsV1().Deployments("default").GetScale(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Spec.Replicas = replicas
	if _, err := cs.AppsV1().Deployments("default").UpdateScale(ctx, name, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Let the controller act, so the next plan reads the scaled-down state.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		d, err := cs.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
		if err == nil && d.Status.Replicas == replicas {
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("deployment %s did not scale to %d", name, replicas)
}

// kubeCheckGone checks that the Deployment, Service, Secret and pods are gone.
func kubeCheckGone(cs k8s.Interface, ns, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		if _, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Deployment %s/%s still there (err %v)", ns, name, err)
		}
		if _, err := cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Service %s/%s still there (err %v)", ns, name, err)
		}
		if _, err := cs.CoreV1().Secrets(ns).Get(ctx, kubernetes.SecretName(name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Secret still there (err %v)", err)
		}
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.InstanceLabel + "=" + name})
		if err != nil || len(pods.Items) > 0 {
			return fmt.Errorf("pods of %s still there (%v)", name, err)
		}
		return nil
	}
}

// Write-only values travel through a Secret the pods read: never in state, plan or the
// pod spec; the engine demands the key and the generation check presents it.
func TestAccInferenceDeployment_secrets(t *testing.T) {
	kubeconfig, cs := kubeTestEnv(t)
	startKubeEngines(t, cs, "default")
	const name, apiKey, hubToken = "keyed", "sk-kube-acc-4711", "hf_kube_acc_0815"
	secrets := fmt.Sprintf(`api_key_wo = %q
  hub_token_wo = %q
  secrets_version = "1"
`, apiKey, hubToken)
	withSecrets := func(cfg string) string {
		return regexp.MustCompile(`(readiness_timeout    = "2m"\n)`).ReplaceAllString(cfg, "${1}  "+secrets)
	}
	proxied := withSecrets(regexp.MustCompile(`  pod_access           = "pod_network"\n`).ReplaceAllString(kubeAccConfig(kubeconfig, name, 1, 1, ""), ""))
	ctx := context.Background()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             kubeCheckGone(cs, "default", name),
		Steps: []resource.TestStep{
			{
				// Through the API server's proxy the key could not reach the engine: refused at plan.
				Config:      proxied,
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`api_key_wo needs pod_access = "pod_network"`),
			},
			{
				Config: withSecrets(kubeAccConfig(kubeconfig, name, 1, 1, "")),
				Check: func(s *terraform.State) error {
					raw := fmt.Sprint(s.RootModule().Resources[kubeAccResource].Primary.Attributes)
					if strings.Contains(raw, apiKey) || strings.Contains(raw, hubToken) {
						return fmt.Errorf("a write-only value is in state: %s", raw)
					}
					sec, err := cs.CoreV1().Secrets("default").Get(ctx, kubernetes.SecretName(name), metav1.GetOptions{})
					if err != nil {
						return err
					}
					if string(sec.Data["LLAMA_API_KEY"]) != apiKey || string(sec.Data["HF_TOKEN"]) != hubToken {
						return fmt.Errorf("secret keys %v", slices.Collect(maps.Keys(sec.Data)))
					}
					dep, err := cs.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
					if err != nil {
						return err
					}
					spec, _ := json.Marshal(dep)
					if strings.Contains(string(spec), apiKey) || strings.Contains(string(spec), hubToken) {
						return fmt.Errorf("a write-only value is in the Deployment")
					}
					// The engine really demands the key: without it, 401.
					pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: kubernetes.InstanceLabel + "=" + name})
					if err != nil || len(pods.Items) != 1 {
						return fmt.Errorf("pods: %v (%d)", err, len(pods.Items))
					}
					req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+pods.Items[0].Status.PodIP+":8080/v1/completions",
						strings.NewReader(`{"prompt":"hi","max_tokens":1}`))
					if err != nil {
						return err
					}
					req.Header.Set("Content-Type", "application/json")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						return err
					}
					_ = resp.Body.Close()
					if resp.StatusCode != http.StatusUnauthorized {
						return fmt.Errorf("completion without the API key: HTTP %d, want 401", resp.StatusCode)
					}
					return nil
				},
			},
		},
	})
}

// A Service of the same name that someone else made is neither taken over nor deleted.
func TestAccInferenceDeployment_nameTaken(t *testing.T) {
	kubeconfig, cs := kubeTestEnv(t)
	ctx := context.Background()
	const name = "taken"
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"owner": "someone-else"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Services("default").Delete(context.Background(), name, metav1.DeleteOptions{}) })
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      kubeAccConfig(kubeconfig, name, 1, 1, ""),
			ExpectError: regexp.MustCompile(`Service default/taken already exists and was not created by llmserve`),
		}},
	})
	got, err := cs.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil || got.Labels["owner"] != "someone-else" || got.Labels[kubernetes.ManagedByLabel] != "" {
		t.Errorf("the foreign Service was changed or removed: %v, labels %v", err, got.Labels)
	}
	if _, err := cs.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a Deployment was created next to the foreign Service (err %v)", err)
	}
}
