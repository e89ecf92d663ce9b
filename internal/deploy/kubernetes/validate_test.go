package kubernetes

import (
	"strings"
	"testing"
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
	tests := []struct {
		name   string
		change func(*Deployment)
		want   []string // "path: detail prefix" of each problem, in order
	}{
		{"valid", func(*Deployment) {}, nil},
		{"secret environment", func(d *Deployment) { d.Env["HF_TOKEN"] = "hf_x"; d.Env["VLLM_API_KEY"] = "k" }, []string{
			`environment["HF_TOKEN"]: HF_TOKEN is a secret and environment is stored in state and shown in plan output; remove it and set hub_token_wo (write-only)`,
			`environment["VLLM_API_KEY"]: VLLM_API_KEY is a secret and environment is stored in state and shown in plan output; remove it and set api_key_wo (write-only)`,
		}},
		{"provider's API key variable", func(d *Deployment) { d.Env["LLMSERVE_API_KEY"] = "x" }, []string{
			`environment["LLMSERVE_API_KEY"]: LLMSERVE_API_KEY is set by the provider from api_key_wo`,
		}},
		{"environment escape", func(d *Deployment) { d.Env["A"] = "x\x1b]0;t\a" }, []string{
			`environment["A"]: the value contains control characters; only tab and newline are allowed`,
		}},
		{"provider labels", func(d *Deployment) {
			d.Labels["app.kubernetes.io/managed-by"] = "helm"
			d.Labels["app.kubernetes.io/instance"] = "x"
			d.Labels["app.kubernetes.io/name"] = "y"
		}, []string{
			`labels["app.kubernetes.io/instance"]: app.kubernetes.io/instance is written by the provider (destroy and the Service select on it) and would overwrite this value; choose another key`,
			`labels["app.kubernetes.io/managed-by"]: app.kubernetes.io/managed-by is written by the provider`,
			`labels["app.kubernetes.io/name"]: app.kubernetes.io/name is written by the provider`,
		}},
		{"label syntax", func(d *Deployment) { d.Labels["bad key!"] = "ok"; d.Labels["team"] = "has space" }, []string{
			`labels["bad key!"]: "bad key!" is not a label key: name part must consist of alphanumeric characters`,
			`labels["team"]: "has space" is not a label value: a valid label must be an empty string or consist of alphanumeric characters`,
		}},
		{"label control character", func(d *Deployment) { d.Labels["t\x1b"] = "v" }, []string{
			`labels: a key contains control characters; use printable text`,
		}},
		{"node selector value", func(d *Deployment) { d.NodeSelector["gpu.intel.com/family"] = "B70\x1b[2J" }, []string{
			`node_selector["gpu.intel.com/family"]: "B70\x1b[2J" is not a label value`,
		}},
		{"launch record annotation", func(d *Deployment) { d.Annotations[RecordAnnotation] = "{}" }, []string{
			`annotations["llmserve.dev/launch"]: llmserve.dev/launch holds the launch record import reads and is written by the provider; choose another key`,
		}},
		{"annotation value escape", func(d *Deployment) { d.Annotations["example.com/note"] = "\x1b[2J" }, []string{
			`annotations["example.com/note"]: the value contains control characters`,
		}},
		{"toleration Exists with a value", func(d *Deployment) { d.Tolerations[0].Value = "true" }, []string{
			`tolerations[0].value: must be left out with operator = "Exists", which matches every value of the key; remove value, or use operator = "Equal" to match "true" only`,
		}},
		{"toleration Equal without key", func(d *Deployment) { d.Tolerations[1].Key = "" }, []string{
			`tolerations[1].key: must be set with operator = "Equal" (the default); to tolerate every taint, leave key out and set operator = "Exists"`,
		}},
		{"toleration seconds without NoExecute", func(d *Deployment) { d.Tolerations[1].Effect = "NoSchedule" }, []string{
			`tolerations[1].toleration_seconds: only applies with effect = "NoExecute"`,
		}},
		{"toleration key syntax", func(d *Deployment) { d.Tolerations[0].Key = "not a key" }, []string{
			`tolerations[0].key: "not a key" is not a taint key`,
		}},
		{"mount path relative", func(d *Deployment) { d.ModelCache.MountPath = "models" }, []string{
			`model_cache.mount_path: must be an absolute path inside the engine container, got "models"; e.g. "/root/.cache/huggingface"`,
		}},
		{"mount path root", func(d *Deployment) { d.ModelCache.MountPath = "/" }, []string{`model_cache.mount_path: cannot be the container's root`}},
		{"mount path over shared memory", func(d *Deployment) { d.ModelCache.MountPath = "/dev/shm/" }, []string{
			`model_cache.mount_path: /dev/shm is where shm_size_mb mounts shared memory; choose another path`,
		}},
		{"host path relative", func(d *Deployment) { d.ModelCache.HostPath = "models" }, []string{`model_cache.host_path: must be an absolute directory on the node, got "models"`}},
		{"claim name", func(d *Deployment) { d.ModelCache.HostPath, d.ModelCache.ClaimName = "", "Models_PVC" }, []string{
			`model_cache.claim_name: "Models_PVC" is not a PersistentVolumeClaim name`,
		}},
		{"accelerator resource", func(d *Deployment) { d.AcceleratorResource = "nvidia gpu" }, []string{
			`accelerator_resource: "nvidia gpu" is not a resource name such as "nvidia.com/gpu" or "gpu.intel.com/xe"`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := valid()
			tc.change(&d)
			got := d.Validate()
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
