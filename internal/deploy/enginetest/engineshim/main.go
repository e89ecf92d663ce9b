// Command engineshim stands in for an engine's launcher inside the test image: installed as
// python3 and llama-server, it takes the argv the provider builds for SGLang, vLLM or llama.cpp
// unchanged, maps the flags the simulated engine understands, and execs /simengine. Tests
// therefore run the provider's real launch command, not a test-only one. Installed as
// nvidia-smi too, it answers the provider's device probes (engine.Spec.DeviceProbe) in each
// tool's real output shape, listing the devices in SIMENGINE_DEVICES ("name:MiB;name:MiB").
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// flagMap is engine flag -> simengine flag, for flags that take a value.
var flagMap = map[string]string{
	"--host": "-host", "--port": "-port", "--api-key": "-api-key", "--admin-api-key": "-admin-api-key",
	"--context-length": "-context-length", "--max-model-len": "-context-length", "--ctx-size": "-context-length",
	"--max-running-requests": "-slots", "--max-num-seqs": "-slots", "--parallel": "-slots",
}

func main() {
	if out, code, ok := probe(filepath.Base(os.Args[0]), os.Args[1:], os.Getenv("SIMENGINE_DEVICES")); ok {
		fmt.Print(out)
		os.Exit(code)
	}
	engine, args, err := parse(filepath.Base(os.Args[0]), os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "engineshim: %v\n", err)
		os.Exit(2)
	}
	args = append(args, protocolArgs(engine, os.Args[1:], os.Getenv)...)
	args = append(args, strings.Fields(os.Getenv("SIMENGINE_ARGS"))...)
	fmt.Fprintf(os.Stderr, "engineshim: %s launch %q -> /simengine %q\n", engine, os.Args, args)
	if err := syscall.Exec("/simengine", append([]string{"/simengine"}, args...), os.Environ()); err != nil {
		fmt.Fprintf(os.Stderr, "engineshim: exec /simengine: %v\n", err)
		os.Exit(127)
	}
}

func parse(prog string, argv []string) (string, []string, error) {
	engine := "llamacpp"
	if prog == "python3" {
		if len(argv) < 2 || argv[0] != "-m" {
			return "", nil, fmt.Errorf("python3 shim needs -m <module>, got %q", argv)
		}
		switch argv[1] {
		case "sglang.launch_server":
			engine = "sglang"
		case "vllm.entrypoints.openai.api_server":
			engine = "vllm"
		default:
			return "", nil, fmt.Errorf("unknown module %q", argv[1])
		}
		argv = argv[2:]
	}
	var out []string
	model, served := "", ""
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		val := func() string {
			if i+1 < len(argv) {
				i++
				return argv[i]
			}
			return ""
		}
		switch a {
		case "--model-path", "--model", "-m":
			model = val()
		case "--served-model-name", "--alias":
			served = val()
		case "--metrics":
		default:
			if sim, ok := flagMap[a]; ok {
				out = append(out, sim+"="+val())
			} else if strings.HasPrefix(a, "--") && i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "--") {
				i++ // an engine flag the simulation has no use for, with its value
			}
		}
	}
	if served == "" {
		served = model
	}
	if served == "" {
		return "", nil, fmt.Errorf("no model in %q", argv)
	}
	return engine, append(out, "-model="+served), nil
}

// protocolArgs turns the engine's own launch into the simulated engine's protocol double when
// the container's SIMENGINE_PROTOCOL asks for one ("auto": the double of the engine launched;
// otherwise a protocol name such as sglang-0.4). The double then serves what the launch turned
// on: metrics and cached-token reports only with the engine's flags for them, vLLM's
// development endpoints only with VLLM_SERVER_DEV_MODE=1, as the real engines do.
func protocolArgs(engine string, argv []string, getenv func(string) string) []string {
	p := getenv("SIMENGINE_PROTOCOL")
	if p == "" {
		return nil
	}
	if p == "auto" {
		p = engine
	}
	has := func(flag string) bool {
		for _, a := range argv {
			if a == flag {
				return true
			}
		}
		return false
	}
	out := []string{"-protocol=" + p}
	switch engine {
	case "sglang":
		if !has("--enable-metrics") {
			out = append(out, "-no-metrics")
		}
		if !has("--enable-cache-report") {
			out = append(out, "-no-cache-report")
		}
	case "vllm":
		if !has("--enable-prompt-tokens-details") {
			out = append(out, "-no-cache-report")
		}
		if getenv("VLLM_SERVER_DEV_MODE") == "1" {
			out = append(out, "-dev-mode")
		}
	case "llamacpp":
		if !has("--metrics") {
			out = append(out, "-no-metrics")
		}
	}
	return out
}

// probe answers a device probe as the real tool would for the devices listed in
// SIMENGINE_DEVICES; ok is false for any other command line.
func probe(prog string, argv []string, devices string) (out string, code int, ok bool) {
	type device struct{ name, mib string }
	var devs []device
	for _, d := range strings.Split(devices, ";") {
		if name, mib, found := strings.Cut(d, ":"); found {
			devs = append(devs, device{name, mib})
		}
	}
	var b strings.Builder
	switch {
	case prog == "llama-server" && len(argv) == 1 && argv[0] == "--list-devices":
		// common/arg.cpp: CPU devices are not listed.
		b.WriteString("Available devices:\n")
		if len(devs) == 0 {
			b.WriteString("  (none)\n")
		}
		for i, d := range devs {
			fmt.Fprintf(&b, "  SYCL%d: %s (%s MiB, %s MiB free)\n", i, d.name, d.mib, d.mib)
		}
	case prog == "nvidia-smi":
		if len(devs) == 0 {
			return "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", 9, true
		}
		for _, d := range devs {
			fmt.Fprintf(&b, "%s, %s\n", d.name, d.mib)
		}
	case prog == "python3" && len(argv) == 2 && argv[0] == "-c" && strings.Contains(argv[1], "torch.xpu"):
		for _, d := range devs {
			mib, err := strconv.ParseInt(d.mib, 10, 64)
			if err != nil {
				return "bad SIMENGINE_DEVICES: " + err.Error() + "\n", 1, true
			}
			fmt.Fprintf(&b, "[%q, %d]\n", d.name, mib<<20) // torch reports bytes
		}
	default:
		return "", 0, false
	}
	return b.String(), 0, true
}
