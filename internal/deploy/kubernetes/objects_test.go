package kubernetes

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

func testDeployment() Deployment {
	return Deployment{
		Name: "qwen", Namespace: "inference", Image: "lmsysorg/sglang:v0.5", Replicas: 2,
		AcceleratorResource: "gpu.intel.com/xe", AcceleratorCount: 2,
		NodeSelector: map[string]string{"pool": "b70"},
		Tolerations:  []Toleration{{Key: "gpu", Operator: "Exists", Effect: "NoSchedule"}},
		ShmSizeBytes: 8 << 30,
		ModelCache:   &ModelCache{ClaimName: "hf", MountPath: "/root/.cache/huggingface"},
		Env:          map[string]string{"B": "2", "A": "1"},
		ServiceType:  "ClusterIP", ServicePort: 80,
		Labels:                  map[string]string{"team": "x", InstanceLabel: "spoofed"},
		ReadinessTimeoutSeconds: 595,
	}
}

func TestDeploymentApply(t *testing.T) {
	t.Parallel()
	spec := engine.Spec{Engine: engine.SGLang, Model: "Qwen/Qwen3-8B", TensorParallel: 2, Accelerator: engine.XPU, Port: 30000}
	sec := engine.Secrets{APIKey: "sk-secret", HubToken: "hf_secret"}
	d := testDeployment()
	sa := d.SecretApply(spec, sec)
	if sa == nil {
		t.Fatal("no Secret for two secrets")
	}
	var keys []string
	for k := range sa.StringData {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// SGLang takes the key as a flag: it travels as LLMSERVE_API_KEY and $(VAR) expansion.
	if want := []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", apiKeyEnv}; !slices.Equal(keys, want) {
		t.Fatalf("secret keys %v, want %v", keys, want)
	}
	da, err := d.DeploymentApply(spec, keys)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(da)
	if strings.Contains(string(raw), "sk-secret") || strings.Contains(string(raw), "hf_secret") {
		t.Fatalf("a secret is in the Deployment: %s", raw)
	}
	c := da.Spec.Template.Spec.Containers[0]
	if n := len(c.Args); n < 2 || c.Args[n-2] != "--api-key" || c.Args[n-1] != "$(LLMSERVE_API_KEY)" {
		t.Errorf("args end %v, want --api-key $(LLMSERVE_API_KEY)", c.Args)
	}
	if got := strings.Join(c.Command, " "); got != "python3 -m sglang.launch_server" {
		t.Errorf("command %q", got)
	}
	var envNames []string
	for _, e := range c.Env {
		envNames = append(envNames, *e.Name)
	}
	if want := []string{"A", "B", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", apiKeyEnv}; !slices.Equal(envNames, want) {
		t.Errorf("env %v, want %v (user env sorted, then secret refs)", envNames, want)
	}
	if q := (*c.Resources.Limits)["gpu.intel.com/xe"]; q.Value() != 2 {
		t.Errorf("limit gpu.intel.com/xe = %v, want 2", q.String())
	}
	// ceil(595 s / 10 s period) = 60 startup probe failures before Kubernetes gives up.
	if *c.StartupProbe.FailureThreshold != 60 || *c.StartupProbe.HTTPGet.Path != "/health_generate" {
		t.Errorf("startup probe %d x %s", *c.StartupProbe.FailureThreshold, *c.StartupProbe.HTTPGet.Path)
	}
	vols := da.Spec.Template.Spec.Volumes
	if len(vols) != 2 || *vols[0].EmptyDir.Medium != corev1.StorageMediumMemory || vols[0].EmptyDir.SizeLimit.Value() != 8<<30 ||
		*vols[1].PersistentVolumeClaim.ClaimName != "hf" {
		t.Errorf("volumes %+v", vols)
	}
	// Mounted in the engine container, not only declared: the pod once had both volumes and
	// mounted neither (the container was copied into the pod before its mounts were added).
	var mounts []string
	for _, m := range c.VolumeMounts {
		mounts = append(mounts, *m.Name+"="+*m.MountPath)
	}
	if want := []string{"dshm=/dev/shm", "model-cache=/root/.cache/huggingface"}; !slices.Equal(mounts, want) {
		t.Errorf("engine container mounts %v, want %v", mounts, want)
	}
	// The provider's labels win over a user label of the same key: the selector must hold.
	if got := da.Spec.Template.Labels[InstanceLabel]; got != "qwen" {
		t.Errorf("instance label %q, want qwen", got)
	}
	if da.Labels[ManagedByLabel] != "llmserve" || da.Labels["team"] != "x" {
		t.Errorf("labels %v", da.Labels)
	}
	rec, err := ParseLaunchRecord(da.Annotations[RecordAnnotation])
	if err != nil || rec.Spec.Model != "Qwen/Qwen3-8B" || rec.Deployment.Replicas != 2 {
		t.Errorf("record %+v, %v", rec, err)
	}
	svc := d.ServiceApply(spec)
	if p := svc.Spec.Ports[0]; *p.Port != 80 || p.TargetPort.IntValue() != 30000 {
		t.Errorf("service port %d -> %v, want 80 -> 30000", *p.Port, p.TargetPort)
	}
}

