package deploy

import (
	"context"

	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

// llama.cpp on an Intel GPU is launched through Vulkan: the render nodes, the render and
// video groups, the devices gpu_ids selects in ggml's variable (not Level Zero's), and no
// host IPC (one process). lavapipe maps no device node.
func TestNewContainerVulkan(t *testing.T) {
	t.Parallel()
	llama := func(a engine.Accelerator, tp int) engine.Spec {
		return engine.Spec{Engine: engine.LlamaCpp, Model: "/models/m.gguf", TensorParallel: tp, Accelerator: a, Port: 8080}
	}
	tests := []struct {
		name    string
		spec    engine.Spec
		p       Placement
		devices []string
		groups  []string
		env     map[string]string
		ipc     bool
		backend string
	}{
		{"llamacpp on two intel gpus", llama(engine.XPU, 2), Placement{GPUIDs: []string{"1", "3"}},
			[]string{"/dev/dri"}, []string{"render", "video"}, map[string]string{"GGML_VK_VISIBLE_DEVICES": "1,3"}, false, "vulkan"},
		{"llamacpp on lavapipe", llama(engine.Vulkan, 1), Placement{GPUIDs: []string{"0"}, Devices: []string{}},
			[]string{}, nil, map[string]string{"GGML_VK_VISIBLE_DEVICES": "0"}, false, "vulkan"},
		{"sglang on intel gpus keeps level zero", engine.Spec{Engine: engine.SGLang, Model: "m", TensorParallel: 2, Accelerator: engine.XPU, Port: 30000},
			Placement{GPUIDs: []string{"0", "1"}}, []string{"/dev/dri"}, []string{"render", "video"}, map[string]string{"ZE_AFFINITY_MASK": "0,1"}, true, ""},
		{"sglang tp 2 on host network gets FI_TCP_IFACE", engine.Spec{Engine: engine.SGLang, Model: "m", TensorParallel: 2, Accelerator: engine.XPU, Port: 30000},
			Placement{HostNetwork: true}, []string{"/dev/dri"}, []string{"render", "video"}, map[string]string{"FI_TCP_IFACE": "lo"}, true, ""},
		{"bridge network needs no FI_TCP_IFACE", engine.Spec{Engine: engine.VLLM, Model: "m", TensorParallel: 2, Accelerator: engine.XPU, Port: 8000},
			Placement{}, []string{"/dev/dri"}, []string{"render", "video"}, map[string]string{"VLLM_SERVER_DEV_MODE": "1"}, true, ""},
		{"the user's FI_TCP_IFACE stays", engine.Spec{Engine: engine.VLLM, Model: "m", TensorParallel: 2, Accelerator: engine.XPU, Port: 8000},
			Placement{HostNetwork: true, Env: map[string]string{"FI_TCP_IFACE": "eno3np0"}}, []string{"/dev/dri"}, []string{"render", "video"},
			map[string]string{"VLLM_SERVER_DEV_MODE": "1", "FI_TCP_IFACE": "eno3np0"}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewContainer(tt.spec, tt.p, engine.Secrets{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.Devices, tt.devices) || !slices.Equal(c.GroupAdd, tt.groups) || !maps.Equal(c.Env, tt.env) || c.IPCHost != tt.ipc || c.ImageBackend != tt.backend {
				t.Errorf("devices %q groups %q env %v ipc %v backend %q; want %q %q %v %v %q", c.Devices, c.GroupAdd, c.Env, c.IPCHost, c.ImageBackend,
					tt.devices, tt.groups, tt.env, tt.ipc, tt.backend)
			}
			tt.p.Image = "llmserve/llamacpp-vulkan:0.7.0-dfsg-2"
			if problems := tt.p.Validate(tt.spec); len(problems) != 0 {
				t.Errorf("placement problems %v", problems)
			}
		})
	}
}

func TestValidateVulkanPlacement(t *testing.T) {
	t.Parallel()
	llama := engine.Spec{Engine: engine.LlamaCpp, Model: "/m.gguf", TensorParallel: 2, Accelerator: engine.Vulkan, Port: 8080}
	tests := []struct {
		name   string
		p      Placement
		field  string
		detail string
	}{
		{"more devices than gpu_ids", Placement{Image: "i", GPUIDs: []string{"0"}}, "gpu_ids", "list 2 devices or lower tensor_parallel_size"},
		{"not a vulkan index", Placement{Image: "i", GPUIDs: []string{"0.1", "1"}}, "gpu_ids[0]", "must be a Vulkan device index"},
		{"both gpu_ids and the variable", Placement{Image: "i", GPUIDs: []string{"0", "1"}, Env: map[string]string{"GGML_VK_VISIBLE_DEVICES": "0"}},
			`environment["GGML_VK_VISIBLE_DEVICES"]`, "set the devices in one place"},
		{"device outside /dev", Placement{Image: "i", Devices: []string{"/tmp/x"}}, "devices[0]", "under /dev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range tt.p.Validate(llama) {
				got = append(got, p.Error())
				if p.Path.String() == tt.field && strings.Contains(p.Detail, tt.detail) {
					return
				}
			}
			t.Errorf("want a problem on %s mentioning %q, got %q", tt.field, tt.detail, got)
		})
	}
}

// A Vulkan launch on an image that says it lacks the backend is refused before it starts,
// and the container removed; an image without the label is trusted.
func TestLaunchRefusesImageWithoutBackend(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		labels map[string]string
		refuse bool
	}{
		{"cpu-only image", map[string]string{ImageBackendsLabel: "cpu"}, true},
		{"vulkan image", map[string]string{ImageBackendsLabel: "cpu,vulkan"}, false},
		{"unlabelled image", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := &createBackend{fakeBackend: fakeBackend{st: Status{Labels: tt.labels}}}
			_, _, err := Launch(context.Background(), b, Container{Name: "s", Image: "llmserve/llamacpp:x", ImageBackend: "vulkan"}, Readiness{})
			if tt.refuse {
				if err == nil || !strings.Contains(err.Error(), "--vulkan") || slices.Contains(b.calls, "start") || !slices.Contains(b.calls, "remove") {
					t.Errorf("err %v, calls %q; want a refusal naming --vulkan, no start, the container removed", err, b.calls)
				}
				return
			}
			if !slices.Contains(b.calls, "start") {
				t.Errorf("calls %q: the container was not started (err %v)", b.calls, err)
			}
		})
	}
}

// createBackend creates and removes, recording both.
type createBackend struct{ fakeBackend }

func (b *createBackend) Create(context.Context, Container) (string, error) {
	b.calls = append(b.calls, "create")
	return "c1", nil
}
func (b *createBackend) Remove(context.Context, string, time.Duration) error {
	b.calls = append(b.calls, "remove")
	return nil
}
