// Package deploy turns a launch spec (internal/engine) into a running inference server: the
// container shape an accelerator needs, the launch record kept on the container, and the wait
// until the engine really serves. Where the container runs is a Backend's business
// (internal/deploy/docker); internal/deploy/kubernetes runs a Deployment instead and shares
// the readiness probe and server info read here (ARCHITECTURE.md, "Two backends"). Nothing
// here knows Terraform.
package deploy

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

// Label keys the provider puts on every container it creates.
const (
	// ManagedLabel marks containers created by this provider, so tests and operators can
	// find and sweep them.
	ManagedLabel = "dev.llmserve.managed"
	// SpecLabel holds Spec.Label(), read back on import.
	SpecLabel = "dev.llmserve.spec"
)

// Mount is a host path or named volume made visible inside the container (the model cache).
type Mount struct {
	Type     string `json:"type"` // "bind" or "volume"
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"read_only,omitempty"`
}

// Container is one engine instance as a Backend runs it: the description the Docker backend
// translates into its API objects (Kubernetes builds its pod template from the engine.Spec
// itself: kubernetes.Deployment).
type Container struct {
	Name       string
	Image      string
	Entrypoint []string
	Args       []string
	Env        map[string]string
	Labels     map[string]string
	Mounts     []Mount

	// Port is the engine's port inside the container; HostPort and BindAddress publish it.
	// HostPort 0 lets the engine host choose a free port.
	Port        int
	HostPort    int
	BindAddress string
	// HostNetwork shares the host's network namespace: nothing is published and the engine
	// answers on Port of the host itself.
	HostNetwork bool
	// Unpublished publishes nothing: the engine listens on 127.0.0.1 inside its own network
	// namespace, reached only from there (a benchmark runner sharing it).
	Unpublished bool

	// Devices are device nodes mapped one to one (Intel XPU: /dev/dri).
	Devices []string
	// GroupAdd are supplementary groups, by name or numeric id, that grant access to Devices.
	GroupAdd []string
	// ImageBackend is the compute backend the image must hold (one of the ggml backends its
	// ImageBackendsLabel names); empty for none. An image without the label is trusted.
	ImageBackend string
	// GPURequest asks the runtime for NVIDIA GPUs: nil for none, an empty slice for all,
	// otherwise the device ids.
	GPURequest []string
	// IPCHost shares the host's IPC namespace; tensor-parallel workers exchange tensors
	// through shared memory.
	IPCHost bool
	// ShmSizeBytes sizes /dev/shm when IPC is private; 0 keeps the engine host's default.
	ShmSizeBytes int64

	RestartPolicy      string // "no", "on-failure", "unless-stopped", "always"
	StopTimeoutSeconds int

	// Files are written into the container after it is created and before it starts:
	// secrets an engine reads from a file, so they appear neither in its environment nor in
	// its command.
	Files []File
}

// File is one file written into a container. Content may be a secret: it is never logged,
// recorded or returned.
type File struct {
	Path    string // absolute, inside the container
	Content []byte
	Mode    int64
}

// Placement is where and how the container runs, as opposed to what the engine does. Env
// holds the user's environment only; secrets never enter a Placement.
//
// Collections keep the difference between unset (nil, recorded as null) and empty (recorded
// as [] or {}), so an import restores environment = {} as {} and plans no replacement.
type Placement struct {
	Name               string            `json:"name"`
	Image              string            `json:"image"`
	Env                map[string]string `json:"env"`
	Labels             map[string]string `json:"labels"`
	Mounts             []Mount           `json:"mounts"`
	ModelHostPath      string            `json:"model_host_path,omitempty"` // bind-mounted read-only at Spec.Model
	HostPort           int               `json:"host_port,omitempty"`
	BindAddress        string            `json:"bind_address,omitempty"`
	HostNetwork        bool              `json:"host_network,omitempty"`
	Unpublished        bool              `json:"unpublished,omitempty"` // nothing published, the engine on the container's loopback (publish = false)
	GroupAdd           []string          `json:"group_add"`             // overrides the accelerator's default groups
	Devices            []string          `json:"devices"`               // overrides DefaultDevices; [] maps none
	GPUIDs             []string          `json:"gpu_ids"`
	ShmSizeBytes       int64             `json:"shm_size_bytes,omitempty"`
	RestartPolicy      string            `json:"restart_policy,omitempty"`
	StopTimeoutSeconds int               `json:"stop_timeout_seconds,omitempty"`
	// Meta is opaque to deploy: settings of the caller (e.g. Terraform-only attributes) that
	// must survive an import.
	Meta map[string]string `json:"meta,omitempty"`
}

// ListenAddress is the address the engine of a container so placed binds in its network
// namespace (engine.Spec.ListenAddress). With host networking nothing is published, so the
// engine listens on BindAddress itself: a state saying 127.0.0.1 while the engine answered
// on every interface would be a lie. Otherwise it is empty (every address of the container's
// own namespace), and the published port restricts who reaches it.
//
// Unpublished, it is the container's loopback: not even a neighbour on the engine's bridge
// network reaches the engine, only its own network namespace (a benchmark runner sharing it).
func (p Placement) ListenAddress() string {
	switch {
	case p.HostNetwork:
		return p.BindAddress
	case p.Unpublished:
		return UnpublishedAddress
	}
	return ""
}

// UnpublishedAddress is where an unpublished engine listens, inside its network namespace.
const UnpublishedAddress = "127.0.0.1"

// XPUAffinityEnv is the Level Zero variable that selects Intel GPUs for accelerator = "xpu":
// a comma-separated list of device indices, or device.sub-device pairs, in the order the Level
// Zero driver enumerates them (Level Zero specification, "Affinity Mask"; sycl-ls and xpu-smi
// discovery show the indices). Devices outside the mask are invisible to the process.
const XPUAffinityEnv = "ZE_AFFINITY_MASK"

// vulkanDevice is one entry of GGML_VK_VISIBLE_DEVICES: a physical device index.
var vulkanDevice = regexp.MustCompile(`^[0-9]+$`)

// levelZeroDevice is one entry of ZE_AFFINITY_MASK: a device index or device.sub-device.
var levelZeroDevice = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// cudaDevice is an NVIDIA device as the NVIDIA container toolkit takes it (Docker's device
// requests, NVIDIA_VISIBLE_DEVICES): an index, a GPU UUID ("GPU-8f3c…"), or a MIG device's
// UUID ("MIG-…", and the older "MIG-GPU-<uuid>/<gi>/<ci>"), as nvidia-smi -L lists them.
var cudaDevice = regexp.MustCompile(`^([0-9]+|GPU-[0-9A-Fa-f][0-9A-Fa-f-]*|MIG-[0-9A-Za-z][0-9A-Za-z/-]*)$`)

// LaunchRecord is what a container remembers about how it was launched (in SpecLabel), so it can
// be imported into the same configuration without guessing from its argv.
type LaunchRecord struct {
	Spec      engine.Spec `json:"spec"`
	Placement Placement   `json:"placement"`
}

// ParseLaunchRecord decodes SpecLabel.
func ParseLaunchRecord(v string) (LaunchRecord, error) {
	var r LaunchRecord
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return LaunchRecord{}, fmt.Errorf("decoding label %q: %w; the container was not created by this provider or the label was edited", SpecLabel, err)
	}
	return r, nil
}

// DefaultGroups grant the container access to GPU device nodes: /dev/dri/renderD* is owned
// by group render, /dev/dri/card* by video.
var DefaultGroups = []string{"render", "video"}

// ImageBackendsLabel is the label by which an image built by scripts/build-llamacpp-image.sh
// names the ggml backends it holds ("cpu", "cpu,vulkan").
const ImageBackendsLabel = "org.llmserve.llamacpp.backends"

// DefaultDevices are the host device nodes an accelerator maps when Placement.Devices is
// unset: the DRM nodes for Intel GPUs and Vulkan devices (ANV, RADV and Mesa's other drivers
// open /dev/dri/renderD*), none for the others (NVIDIA GPUs come through the device request).
// lavapipe needs none: a placement on it sets Devices to [].
func DefaultDevices(a engine.Accelerator) []string {
	if a == engine.XPU || a == engine.Vulkan {
		return []string{"/dev/dri"}
	}
	return nil
}

// NewContainer builds the container that launches the spec. User labels are kept; the provider's
// own labels are added on top so a user label cannot hide a container from the sweeper.
func NewContainer(s engine.Spec, p Placement, sec engine.Secrets) (Container, error) {
	rec, err := json.Marshal(LaunchRecord{Spec: s, Placement: p})
	if err != nil {
		return Container{}, fmt.Errorf("encoding launch record: %w", err)
	}
	label := string(rec)
	entry := slices.Clone(s.Entrypoint)
	if len(entry) == 0 {
		entry = engine.DefaultEntrypoint(s.Engine)
	}
	c := Container{
		Name:               p.Name,
		Image:              p.Image,
		Entrypoint:         entry,
		Args:               append(s.Args(), s.SecretArgs(sec)...),
		Env:                maps.Clone(p.Env),
		Labels:             maps.Clone(p.Labels),
		Mounts:             slices.Clone(p.Mounts),
		Port:               s.Port,
		HostPort:           p.HostPort,
		BindAddress:        p.BindAddress,
		HostNetwork:        p.HostNetwork,
		Unpublished:        p.Unpublished,
		ShmSizeBytes:       p.ShmSizeBytes,
		RestartPolicy:      p.RestartPolicy,
		StopTimeoutSeconds: p.StopTimeoutSeconds,
	}
	if c.Env == nil {
		c.Env = map[string]string{}
	}
	maps.Copy(c.Env, s.Env())
	maps.Copy(c.Env, s.SecretEnv(sec))
	// Where the engine reads a secret from a file, write the file instead: the environment
	// and the command are what docker inspect shows.
	files, fileArgs, replaced := s.SecretFiles(sec)
	for _, k := range replaced {
		delete(c.Env, k)
	}
	c.Args = append(c.Args, fileArgs...)
	for _, p := range slices.Sorted(maps.Keys(files)) {
		// Readable by every user: the engine may run as a non-root user of the image.
		c.Files = append(c.Files, File{Path: p, Content: files[p], Mode: 0o444})
	}
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	c.Labels[ManagedLabel] = "true"
	c.Labels[SpecLabel] = label
	if p.ModelHostPath != "" {
		if !path.IsAbs(s.Model) {
			return Container{}, fmt.Errorf("model_host_path is mounted at model, so model must be an absolute path inside the container, got %q", s.Model)
		}
		c.Mounts = append(c.Mounts, Mount{Type: "bind", Source: p.ModelHostPath, Target: s.Model, ReadOnly: true})
	}
	if p.HostNetwork {
		maps.Copy(c.Env, s.HostNetworkEnv(p.Env))
	}
	c.Devices = DefaultDevices(s.Accelerator)
	if p.Devices != nil {
		c.Devices = slices.Clone(p.Devices)
	}
	if s.UsesVulkan() {
		c.ImageBackend = "vulkan"
	}
	switch s.Accelerator {
	case engine.XPU, engine.Vulkan:
		if len(c.Devices) > 0 {
			// The groups grant access to the device nodes; with none mapped (lavapipe) they
			// would only have to exist in the image.
			c.GroupAdd = slices.Clone(DefaultGroups)
		}
		// SGLang's and vLLM's tensor-parallel ranks exchange tensors through shared memory;
		// llama.cpp runs in one process.
		c.IPCHost = !s.UsesVulkan()
		maps.Copy(c.Env, GPUSelection(s, p.GPUIDs))
	case engine.CUDA:
		c.GPURequest = []string{}
		if len(p.GPUIDs) > 0 {
			c.GPURequest = slices.Clone(p.GPUIDs)
		}
		c.IPCHost = true
	}
	if len(p.GroupAdd) > 0 {
		c.GroupAdd = slices.Clone(p.GroupAdd)
	}
	return c, nil
}
