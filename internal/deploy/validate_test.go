package deploy

import (
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

func TestPlacementValidate(t *testing.T) {
	t.Parallel()
	cpu := engine.Spec{Engine: engine.SGLang, Model: "org/m", Accelerator: engine.CPU}
	cuda := engine.Spec{Engine: engine.SGLang, Model: "/models/m", Accelerator: engine.CUDA}
	xpu := engine.Spec{Engine: engine.SGLang, Model: "/models/m", Accelerator: engine.XPU, TensorParallel: 2}
	ok := Placement{Name: "s", Image: "lmsysorg/sglang:v0.5.4", BindAddress: "127.0.0.1"}
	with := func(f func(*Placement)) Placement { p := ok; f(&p); return p }
	tests := []struct {
		name  string
		spec  engine.Spec
		p     Placement
		field string // "" for none
		want  string
	}{
		{"valid", cpu, ok, "", ""},
		{"image by id", cpu, with(func(p *Placement) { p.Image = "sha256:" + strings.Repeat("a", 64) }), "", ""},
		{"image with registry port", cpu, with(func(p *Placement) { p.Image = "registry.local:5000/sglang@sha256:" + strings.Repeat("b", 64) }), "", ""},
		{"ipv6 bind", cpu, with(func(p *Placement) { p.BindAddress = "::1" }), "", ""},
		{"unpublished", cpu, with(func(p *Placement) { p.Unpublished = true }), "", ""},
		{"unpublished host network", cpu, with(func(p *Placement) { p.Unpublished, p.HostNetwork = true, true }), "publish", "does not apply with host networking"},
		{"unpublished host port", cpu, with(func(p *Placement) { p.Unpublished, p.HostPort = true, 30000 }), "host_port", "does not apply with publish = false"},
		{"localhost bind", cpu, with(func(p *Placement) { p.BindAddress = "localhost" }), "bind_address", `"localhost" is not an IP address`},
		{"image empty", cpu, with(func(p *Placement) { p.Image = " " }), "image", "must name the engine image"},
		{"image tab", cpu, with(func(p *Placement) { p.Image = "a\tb" }), "image", "contains spaces"},
		{"image upper", cpu, with(func(p *Placement) { p.Image = "Repo/Img" }), "image", "is not an image reference"},
		{"env =", cpu, with(func(p *Placement) { p.Env = map[string]string{"A=B": "1"} }), `environment["A=B"]`, "is not a valid variable name"},
		{"env empty key", cpu, with(func(p *Placement) { p.Env = map[string]string{"": "1"} }), "environment", "empty variable name"},
		{"env secret", cpu, with(func(p *Placement) { p.Env = map[string]string{"HF_TOKEN": "x"} }), `environment["HF_TOKEN"]`, "set hub_token_wo"},
		{"env multi-line value", cpu, with(func(p *Placement) { p.Env = map[string]string{"CERT": "a\n\tb"} }), "", ""},
		{"env escape value", cpu, with(func(p *Placement) { p.Env = map[string]string{"A": "\x1b[2J"} }), `environment["A"]`, "control characters"},
		{"label reserved", cpu, with(func(p *Placement) { p.Labels = map[string]string{SpecLabel: "{}"} }), `labels["dev.llmserve.spec"]`, "is written by the provider"},
		{"mount empty source", cpu, with(func(p *Placement) { p.Mounts = []Mount{{Type: "bind", Target: "/d"}} }), "mounts[0].source", "must not be empty"},
		{"mount relative target", cpu, with(func(p *Placement) { p.Mounts = []Mount{{Type: "bind", Source: "/s", Target: "d"}} }), "mounts[0].target", "must be an absolute path"},
		{"mount volume", cpu, with(func(p *Placement) { p.Mounts = []Mount{{Type: "volume", Source: "hf-cache", Target: "/d"}} }), "", ""},
		{"mount duplicate", cpu, with(func(p *Placement) {
			p.Mounts = []Mount{{Type: "bind", Source: "/a", Target: "/d"}, {Type: "bind", Source: "/b", Target: "/d/."}}
		}), "mounts[1].target", "already the target of mounts[0]"},
		{"mount over model", cuda, with(func(p *Placement) {
			p.ModelHostPath = "/srv/m"
			p.Mounts = []Mount{{Type: "bind", Source: "/a", Target: "/models/m"}}
		}), "mounts[0].target", "already the target of model"},
		{"gpu ids on cpu", cpu, with(func(p *Placement) { p.GPUIDs = []string{"0"} }), "gpu_ids", `with "cpu" it would be ignored`},
		{"gpu ids duplicate", cuda, with(func(p *Placement) { p.GPUIDs = []string{"0", "0"} }), "gpu_ids[1]", "already listed as gpu_ids[0]"},
		{"gpu ids cuda", cuda, with(func(p *Placement) { p.GPUIDs = []string{"0", "GPU-1a2b"} }), "", ""},
		{"gpu ids cuda mig", cuda, with(func(p *Placement) {
			p.GPUIDs = []string{"MIG-4f1e2b7c-1234-5678-9abc-def012345678", "MIG-GPU-8f3c2b1a-0000-1111-2222-333344445555/1/0"}
		}), "", ""},
		{"gpu ids cuda cpu", cuda, with(func(p *Placement) { p.GPUIDs = []string{"cpu"} }), "gpu_ids[0]", `must be a GPU index ("0") or a GPU or MIG UUID`},
		{"gpu ids cuda negative", cuda, with(func(p *Placement) { p.GPUIDs = []string{"0", "-1"} }), "gpu_ids[1]", `got "-1"`},
		{"gpu ids cuda level zero sub-device", cuda, with(func(p *Placement) { p.GPUIDs = []string{"0.1"} }), "gpu_ids[0]", `got "0.1"`},
		// Intel GPUs through the Level Zero affinity mask: indices or device.sub-device.
		{"gpu ids xpu", xpu, with(func(p *Placement) { p.GPUIDs = []string{"2", "3.1"} }), "", ""},
		{"gpu ids xpu uuid", xpu, with(func(p *Placement) { p.GPUIDs = []string{"0", "GPU-1a2b"} }), "gpu_ids[1]", "Level Zero device index"},
		{"gpu ids xpu too few for tp", xpu, with(func(p *Placement) { p.GPUIDs = []string{"1"} }), "gpu_ids", "tensor_parallel_size = 2 needs one per rank"},
		{"gpu ids xpu and the mask in environment", xpu, with(func(p *Placement) {
			p.GPUIDs, p.Env = []string{"0", "1"}, map[string]string{"ZE_AFFINITY_MASK": "0,1"}
		}), `environment["ZE_AFFINITY_MASK"]`, "set the devices in one place"},
		{"mask in environment without gpu ids", xpu, with(func(p *Placement) { p.Env = map[string]string{"ZE_AFFINITY_MASK": "0,1"} }), "", ""},
		{"shm with cuda", cuda, with(func(p *Placement) { p.ShmSizeBytes = 1 << 30 }), "shm_size_mb", "has no effect"},
		{"shm with cpu", cpu, with(func(p *Placement) { p.ShmSizeBytes = 1 << 30 }), "", ""},
		{"host port with host networking", cpu, with(func(p *Placement) { p.HostNetwork, p.HostPort = true, 8080 }), "host_port", "does not apply with host networking"},
		{"host networking", cpu, with(func(p *Placement) { p.HostNetwork = true }), "", ""},
		{"model host path relative", cuda, with(func(p *Placement) { p.ModelHostPath = "m" }), "model_host_path", "absolute path on the engine host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.p.Validate(tt.spec)
			if tt.field == "" {
				if len(got) != 0 {
					t.Fatalf("Validate = %v, want no problems", got)
				}
				return
			}
			if len(got) != 1 || got[0].Path.String() != tt.field || !strings.Contains(got[0].Detail, tt.want) {
				t.Fatalf("Validate = %v, want one problem on %s containing %q", got, tt.field, tt.want)
			}
		})
	}
}

