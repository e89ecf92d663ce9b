package engine

import "testing"

func TestParseDevices(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		spec Spec
		out  string
		want string
	}{
		{"llama.cpp CPU build", Spec{Engine: LlamaCpp}, "Available devices:\n  (none)\n", ""},
		{"llama.cpp two GPUs", Spec{Engine: LlamaCpp}, "Available devices:\n  CUDA0: NVIDIA GeForce RTX 4090 (24076 MiB, 23633 MiB free)\n  CUDA1: NVIDIA GeForce RTX 4090 (24076 MiB, 24000 MiB free)\n",
			"2 x NVIDIA GeForce RTX 4090, 24076 MiB each"},
		{"llama.cpp SYCL", Spec{Engine: LlamaCpp}, "load_backend: loaded SYCL backend\nAvailable devices:\n  SYCL0: Intel(R) Arc(TM) Pro B70 Graphics (32656 MiB, 32000 MiB free)\n",
			"Intel(R) Arc(TM) Pro B70 Graphics, 32656 MiB"},
		{"nvidia-smi", Spec{Engine: VLLM, Accelerator: CUDA}, "NVIDIA H200, 143771\nNVIDIA H200, 143771\n", "2 x NVIDIA H200, 143771 MiB each"},
		{"torch.xpu, mixed", Spec{Engine: SGLang, Accelerator: XPU}, "[\"Intel(R) Arc(TM) Pro B70 Graphics\", 34242297856]\n[\"Intel(R) Arc(TM) B580 Graphics\", 12168933376]\n",
			"Intel(R) Arc(TM) Pro B70 Graphics, 32656 MiB; Intel(R) Arc(TM) B580 Graphics, 11605 MiB"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			devs, err := tt.spec.ParseDevices(tt.out)
			if err != nil {
				t.Fatal(err)
			}
			if got := DescribeDevices(devs); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	for _, bad := range []struct {
		spec Spec
		out  string
	}{
		{Spec{Engine: LlamaCpp}, "error: invalid argument: --list-devices"},
		{Spec{Engine: VLLM, Accelerator: CUDA}, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"},
		{Spec{Engine: SGLang, Accelerator: XPU}, "Traceback (most recent call last):"},
	} {
		if devs, err := bad.spec.ParseDevices(bad.out); err == nil {
			t.Errorf("%s %q: got %v, want an error", bad.spec.Engine, bad.out, devs)
		}
	}
	if p := (Spec{Engine: SGLang, Accelerator: CPU}).DeviceProbe(); p != nil {
		t.Errorf("a CPU server has no device to probe, got %q", p)
	}
}
