package docker

import (
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

// TestReferenceContainerXPU asserts the Engine API objects for the B70 deployment: the Arc
// GPUs' device nodes, the groups that own them, host IPC for the tensor-parallel workers and
// the shared memory size. This host has no /dev/dri, so the objects are checked, not run.
func TestReferenceContainerXPU(t *testing.T) {
	spec := engine.Spec{
		Engine: engine.SGLang, Model: "ulkaa/Qwen3.8-27B-AWQ-INT4", Revision: "2bf7f1646dc0875cff4404fdfef976cfb0ff2199",
		TensorParallel: 4, ContextLength: 262144, Accelerator: engine.XPU, Port: 30000,
		Speculative: &engine.Speculative{Algorithm: "EAGLE", Steps: 7, TopK: 1, DraftTokens: 8},
	}
	c, err := deploy.NewContainer(spec, deploy.Placement{
		Name: "qwen", Image: "rahulunair/sglang-xpu@sha256:feb7b9130eff2fa26dfa09ab1a8b9a8423db013ad7d18f804f8b55a57cb2c175",
		HostPort: 30000, BindAddress: "0.0.0.0", ShmSizeBytes: 32 << 30,
		Mounts: []deploy.Mount{{Type: "bind", Source: "/srv/hf", Target: "/root/.cache/huggingface"}},
	}, engine.Secrets{HubToken: "hf_x"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, hc, err := ToDocker(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := []container.DeviceMapping{{PathOnHost: "/dev/dri", PathInContainer: "/dev/dri", CgroupPermissions: "rwm"}}; !slices.Equal(hc.Devices, want) {
		t.Errorf("Devices = %+v, want %+v", hc.Devices, want)
	}
	if want := []string{"render", "video"}; !slices.Equal(hc.GroupAdd, want) {
		t.Errorf("GroupAdd = %q, want %q", hc.GroupAdd, want)
	}
	if hc.IpcMode != container.IPCModeHost {
		t.Errorf("IpcMode = %q, want host", hc.IpcMode)
	}
	if hc.ShmSize != 34359738368 {
		t.Errorf("ShmSize = %d, want 34359738368 (32 GiB)", hc.ShmSize)
	}
	if hc.DeviceRequests != nil {
		t.Errorf("XPU must not request NVIDIA devices: %+v", hc.DeviceRequests)
	}
	if got := hc.PortBindings["30000/tcp"]; len(got) != 1 || got[0].HostPort != "30000" || got[0].HostIP != "0.0.0.0" {
		t.Errorf("PortBindings = %+v", hc.PortBindings)
	}
	if len(hc.Mounts) != 1 || hc.Mounts[0].Target != "/root/.cache/huggingface" {
		t.Errorf("Mounts = %+v", hc.Mounts)
	}
	if want := []string{"python3", "-m", "sglang.launch_server"}; !slices.Equal(cfg.Entrypoint, want) {
		t.Errorf("Entrypoint = %q", cfg.Entrypoint)
	}
	if !slices.Contains(cfg.Env, "HF_TOKEN=hf_x") {
		t.Errorf("Env lacks the hub token: %q", cfg.Env)
	}
	if cfg.Labels[deploy.ManagedLabel] != "true" {
		t.Errorf("Labels = %v", cfg.Labels)
	}
}

func TestCUDADeviceRequest(t *testing.T) {
	spec := engine.Spec{Engine: engine.VLLM, Model: "m", TensorParallel: 2, Accelerator: engine.CUDA, Port: 8000}
	for _, tt := range []struct {
		name  string
		ids   []string
		count int
	}{{"all gpus", nil, -1}, {"two gpus", []string{"0", "1"}, 0}} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := deploy.NewContainer(spec, deploy.Placement{Name: "v", Image: "i", GPUIDs: tt.ids}, engine.Secrets{})
			if err != nil {
				t.Fatal(err)
			}
			_, hc, err := ToDocker(c)
			if err != nil {
				t.Fatal(err)
			}
			if len(hc.DeviceRequests) != 1 {
				t.Fatalf("DeviceRequests = %+v", hc.DeviceRequests)
			}
			r := hc.DeviceRequests[0]
			if r.Driver != "nvidia" || r.Count != tt.count || !slices.Equal(r.DeviceIDs, tt.ids) || !slices.Equal(r.Capabilities[0], []string{"gpu"}) {
				t.Errorf("DeviceRequest = %+v", r)
			}
			if hc.IpcMode != container.IPCModeHost || len(hc.Devices) != 0 {
				t.Errorf("IpcMode %q Devices %+v", hc.IpcMode, hc.Devices)
			}
		})
	}
}

// publish = false: no port binding at all, and the engine told to listen on the container's
// loopback, so only its own network namespace reaches it; the launch record keeps the choice
// for an import.
func TestUnpublishedContainer(t *testing.T) {
	spec := engine.Spec{Engine: engine.LlamaCpp, Model: "/models/m.gguf", Port: 8080}
	p := deploy.Placement{Name: "quiet", Image: "llmserve/llamacpp:latest", BindAddress: "127.0.0.1", Unpublished: true}
	spec.ListenAddress = p.ListenAddress()
	c, err := deploy.NewContainer(spec, p, engine.Secrets{})
	if err != nil {
		t.Fatal(err)
	}
	_, hc, err := ToDocker(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(hc.PortBindings) != 0 || hc.NetworkMode != "" {
		t.Errorf("port bindings %v, network mode %q: want none and the default bridge", hc.PortBindings, hc.NetworkMode)
	}
	if args := strings.Join(c.Args, " "); !strings.Contains(args, "--host 127.0.0.1") {
		t.Errorf("the engine does not listen on its loopback: %s", args)
	}
	rec, err := deploy.ParseLaunchRecord(c.Labels[deploy.SpecLabel])
	if err != nil || !rec.Placement.Unpublished {
		t.Errorf("launch record %+v (%v): want unpublished kept", rec.Placement, err)
	}
}