// vLLM serves /reset_prefix_cache only in development mode: the pods get the engine's own
// environment, as a Docker container does, on top of the user's.
func TestDeploymentApplyEngineEnv(t *testing.T) {
	t.Parallel()
	spec := engine.Spec{Engine: engine.VLLM, Model: "Qwen/Qwen3-8B", TensorParallel: 1, Accelerator: engine.CUDA, Port: 8000}
	d := testDeployment()
	d.Env["VLLM_SERVER_DEV_MODE"] = "0"
	da, err := d.DeploymentApply(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range da.Spec.Template.Spec.Containers[0].Env {
		got = append(got, *e.Name+"="+*e.Value)
	}
	if want := []string{"A=1", "B=2", "VLLM_SERVER_DEV_MODE=1"}; !slices.Equal(got, want) {
		t.Errorf("env %v, want %v", got, want)
	}
}

// gpu_ids choose among a pod's devices through the variable the server sets (package
// deploy's GPUSelection), for llama.cpp on Vulkan as for SGLang on Intel GPUs; the Vulkan
// launch names its devices as on Docker.
func TestDeploymentApplyGPUIDs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec    engine.Spec
		env     string
		argsEnd string
	}{
		{engine.Spec{Engine: engine.LlamaCpp, Model: "/models/m.gguf", TensorParallel: 2, Accelerator: engine.Vulkan, Port: 8080},
			"GGML_VK_VISIBLE_DEVICES=1,0", "--n-gpu-layers 999 --device Vulkan0,Vulkan1 --split-mode layer"},
		{engine.Spec{Engine: engine.SGLang, Model: "Qwen/Qwen3-8B", TensorParallel: 2, Accelerator: engine.XPU, Port: 30000},
			"ZE_AFFINITY_MASK=1,0", "--device xpu"},
	} {
		d := testDeployment()
		d.Env, d.GPUIDs = nil, []string{"1", "0"}
		da, err := d.DeploymentApply(tc.spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		c := da.Spec.Template.Spec.Containers[0]
		var env []string
		for _, e := range c.Env {
			env = append(env, *e.Name+"="+*e.Value)
		}
		if !slices.Contains(env, tc.env) {
			t.Errorf("%s on %s: env %v, want %s", tc.spec.Engine, tc.spec.Accelerator, env, tc.env)
		}
		if args := strings.Join(c.Args, " "); !strings.Contains(args, tc.argsEnd) {
			t.Errorf("%s on %s: args %q, want %q in them", tc.spec.Engine, tc.spec.Accelerator, args, tc.argsEnd)
		}
	}
}