func TestPlacementCheckReachable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, host, bind string
		want             string // "" for no problem
	}{
		{"local socket, loopback", "unix:///var/run/docker.sock", "127.0.0.1", ""},
		{"remote tcp, loopback", "tcp://gpu-host.example.com:2376", "127.0.0.1", "the engine host gpu-host.example.com is remote, and bind_address 127.0.0.1 serves only on its loopback"},
		{"remote ssh, ipv6 loopback", "ssh://deploy@10.0.0.7", "::1", "the engine host 10.0.0.7 is remote, and bind_address ::1"},
		{"remote tcp, every interface", "tcp://gpu-host.example.com:2376", "0.0.0.0", ""},
		{"tcp to localhost", "tcp://localhost:2376", "127.0.0.1", ""},
		{"tcp to loopback address", "tcp://127.0.0.1:2376", "127.0.0.1", ""},
		{"unparsable host", "tcp://[::1", "127.0.0.1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Placement{BindAddress: tt.bind}.CheckReachable(tt.host)
			if tt.want == "" {
				if len(got) != 0 {
					t.Fatalf("CheckReachable = %v, want no problem", got)
				}
				return
			}
			if len(got) != 1 || got[0].Path.String() != "bind_address" || !strings.Contains(got[0].Detail, tt.want) || !strings.Contains(got[0].Detail, `Set bind_address = "0.0.0.0"`) {
				t.Fatalf("CheckReachable = %v, want one bind_address problem containing %q and the fix", got, tt.want)
			}
		})
	}
}
