package kubernetes

import (
	"maps"
	"path"
	"slices"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
)

// reservedLabels are the labels the provider writes on every object: a user value would be
// overwritten (objectLabels), and the user would believe it had been kept.
var reservedLabels = []string{ManagedByLabel, InstanceLabel, nameLabel}

// Validate reports every problem of where and how the replicas of the engine spec s would
// run, in terms of the attributes that set them, so a plan shows them all at once instead
// of the API server refusing the first at apply: the rules llmserve_inference_server has
// (environment, labels the provider writes, absolute mount paths, gpu_ids: the same
// functions of package deploy) and Kubernetes' own (label syntax, tolerations, a claim).
// The rules that read the spec are left out for its zero value, which a plan passes while
// the engine settings are unknown.
func (d Deployment) Validate(s engine.Spec) []problem.Problem {
	var out []problem.Problem
	add := func(p attrpath.Path, format string, args ...any) {
		out = append(out, problem.At(p, format, args...))
	}
	out = append(out, deploy.CheckEnvironment(d.Env)...)
	if _, set := d.Env[apiKeyEnv]; set {
		add(attrpath.Root("environment").Key(apiKeyEnv), "%s is set by the provider from api_key_wo (through the deployment's Secret) and would collide; choose another name", apiKeyEnv)
	}
	for _, k := range slices.Sorted(maps.Keys(d.Labels)) {
		field := attrpath.Root("labels").Key(k)
		switch {
		case slices.Contains(reservedLabels, k):
			add(field, "%s is written by the provider (destroy and the Service select on it) and would overwrite this value; choose another key", k)
		default:
			checkLabel(add, attrpath.Root("labels"), k, d.Labels[k])
		}
	}
	out = append(out, ValidatePlacement(nil, d.NodeSelector, d.Tolerations)...)
	for _, k := range slices.Sorted(maps.Keys(d.Annotations)) {
		field := attrpath.Root("annotations").Key(k)
		switch {
		case k == RecordAnnotation:
			add(field, "%s holds the launch record import reads and is written by the provider; choose another key", k)
		case strings.ContainsFunc(k, unicode.IsControl):
			add(attrpath.Root("annotations"), "a key contains control characters; use printable text")
		case len(validation.IsQualifiedName(k)) > 0:
			add(field, "%q is not an annotation key: %s", k, strings.Join(validation.IsQualifiedName(k), "; "))
		}
		if strings.ContainsFunc(d.Annotations[k], deployControl) {
			add(field, "the value contains control characters; only tab and newline are allowed")
		}
	}
	if r := d.AcceleratorResource; r != "" {
		if errs := validation.IsQualifiedName(r); len(errs) > 0 || strings.ContainsFunc(r, unicode.IsControl) {
			add(attrpath.Root("accelerator_resource"), "%q is not a resource name such as \"nvidia.com/gpu\" or \"gpu.intel.com/xe\"", r)
		}
	}
	if s.Engine != "" { // the zero spec: not known yet, the accelerator rules wait for it
		out = append(out, d.validateAccelerators(s)...)
	}
	if mc := d.ModelCache; mc != nil {
		at := attrpath.Root("model_cache")
		switch mp := mc.MountPath; {
		case strings.ContainsFunc(mp, unicode.IsControl):
			add(at.At("mount_path"), "contains control characters; use a printable path")
		case !path.IsAbs(mp):
			add(at.At("mount_path"), "must be an absolute path inside the engine container, got %q; e.g. \"/root/.cache/huggingface\"", mp)
		case path.Clean(mp) == "/":
			add(at.At("mount_path"), "cannot be the container's root; mount under a directory such as /root/.cache/huggingface")
		case d.ShmSizeBytes > 0 && path.Clean(mp) == "/dev/shm":
			add(at.At("mount_path"), "/dev/shm is where shm_size_mb mounts shared memory; choose another path")
		}
		switch hp := mc.HostPath; {
		case mc.ClaimName != "":
			if errs := validation.IsDNS1123Subdomain(mc.ClaimName); len(errs) > 0 {
				add(at.At("claim_name"), "%q is not a PersistentVolumeClaim name: %s", mc.ClaimName, strings.Join(errs, "; "))
			}
		case strings.ContainsFunc(hp, unicode.IsControl):
			add(at.At("host_path"), "contains control characters; use a printable path")
		case !path.IsAbs(hp):
			add(at.At("host_path"), "must be an absolute directory on the node, got %q", hp)
		case path.Clean(hp) == "/":
			add(at.At("host_path"), "cannot be the node's root directory; give a directory for model weights such as /var/lib/llmserve/models")
		}
	}
	return out
}