func TestSecretApply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		engine engine.Name
		sec    engine.Secrets
		want   []string // nil: no Secret at all
	}{
		{engine.VLLM, engine.Secrets{}, nil},
		{engine.VLLM, engine.Secrets{APIKey: "k"}, []string{"VLLM_API_KEY"}},
		{engine.LlamaCpp, engine.Secrets{APIKey: "k"}, []string{"LLAMA_API_KEY"}},
		{engine.SGLang, engine.Secrets{APIKey: "k"}, []string{apiKeyEnv}},
		{engine.LlamaCpp, engine.Secrets{HubToken: "t"}, []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}},
	}
	for _, tt := range tests {
		sa := testDeployment().SecretApply(engine.Spec{Engine: tt.engine}, tt.sec)
		var got []string
		if sa != nil {
			for k := range sa.StringData {
				got = append(got, k)
			}
			slices.Sort(got)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s %+v: keys %v, want %v", tt.engine, tt.sec, got, tt.want)
		}
	}
}

func TestEndpoint(t *testing.T) {
	t.Parallel()
	ports := []corev1.ServicePort{{Port: 80, NodePort: 31000}}
	pods := []corev1.Pod{{Status: corev1.PodStatus{HostIP: "192.0.2.7"}}}
	tests := []struct {
		name string
		svc  corev1.Service
		want string
	}{
		{"cluster IP", corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.12", Ports: ports}}, "http://10.96.0.12:80"},
		{"headless", corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "None", Ports: ports}}, ""},
		{"node port", corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.12", Ports: ports}}, "http://192.0.2.7:31000"},
		{"load balancer pending", corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: ports}}, ""},
		{"load balancer", corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: ports},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Hostname: "lb.example.com"}}}}}, "http://lb.example.com:80"},
		{"IPv6 cluster IP", corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "fd00::12", Ports: ports}}, "http://[fd00::12]:80"},
	}
	for _, tt := range tests {
		if got := endpoint(&tt.svc, pods); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestRESTConfig(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "config")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
- {name: a, cluster: {server: "https://a.example.com:6443"}}
- {name: b, cluster: {server: "https://b.example.com:6443"}}
users:
- {name: u, user: {token: t0k}}
contexts:
- {name: ctx-a, context: {cluster: a, user: u}}
- {name: ctx-b, context: {cluster: b, user: u}}
current-context: ctx-a
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kc)
	t.Setenv("HOME", dir)
	tests := []struct {
		name     string
		cfg      Config
		wantHost string
		wantErr  string
	}{
		{"KUBECONFIG current context", Config{}, "https://a.example.com:6443", ""},
		{"config_path and context", Config{ConfigPath: kc, ConfigContext: "ctx-b"}, "https://b.example.com:6443", ""},
		{"unknown context", Config{ConfigPath: kc, ConfigContext: "nope"}, "", `context "nope" does not exist`},
		{"host and token", Config{Host: "https://h.example.com", Token: "x"}, "https://h.example.com", ""},
		{"certificate without key", Config{Host: "https://h.example.com", ClientCertificate: "PEM"}, "", "client_certificate and client_key go together"},
		{"unknown at configure", Config{Unknown: []string{"kubernetes.host"}}, "", "kubernetes.host were not known"},
	}
	for _, tt := range tests {
		rc, err := tt.cfg.RESTConfig()
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want %q", tt.name, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case rc.Host != tt.wantHost:
			t.Errorf("%s: host %q, want %q", tt.name, rc.Host, tt.wantHost)
		}
	}
	t.Setenv("KUBECONFIG", filepath.Join(dir, "missing"))
	if _, err := (Config{}).RESTConfig(); err == nil || !strings.Contains(err.Error(), "no cluster configured") {
		t.Errorf("no kubeconfig: %v", err)
	}
}

func TestCheckAccess(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		access Access
		apiKey bool
		want   bool
	}{
		{"api proxy without key", APIProxy, false, false},
		{"default access with key", "", true, true},
		{"api proxy with key", APIProxy, true, true},
		{"pod network with key", PodNetwork, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := CheckAccess(tt.access, tt.apiKey)
			if !tt.want {
				if len(got) != 0 {
					t.Fatalf("CheckAccess = %v, want no problem", got)
				}
				return
			}
			if len(got) != 1 || got[0].Path.String() != "pod_access" || !strings.HasPrefix(got[0].Detail, `api_key_wo needs pod_access = "pod_network"`) {
				t.Fatalf("CheckAccess = %v, want one pod_access problem naming the fix", got)
			}
		})
	}
}
