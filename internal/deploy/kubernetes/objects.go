package kubernetes

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

// Labels and annotations the provider puts on what it creates.
const (
	// FieldManager owns every field the provider applies (server-side apply).
	FieldManager = "llmserve"
	// ManagedByLabel is app.kubernetes.io/managed-by; destroy removes only objects carrying
	// it with the deployment's own instance label.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "llmserve"
	// InstanceLabel selects the deployment's pods; the Service selects on it too.
	InstanceLabel = "app.kubernetes.io/instance"
	nameLabel     = "app.kubernetes.io/name"
	// RecordAnnotation holds the launch record (no secrets) that import reads back.
	RecordAnnotation = "llmserve.dev/launch"

	engineContainer = "engine"
	apiKeyEnv       = "LLMSERVE_API_KEY" // #nosec G101 -- the name of the variable, not a credential
	shmVolume       = "dshm"
	cacheVolume     = "model-cache"
)

// Toleration is a pod toleration, as the Kubernetes API spells it.
type Toleration struct {
	Key               string `json:"key,omitempty"`
	Operator          string `json:"operator,omitempty"`
	Value             string `json:"value,omitempty"`
	Effect            string `json:"effect,omitempty"`
	TolerationSeconds *int64 `json:"toleration_seconds,omitempty"`
}

// ModelCache is the volume that holds model weights across pod restarts: a node's
// directory (HostPath) or a PersistentVolumeClaim (ClaimName), mounted at MountPath.
type ModelCache struct {
	HostPath  string `json:"host_path,omitempty"`
	ClaimName string `json:"claim_name,omitempty"`
	MountPath string `json:"mount_path"`
	ReadOnly  bool   `json:"read_only,omitempty"`
}