// validateAccelerators checks how the replicas get their devices: an extended resource or a
// claim, not both; gpu_ids by the server's rules, choosing among the devices a pod was
// given, except NVIDIA's, which the device plugin or the claim chooses alone.
func (d Deployment) validateAccelerators(s engine.Spec) []problem.Problem {
	var out []problem.Problem
	add := func(p attrpath.Path, format string, args ...any) {
		out = append(out, problem.At(p, format, args...))
	}
	if a := d.AcceleratorClaim; a != nil {
		out = append(out, a.validate(attrpath.Root("accelerator_claim"))...)
		if d.AcceleratorResource != "" {
			add(attrpath.Root("accelerator_claim"), "and accelerator_resource = %q both ask for the replicas' devices, through Dynamic Resource Allocation and a device plugin; keep one: remove accelerator_resource (and accelerator_count) to claim devices of DeviceClass %q, or remove accelerator_claim", d.AcceleratorResource, a.DeviceClass)
		} else if d.AcceleratorCount > 0 {
			add(attrpath.Root("accelerator_count"), "counts devices of accelerator_resource, which accelerator_claim replaces; remove accelerator_count and set accelerator_claim.count (default: tensor_parallel_size)")
		}
	}
	if s.Accelerator == engine.CUDA && len(d.GPUIDs) > 0 {
		add(attrpath.Root("gpu_ids"), "on Kubernetes NVIDIA's device plugin (accelerator_resource) or the claim (accelerator_claim) chooses which GPUs a pod gets and sets NVIDIA_VISIBLE_DEVICES itself; remove gpu_ids and set accelerator_count or accelerator_claim.count")
	} else {
		out = append(out, deploy.CheckGPUIDs(s, d.GPUIDs, d.Env)...)
	}
	if s.Accelerator == engine.Vulkan && d.AcceleratorResource == "" && d.AcceleratorClaim == nil && len(d.GPUIDs) == 0 {
		p := problem.At(attrpath.Root("accelerator"), "\"vulkan\" has no device plugin resource of its own, so the pods request no GPU and see no render node: llama.cpp would find no Vulkan GPU and fail to start. "+
			"Set accelerator_resource to your device plugin's resource (gpu.intel.com/i915, gpu.intel.com/xe, amd.com/gpu) or accelerator_claim to a DeviceClass; for Mesa's lavapipe on the CPU, name it with gpu_ids = [\"0\"]")
		p.Summary, p.Warning = "Vulkan replicas request no GPU", true
		out = append(out, p)
	}
	return out
}

// ValidatePlacement applies Kubernetes' rules to where a pod may run (node selector labels,
// tolerations), set at the attributes node_selector and tolerations under at: a deployment's
// replicas (at the root) and a benchmark's runner Job (runner.kubernetes) are placed alike.
func ValidatePlacement(at attrpath.Path, nodeSelector map[string]string, tolerations []Toleration) []problem.Problem {
	var out []problem.Problem
	add := func(p attrpath.Path, format string, args ...any) {
		out = append(out, problem.At(p, format, args...))
	}
	for _, k := range slices.Sorted(maps.Keys(nodeSelector)) {
		checkLabel(add, at.At("node_selector"), k, nodeSelector[k])
	}
	for i, t := range tolerations {
		out = append(out, t.validate(at.At("tolerations").Index(i))...)
	}
	return out
}

// validate applies Kubernetes' rules for a toleration (ValidateTolerations in
// k8s.io/kubernetes pkg/apis/core/validation), which the API server would otherwise enforce
// only at apply.
func (t Toleration) validate(at attrpath.Path) []problem.Problem {
	var out []problem.Problem
	add := func(field, format string, args ...any) {
		out = append(out, problem.At(at.At(field), format, args...))
	}
	if t.Key != "" {
		if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 || strings.ContainsFunc(t.Key, unicode.IsControl) {
			add("key", "%q is not a taint key: %s", t.Key, strings.Join(errs, "; "))
		}
	}
	switch t.Operator {
	case "Exists":
		if t.Value != "" {
			add("value", "must be left out with operator = \"Exists\", which matches every value of the key; remove value, or use operator = \"Equal\" to match %q only", t.Value)
		}
	default: // Equal, Kubernetes' default
		if t.Key == "" {
			add("key", "must be set with operator = \"Equal\" (the default); to tolerate every taint, leave key out and set operator = \"Exists\"")
		}
		if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 || strings.ContainsFunc(t.Value, unicode.IsControl) {
			add("value", "%q is not a taint value: %s", t.Value, strings.Join(errs, "; "))
		}
	}
	if t.TolerationSeconds != nil && t.Effect != "NoExecute" {
		add("toleration_seconds", "only applies with effect = \"NoExecute\" (how long a pod stays on a node after such a taint appears); set that effect or remove toleration_seconds")
	}
	return out
}

// checkLabel applies Kubernetes' syntax of label keys and values (node selectors are labels
// too), which also keeps control characters out.
func checkLabel(add func(attrpath.Path, string, ...any), at attrpath.Path, k, v string) {
	switch {
	case strings.TrimSpace(k) == "":
		add(at, "has an empty label key; remove it")
		return
	case strings.ContainsFunc(k, unicode.IsControl):
		add(at, "a key contains control characters; use printable text")
		return
	}
	if errs := validation.IsQualifiedName(k); len(errs) > 0 {
		add(at.Key(k), "%q is not a label key: %s", k, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(v); len(errs) > 0 || strings.ContainsFunc(v, unicode.IsControl) {
		add(at.Key(k), "%q is not a label value: %s", v, strings.Join(errs, "; "))
	}
}

func deployControl(r rune) bool { return unicode.IsControl(r) && r != '\t' && r != '\n' }
