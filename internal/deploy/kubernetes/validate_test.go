package kubernetes

import (
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

func TestDeploymentValidate(t *testing.T) {
	t.Parallel()
	secs := int64(30)
	valid := func() Deployment {
		return Deployment{Name: "qwen", Namespace: "default", Image: "img", Replicas: 1, ServiceType: "ClusterIP",
			AcceleratorResource: "nvidia.com/gpu", ShmSizeBytes: 1 << 30,
			Env:          map[string]string{"LOG_LEVEL": "debug", "MULTI": "a\nb\tc"},
			Labels:       map[string]string{"team": "inference", "example.com/tier": "gpu"},
			NodeSelector: map[string]string{"gpu.intel.com/family": "B70"},
			Annotations:  map[string]string{"example.com/note": "free text, with spaces\nand lines"},
			Tolerations: []Toleration{{Key: "nvidia.com/gpu", Operator: "Exists", Effect: "NoSchedule"},
				{Key: "dedicated", Value: "llm", Effect: "NoExecute", TolerationSeconds: &secs}, {Operator: "Exists"}},
			ModelCache: &ModelCache{HostPath: "/var/lib/models", MountPath: "/root/.cache/huggingface"}}
	}
	sglang := engine.Spec{Engine: engine.SGLang, Model: "Qwen/Qwen3-8B", TensorParallel: 2, Accelerator: engine.XPU, Port: 30000}
	llama := func(a engine.Accelerator) engine.Spec {
		return engine.Spec{Engine: engine.LlamaCpp, Model: "/models/m.gguf", TensorParallel: 2, Accelerator: a, Port: 8080}
	}
	tests := []struct {
		name   string
		spec   engine.Spec // the zero value: SGLang on CUDA
		change func(*Deployment)
		want   []string // "path: detail prefix" of each problem, in order
	}{
		{"valid", engine.Spec{}, func(*Deployment) {}, nil},
		{"secret environment", engine.Spec{}, func(d *Deployment) { d.Env["HF_TOKEN"] = "hf_x"; d.Env["VLLM_API_KEY"] = "k" }, []string{
			`environment["HF_TOKEN"]: HF_TOKEN is a secret and environment is stored in state and shown in plan output; remove it and set hub_token_wo (write-only)`,
			`environment["VLLM_API_KEY"]: VLLM_API_KEY is a secret and environment is stored in state and shown in plan output; remove it and set api_key_wo (write-only)`,
		}},
		{"provider's API key variable", engine.Spec{}, func(d *Deployment) { d.Env["LLMSERVE_API_KEY"] = "x" }, []string{
			`environment["LLMSERVE_API_KEY"]: LLMSERVE_API_KEY is set by the provider from api_key_wo`,
		}},
		{"environment escape", engine.Spec{}, func(d *Deployment) { d.Env["A"] = "x\x1b]0;t\a" }, []string{
			`environment["A"]: the value contains control characters; only tab and newline are allowed`,
		}},
		{"provider labels", engine.Spec{}, func(d *Deployment) {
			d.Labels["app.kubernetes.io/managed-by"] = "helm"
			d.Labels["app.kubernetes.io/instance"] = "x"
			d.Labels["app.kubernetes.io/name"] = "y"
		}, []string{
			`labels["app.kubernetes.io/instance"]: app.kubernetes.io/instance is written by the provider (destroy and the Service select on it) and would overwrite this value; choose another key`,
			`labels["app.kubernetes.io/managed-by"]: app.kubernetes.io/managed-by is written by the provider`,
			`labels["app.kubernetes.io/name"]: app.kubernetes.io/name is written by the provider`,
		}},
		{"label syntax", engine.Spec{}, func(d *Deployment) { d.Labels["bad key!"] = "ok"; d.Labels["team"] = "has space" }, []string{
			`labels["bad key!"]: "bad key!" is not a label key: name part must consist of alphanumeric characters`,
			`labels["team"]: "has space" is not a label value: a valid label must be an empty string or consist of alphanumeric characters`,
		}},
		{"label control character", engine.Spec{}, func(d *Deployment) { d.Labels["t\x1b"] = "v" }, []string{
			`labels: a key contains control characters; use printable text`,
		}},
		{"node selector value", engine.Spec{}, func(d *Deployment) { d.NodeSelector["gpu.intel.com/family"] = "B70\x1b[2J" }, []string{
			`node_selector["gpu.intel.com/family"]: "B70\x1b[2J" is not a label value`,
		}},
		{"launch record annotation", engine.Spec{}, func(d *Deployment) { d.Annotations[RecordAnnotation] = "{}" }, []string{
			`annotations["llmserve.dev/launch"]: llmserve.dev/launch holds the launch record import reads and is written by the provider; choose another key`,
		}},
		{"annotation value escape", engine.Spec{}, func(d *Deployment) { d.Annotations["example.com/note"] = "\x1b[2J" }, []string{
			`annotations["example.com/note"]: the value contains control characters`,
		}},
		{"toleration Exists with a value", engine.Spec{}, func(d *Deployment) { d.Tolerations[0].Value = "true" }, []string{
			`tolerations[0].value: must be left out with operator = "Exists", which matches every value of the key; remove value, or use operator = "Equal" to match "true" only`,
		}},
		{"toleration Equal without key", engine.Spec{}, func(d *Deployment) { d.Tolerations[1].Key = "" }, []string{
			`tolerations[1].key: must be set with operator = "Equal" (the default); to tolerate every taint, leave key out and set operator = "Exists"`,
		}},
		{"toleration seconds without NoExecute", engine.Spec{}, func(d *Deployment) { d.Tolerations[1].Effect = "NoSchedule" }, []string{
			`tolerations[1].toleration_seconds: only applies with effect = "NoExecute"`,
		}},
		{"toleration key syntax", engine.Spec{}, func(d *Deployment) { d.Tolerations[0].Key = "not a key" }, []string{
			`tolerations[0].key: "not a key" is not a taint key`,
		}},
		{"mount path relative", engine.Spec{}, func(d *Deployment) { d.ModelCache.MountPath = "models" }, []string{
			`model_cache.mount_path: must be an absolute path inside the engine container, got "models"; e.g. "/root/.cache/huggingface"`,
		}},
		{"mount path root", engine.Spec{}, func(d *Deployment) { d.ModelCache.MountPath = "/" }, []string{`model_cache.mount_path: cannot be the container's root`}},
		{"mount path over shared memory", engine.Spec{}, func(d *Deployment) { d.ModelCache.MountPath = "/dev/shm/" }, []string{
			`model_cache.mount_path: /dev/shm is where shm_size_mb mounts shared memory; choose another path`,
		}},
		{"host path relative", engine.Spec{}, func(d *Deployment) { d.ModelCache.HostPath = "models" }, []string{`model_cache.host_path: must be an absolute directory on the node, got "models"`}},
		{"claim name", engine.Spec{}, func(d *Deployment) { d.ModelCache.HostPath, d.ModelCache.ClaimName = "", "Models_PVC" }, []string{
			`model_cache.claim_name: "Models_PVC" is not a PersistentVolumeClaim name`,
		}},
		{"accelerator resource", engine.Spec{}, func(d *Deployment) { d.AcceleratorResource = "nvidia gpu" }, []string{
			`accelerator_resource: "nvidia gpu" is not a resource name such as "nvidia.com/gpu" or "gpu.intel.com/xe"`,
		}},
		// gpu_ids: the server's rules, from the same function (deploy.CheckGPUIDs).
		{"xpu gpu ids", sglang, func(d *Deployment) { d.GPUIDs = []string{"0", "1.1"} }, nil},
		{"xpu gpu ids too few for tp", sglang, func(d *Deployment) { d.GPUIDs = []string{"1"} }, []string{
			`gpu_ids: lists 1 devices but tensor_parallel_size = 2 needs one per rank; list 2 devices or lower tensor_parallel_size`,
		}},
		{"xpu gpu ids and the mask in environment", sglang, func(d *Deployment) { d.GPUIDs = []string{"0", "1"}; d.Env["ZE_AFFINITY_MASK"] = "0,1" }, []string{
			`environment["ZE_AFFINITY_MASK"]: gpu_ids sets ZE_AFFINITY_MASK for accelerator = "xpu"; set the devices in one place`,
		}},
		{"vulkan gpu ids not indices", llama(engine.Vulkan), func(d *Deployment) { d.GPUIDs = []string{"0.1", "GPU-1"} }, []string{
			`gpu_ids[0]: must be a Vulkan device index ("0")`,
			`gpu_ids[1]: must be a Vulkan device index ("0")`,
		}},
		{"cpu gpu ids", engine.Spec{Engine: engine.LlamaCpp, Accelerator: engine.CPU}, func(d *Deployment) { d.GPUIDs = []string{"0"} }, []string{
			`gpu_ids: selects GPUs, which only accelerator = "cuda" (NVIDIA), "xpu" (Intel) and "vulkan" use; with "cpu" it would be ignored`,
		}},
		{"cuda gpu ids", engine.Spec{Engine: engine.VLLM, Accelerator: engine.CUDA}, func(d *Deployment) { d.GPUIDs = []string{"0"} }, []string{
			`gpu_ids: on Kubernetes NVIDIA's device plugin (accelerator_resource) or the claim (accelerator_claim) chooses which GPUs a pod gets`,
		}},
		{"vulkan without any device", llama(engine.Vulkan), func(d *Deployment) { d.AcceleratorResource = "" }, []string{
			`accelerator: "vulkan" has no device plugin resource of its own, so the pods request no GPU`,
		}},
		{"vulkan on lavapipe", llama(engine.Vulkan), func(d *Deployment) { d.AcceleratorResource, d.GPUIDs = "", []string{"0", "1"} }, nil},
		// Dynamic Resource Allocation.
		{"claim", llama(engine.XPU), func(d *Deployment) {
			d.AcceleratorResource, d.AcceleratorClaim = "", &AcceleratorClaim{DeviceClass: "gpu.intel.com", Count: 2, Selectors: []string{`device.attributes["gpu.intel.com"].deviceType == "discrete"`}}
		}, nil},
		{"claim and resource", llama(engine.XPU), func(d *Deployment) { d.AcceleratorClaim = &AcceleratorClaim{DeviceClass: "gpu.intel.com"} }, []string{
			`accelerator_claim: and accelerator_resource = "nvidia.com/gpu" both ask for the replicas' devices`,
		}},
		{"claim and count", llama(engine.XPU), func(d *Deployment) {
			d.AcceleratorResource, d.AcceleratorCount, d.AcceleratorClaim = "", 2, &AcceleratorClaim{DeviceClass: "gpu.intel.com"}
		}, []string{
			`accelerator_count: counts devices of accelerator_resource, which accelerator_claim replaces`,
		}},
		{"claim fields", llama(engine.XPU), func(d *Deployment) {
			d.AcceleratorResource, d.AcceleratorClaim = "", &AcceleratorClaim{DeviceClass: "GPU Class", Count: 33, Selectors: []string{" ", "a\x1b[2J"}}
		}, []string{
			`accelerator_claim.device_class: "GPU Class" is not a DeviceClass name such as "gpu.intel.com"`,
			`accelerator_claim.count: must be between 1 and 32 (the most devices one claim allocates), got 33`,
			`accelerator_claim.selectors[0]: must be a CEL expression over device`,
			`accelerator_claim.selectors[1]: contains control characters`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := valid()
			tc.change(&d)
			spec := tc.spec
			if spec.Engine == "" {
				spec = engine.Spec{Engine: engine.SGLang, Model: "Qwen/Qwen3-8B", TensorParallel: 1, Accelerator: engine.CUDA, Port: 30000}
			}
			got := d.Validate(spec)
			if len(got) != len(tc.want) {
				t.Fatalf("%d problems, want %d: %v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i].Error(), w) {
					t.Errorf("problem %d = %s\nwant prefix  %s", i, got[i].Error(), w)
				}
			}
		})
	}
}