// Deployment is one replicated engine: what runs (Spec, Image) and where (the rest). It
// carries no secrets, so it can be stored in an annotation and in Terraform state.
type Deployment struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Image     string `json:"image"`
	Replicas  int32  `json:"replicas"`

	// AcceleratorResource is the extended resource each replica requests
	// (nvidia.com/gpu, gpu.intel.com/xe); empty requests none.
	AcceleratorResource string `json:"accelerator_resource,omitempty"`
	AcceleratorCount    int64  `json:"accelerator_count,omitempty"`
	// AcceleratorClaim asks Dynamic Resource Allocation for each replica's devices instead
	// of an extended resource (claim.go); nil asks none.
	AcceleratorClaim *AcceleratorClaim `json:"accelerator_claim,omitempty"`
	// GPUIDs select, among the devices a pod was given, the ones the engine uses
	// (deploy.GPUSelection: Level Zero's mask, ggml's Vulkan device list).
	GPUIDs       []string          `json:"gpu_ids,omitempty"`
	NodeSelector map[string]string `json:"node_selector,omitempty"`
	Tolerations  []Toleration      `json:"tolerations,omitempty"`
	// ShmSizeBytes sizes a memory-backed emptyDir at /dev/shm; 0 keeps the runtime's 64 MiB.
	ShmSizeBytes int64             `json:"shm_size_bytes,omitempty"`
	ModelCache   *ModelCache       `json:"model_cache,omitempty"`
	Env          map[string]string `json:"env,omitempty"`
	ServiceType  string            `json:"service_type"`
	ServicePort  int32             `json:"service_port"`
	Labels       map[string]string `json:"labels,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	// ReadinessTimeoutSeconds bounds the startup probe, so Kubernetes itself stops waiting
	// for an engine that never loads.
	ReadinessTimeoutSeconds int64 `json:"readiness_timeout_seconds"`
	// Meta is opaque here: caller settings that must survive an import.
	Meta map[string]string `json:"meta,omitempty"`
}

// LaunchRecord is what the Deployment remembers about how it was launched (RecordAnnotation).
type LaunchRecord struct {
	Spec       engine.Spec `json:"spec"`
	Deployment Deployment  `json:"deployment"`
}

// ParseLaunchRecord decodes RecordAnnotation.
func ParseLaunchRecord(v string) (LaunchRecord, error) {
	var r LaunchRecord
	if v == "" {
		return r, fmt.Errorf("annotation %q is missing: the Deployment was not created by llmserve", RecordAnnotation)
	}
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return LaunchRecord{}, fmt.Errorf("decoding annotation %q: %w; the Deployment was not created by llmserve or the annotation was edited", RecordAnnotation, err)
	}
	return r, nil
}

// DefaultAcceleratorResource is the device plugin's resource name for an accelerator
// family: NVIDIA's plugin exposes nvidia.com/gpu, Intel's gpu.intel.com/i915 (gpu.intel.com/xe
// with the xe kernel driver).
func DefaultAcceleratorResource(a engine.Accelerator) string {
	switch a {
	case engine.CUDA:
		return "nvidia.com/gpu"
	case engine.XPU:
		return "gpu.intel.com/i915"
	}
	return ""
}

// DefaultAcceleratorCount is how many accelerators each replica requests when the count is
// not given: one per tensor-parallel rank (tensorParallel 0 means unset, so 1), none when no
// accelerator resource is requested.
func DefaultAcceleratorCount(resource string, tensorParallel int64) int64 {
	if resource == "" {
		return 0
	}
	return max(tensorParallel, 1)
}

// SecretName is the Secret holding the deployment's write-only values.
func SecretName(name string) string { return name + "-llmserve" }

func (d Deployment) selector() map[string]string {
	return map[string]string{InstanceLabel: d.Name, nameLabel: "llmserve"}
}

// objectLabels are the user's labels with the provider's on top, so a user label cannot
// hide an object from destroy or break the selector.
func (d Deployment) objectLabels() map[string]string {
	l := maps.Clone(d.Labels)
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, d.selector())
	l[ManagedByLabel] = managedBy
	return l
}

// secretData is what goes into the Secret: the engine's secret environment plus the API
// key under apiKeyEnv for engines that take it as a flag (SGLang's --api-key $(VAR)).
func secretData(s engine.Spec, sec engine.Secrets) map[string]string {
	data := s.SecretEnv(sec)
	if len(s.SecretArgs(sec)) > 0 {
		data[apiKeyEnv] = sec.APIKey
	}
	return data
}

// SecretApply is the Secret for sec, or nil when there are no secrets.
func (d Deployment) SecretApply(s engine.Spec, sec engine.Secrets) *corev1ac.SecretApplyConfiguration {
	data := secretData(s, sec)
	if len(data) == 0 {
		return nil
	}
	return corev1ac.Secret(SecretName(d.Name), d.Namespace).
		WithLabels(d.objectLabels()).WithAnnotations(d.Annotations).
		WithType(corev1.SecretTypeOpaque).WithStringData(data)
}

// DeploymentApply is the Deployment. hasSecrets says whether SecretApply returned one; the
// pod reads every key of it as environment, and SGLang's API key flag refers to it by
// $(VAR) expansion, so no secret is ever in the pod spec.
func (d Deployment) DeploymentApply(s engine.Spec, secretKeys []string) (*appsv1ac.DeploymentApplyConfiguration, error) {
	rec, err := json.Marshal(LaunchRecord{Spec: s, Deployment: d})
	if err != nil {
		return nil, fmt.Errorf("encoding launch record: %w", err)
	}
	annotations := maps.Clone(d.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[RecordAnnotation] = string(rec)

	entry := slices.Clone(s.Entrypoint)
	if len(entry) == 0 {
		entry = engine.DefaultEntrypoint(s.Engine)
	}
	args := s.Args()
	if slices.Contains(secretKeys, apiKeyEnv) {
		args = append(args, s.SecretArgs(engine.Secrets{APIKey: "$(" + apiKeyEnv + ")"})...)
	}
	c := corev1ac.Container().WithName(engineContainer).WithImage(d.Image).
		WithCommand(entry...).WithArgs(args...).
		WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(int32(s.Port)).WithProtocol(corev1.ProtocolTCP))
	// The engine's own environment (vLLM's development mode, which serves the cache reset
	// the benchmark's flush calls) and the devices gpu_ids selects on top of the user's, as
	// the Docker backend does.
	env := maps.Clone(d.Env)
	if env == nil {
		env = map[string]string{}
	}
	maps.Copy(env, s.Env())
	maps.Copy(env, deploy.GPUSelection(s, d.GPUIDs))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		c.WithEnv(corev1ac.EnvVar().WithName(k).WithValue(env[k]))
	}
	for _, k := range secretKeys {
		c.WithEnv(corev1ac.EnvVar().WithName(k).WithValueFrom(corev1ac.EnvVarSource().
			WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(SecretName(d.Name)).WithKey(k))))
	}
	health := func() *corev1ac.HTTPGetActionApplyConfiguration {
		return corev1ac.HTTPGetAction().WithPath(engine.HealthPath(s.Engine)).WithPort(intstr.FromString("http"))
	}
	const period = 10
	startupFailures := max(int32((d.ReadinessTimeoutSeconds+period-1)/period), 1)
	c.WithStartupProbe(corev1ac.Probe().WithHTTPGet(health()).WithPeriodSeconds(period).
		WithTimeoutSeconds(5).WithFailureThreshold(startupFailures))
	c.WithReadinessProbe(corev1ac.Probe().WithHTTPGet(health()).WithPeriodSeconds(period).
		WithTimeoutSeconds(5).WithFailureThreshold(3))
	pod := corev1ac.PodSpec().WithNodeSelector(d.NodeSelector)
	if d.AcceleratorResource != "" && d.AcceleratorCount > 0 {
		q := resource.MustParse(strconv.FormatInt(d.AcceleratorCount, 10))
		rl := corev1.ResourceList{corev1.ResourceName(d.AcceleratorResource): q}
		c.WithResources(corev1ac.ResourceRequirements().WithLimits(rl).WithRequests(rl))
	}
	if d.AcceleratorClaim != nil {
		// Each pod gets its own claim from the template (the resourceclaim controller makes
		// it, the scheduler allocates it); the engine container consumes all of it.
		pod.WithResourceClaims(corev1ac.PodResourceClaim().WithName(claimName).WithResourceClaimTemplateName(ClaimTemplateName(d.Name)))
		c.WithResources(corev1ac.ResourceRequirements().WithClaims(corev1ac.ResourceClaim().WithName(claimName)))
	}
	if d.ShmSizeBytes > 0 {
		size := resource.NewQuantity(d.ShmSizeBytes, resource.BinarySI)
		pod.WithVolumes(corev1ac.Volume().WithName(shmVolume).WithEmptyDir(
			corev1ac.EmptyDirVolumeSource().WithMedium(corev1.StorageMediumMemory).WithSizeLimit(*size)))
		c.WithVolumeMounts(corev1ac.VolumeMount().WithName(shmVolume).WithMountPath("/dev/shm"))
	}
	if mc := d.ModelCache; mc != nil {
		v := corev1ac.Volume().WithName(cacheVolume)
		if mc.ClaimName != "" {
			v.WithPersistentVolumeClaim(corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(mc.ClaimName).WithReadOnly(mc.ReadOnly))
		} else {
			v.WithHostPath(corev1ac.HostPathVolumeSource().WithPath(mc.HostPath).WithType(corev1.HostPathDirectoryOrCreate))
		}
		pod.WithVolumes(v)
		c.WithVolumeMounts(corev1ac.VolumeMount().WithName(cacheVolume).WithMountPath(mc.MountPath).WithReadOnly(mc.ReadOnly))
	}
	// Added last: WithContainers copies the container, so a mount added to c afterwards
	// would never reach the pod (the /dev/shm and model cache mounts once did not).
	pod.WithContainers(c)
	for _, t := range d.Tolerations {
		tol := corev1ac.Toleration().WithKey(t.Key).WithValue(t.Value).
			WithOperator(corev1.TolerationOperator(t.Operator)).WithEffect(corev1.TaintEffect(t.Effect))
		if t.TolerationSeconds != nil {
			tol.WithTolerationSeconds(*t.TolerationSeconds)
		}
		pod.WithTolerations(tol)
	}

	return appsv1ac.Deployment(d.Name, d.Namespace).
		WithLabels(d.objectLabels()).WithAnnotations(annotations).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(d.Replicas).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(d.selector())).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(d.objectLabels()).WithAnnotations(d.Annotations).
				WithSpec(pod))), nil
}

// ServiceApply is the Service in front of the replicas.
func (d Deployment) ServiceApply(s engine.Spec) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(d.Name, d.Namespace).
		WithLabels(d.objectLabels()).WithAnnotations(d.Annotations).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceType(d.ServiceType)).
			WithSelector(d.selector()).
			WithPorts(corev1ac.ServicePort().WithName("http").WithProtocol(corev1.ProtocolTCP).
				WithPort(d.ServicePort).WithTargetPort(intstr.FromInt32(int32(s.Port)))))
}
