package deploy

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/distribution/reference"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/endpoint"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
)

// ReservedLabels are the labels the provider writes itself: a user value would be
// overwritten, and the user would believe it had been kept.
var ReservedLabels = []string{ManagedLabel, SpecLabel}

// secretEnv are environment names engines and huggingface_hub read secrets from: a value
// there would be stored in state and shown in plan output, so it must come through the
// write-only secrets instead.
var secretEnv = map[string]string{ //nolint:gosec // G101: variable and attribute names, not credentials
	"HF_TOKEN":               "hub_token_wo",
	"HUGGING_FACE_HUB_TOKEN": "hub_token_wo",
	"VLLM_API_KEY":           "api_key_wo",
	"LLAMA_API_KEY":          "api_key_wo",
}

// volumeNameRE is Docker's rule for named volumes.
var volumeNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// Validate reports every problem of where and how the container would run, in terms of the
// attributes that set them (Problem.Path), so a plan shows them all at once. s is the engine spec the placement launches.
func (p Placement) Validate(s engine.Spec) []problem.Problem {
	var out []problem.Problem
	add := func(p attrpath.Path, format string, args ...any) {
		out = append(out, problem.At(p, format, args...))
	}
	out = append(out, CheckImage(attrpath.Root("image"), p.Image, "the engine image", "lmsysorg/sglang:v0.5.4")...)
	if p.BindAddress != "" && net.ParseIP(p.BindAddress) == nil {
		add(attrpath.Root("bind_address"), "%q is not an IP address; the engine host would publish on every address the name resolves to (for \"localhost\" both 127.0.0.1 and ::1, or all interfaces), not what state says. Use an IP literal: \"127.0.0.1\" for this host only, \"0.0.0.0\" for every interface", p.BindAddress)
	}
	if ip := net.ParseIP(p.BindAddress); p.Unpublished && !p.HostNetwork && ip != nil && !ip.IsLoopback() {
		out = append(out, problem.Problem{Path: attrpath.Root("bind_address"), Reads: []attrpath.Path{attrpath.Root("publish")}, Detail: fmt.Sprintf(
			"bind_address: %q would be ignored with publish = false: nothing is published, and the engine listens on %s inside its container, which only its own network namespace reaches "+
				"(a benchmark's runner = { docker = … }). Remove bind_address, or set publish = true to serve on %s", p.BindAddress, UnpublishedAddress, p.BindAddress)})
	}
	switch {
	case p.Unpublished && p.HostNetwork:
		add(attrpath.Root("publish"), "false does not apply with host networking, which publishes nothing and listens on the host's bind_address; use network_mode = \"bridge\" with publish = false to keep the server inside its container")
	case p.Unpublished && p.HostPort != 0:
		add(attrpath.Root("host_port"), "does not apply with publish = false: nothing is published; remove host_port, or set publish = true")
	case p.HostPort != 0 && p.HostNetwork:
		add(attrpath.Root("host_port"), "does not apply with host networking: with network_mode = \"host\" the engine listens on the host at port; remove host_port and set port instead")
	case p.HostPort != 0 && (p.HostPort < 1 || p.HostPort > 65535):
		add(attrpath.Root("host_port"), "must be between 1 and 65535, got %d", p.HostPort)
	}
	if p.ModelHostPath != "" {
		if !path.IsAbs(p.ModelHostPath) {
			add(attrpath.Root("model_host_path"), "must be an absolute path on the engine host, got %q", p.ModelHostPath)
		}
		if !path.IsAbs(s.Model) {
			add(attrpath.Root("model"), "model_host_path is mounted at model, so model must be an absolute path inside the container, got %q", s.Model)
		}
	}
	out = append(out, CheckEnvironment(p.Env)...)
	for _, k := range sortedKeys(p.Labels) {
		field := attrpath.Root("labels").Key(k)
		switch {
		case strings.TrimSpace(k) == "":
			add(attrpath.Root("labels"), "has an empty label key; remove it")
		case slices.Contains(ReservedLabels, k):
			add(field, "%s is written by the provider (it marks its containers and holds the launch record import reads) and would overwrite this value; choose another key", k)
		case strings.ContainsFunc(k, unicode.IsControl):
			add(field, "the key contains control characters; use printable text")
		}
		if strings.ContainsFunc(p.Labels[k], unicode.IsControl) {
			add(field, "the value contains control characters; use printable text")
		}
	}
	targets := map[string]int{}
	if p.ModelHostPath != "" && path.IsAbs(s.Model) {
		targets[path.Clean(s.Model)] = -1
	}
	for i, m := range p.Mounts {
		f := attrpath.Root("mounts").Index(i)
		switch {
		case strings.TrimSpace(m.Source) == "":
			add(f.At("source"), "must not be empty; give a host path (type bind) or a volume name (type volume)")
		case m.Type != "volume" && !path.IsAbs(m.Source):
			add(f.At("source"), "a bind mount needs an absolute host path, got %q; use type = \"volume\" for a named volume", m.Source)
		case m.Type == "volume" && !volumeNameRE.MatchString(m.Source):
			add(f.At("source"), "%q is not a volume name (letters, digits and _ . - after the first character)", m.Source)
		}
		switch {
		case !path.IsAbs(m.Target):
			add(f.At("target"), "must be an absolute path inside the container, got %q", m.Target)
		case path.Clean(m.Target) == "/":
			add(f.At("target"), "cannot be the container's root; mount under a directory such as /root/.cache/huggingface")
		default:
			t := path.Clean(m.Target)
			if j, dup := targets[t]; dup {
				other := "model (model_host_path is mounted there)"
				if j >= 0 {
					other = fmt.Sprintf("mounts[%d]", j)
				}
				add(f.At("target"), "%s is already the target of %s; each path can be mounted once", t, other)
			} else {
				targets[t] = i
			}
		}
		for _, v := range []string{m.Source, m.Target} {
			if strings.ContainsFunc(v, unicode.IsControl) {
				add(f, "contains control characters; use printable paths")
				break
			}
		}
	}
	out = append(out, CheckGPUIDs(s, p.GPUIDs, p.Env)...)
	out = append(out, checkDevices(p.Devices)...)
	for i, g := range p.GroupAdd {
		if strings.TrimSpace(g) == "" || strings.ContainsFunc(g, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
			add(attrpath.Root("group_add").Index(i), "must be a group name or numeric id, got %q", g)
		}
	}
	if p.ShmSizeBytes != 0 && (s.Accelerator == engine.CUDA || s.Accelerator == engine.XPU && !s.UsesVulkan()) {
		add(attrpath.Root("shm_size_mb"), "has no effect with accelerator = %q: the container shares the host's IPC namespace and its /dev/shm. Remove shm_size_mb", s.Accelerator)
	}
	return out
}

// checkDevices refuses a device path Docker would map otherwise than written, or not at all:
// each must be an absolute, clean path under /dev, listed once. Docker's own
// host:container:permissions form is not this attribute's: the path is mapped to the same
// path inside the container with read, write and mknod (rwm), as the accelerators need.
func checkDevices(devices []string) []problem.Problem {
	var out []problem.Problem
	seen := map[string]int{}
	for i, d := range devices {
		at := attrpath.Root("devices").Index(i)
		clean := path.Clean(d)
		switch {
		case strings.ContainsFunc(d, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
			out = append(out, problem.At(at, "must be a device node or directory under /dev on the engine host, such as \"/dev/dri\", got %q, which holds spaces or control characters", d))
			continue
		case strings.Contains(d, ":"):
			host, _, _ := strings.Cut(d, ":")
			out = append(out, problem.At(at, "%q is Docker's host:container:permissions form, which devices does not take: give the host path alone (%q); "+
				"it is mapped to the same path in the container with rwm", d, host))
			continue
		case !path.IsAbs(d) || !strings.HasPrefix(clean, "/dev/"):
			out = append(out, problem.At(at, "must be a device node or directory under /dev on the engine host, such as \"/dev/dri\", got %q", d))
			continue
		case clean != d:
			out = append(out, problem.At(at, "%q is not a clean path; write %q", d, clean))
		}
		if j, dup := seen[clean]; dup {
			out = append(out, problem.At(at, "%q is already listed as devices[%d]; list each device once", d, j))
			continue
		}
		seen[clean] = i
	}
	return out
}

// CheckEnvironment reports environment entries a server must not start with, under the
// environment attribute: a name that is no variable name, a secret (environment is stored in
// state and shown in plan output: the write-only attribute that carries it instead is named)
// and a value with control characters other than tab and newline. Every backend applies it.
func CheckEnvironment(env map[string]string) []problem.Problem {
	var out []problem.Problem
	add := func(p attrpath.Path, format string, args ...any) {
		out = append(out, problem.At(p, format, args...))
	}
	for _, k := range sortedKeys(env) {
		field := attrpath.Root("environment").Key(k)
		switch {
		case k == "":
			add(attrpath.Root("environment"), "has an empty variable name; remove it")
		case strings.ContainsFunc(k, func(r rune) bool { return r == '=' || unicode.IsSpace(r) || unicode.IsControl(r) }):
			add(field, "%q is not a valid variable name: it must not contain =, spaces or control characters", k)
		case secretEnv[k] != "":
			add(field, "%s is a secret and environment is stored in state and shown in plan output; remove it and set %s (write-only)", k, secretEnv[k])
		}
		if strings.ContainsFunc(env[k], controlExceptTabNewline) {
			add(field, "the value contains control characters; only tab and newline are allowed")
		}
	}
	return out
}

// CheckReachable reports a placement that would run but that this machine could not reach:
// the port published on (or, with host networking, the engine listening on) the loopback of
// a remote engine host, engineHost being its Docker host URL. Readiness would then wait out
// its whole timeout.
func (p Placement) CheckReachable(engineHost string) []problem.Problem {
	if p.Unpublished {
		return nil // reached through the engine, not the network
	}
	u, err := url.Parse(engineHost)
	if err != nil || (u.Scheme != "tcp" && u.Scheme != "ssh") {
		return nil
	}
	if endpoint.IsLoopback(u.Hostname()) {
		return nil
	}
	if !net.ParseIP(p.BindAddress).IsLoopback() {
		return nil
	}
	return []problem.Problem{{Path: attrpath.Root("bind_address"), Summary: "Endpoint unreachable from this machine", Warning: true, Detail: fmt.Sprintf("the engine host %s is remote, and bind_address %s serves only on its loopback, so this machine (and a benchmark run from it) cannot reach the server; readiness would wait out readiness_timeout. Set bind_address = \"0.0.0.0\" (or the host's address) and restrict access with a firewall", u.Hostname(), p.BindAddress)}}
}

// CheckImage reports an image reference at at that the Docker Engine would refuse, parsed as
// Docker parses one (a name with an optional tag and digest, or an image id); what names the
// image in the message ("the engine image") and example is one that would do.
func CheckImage(at attrpath.Path, ref, what, example string) []problem.Problem {
	if p := imageWords(at, ref, what, example); p != nil {
		return p
	}
	if _, err := reference.ParseAnyReference(ref); err != nil {
		return []problem.Problem{problem.At(at, "%q is not an image reference (%v); use repository[:tag] or repository@sha256:digest, lowercase, e.g. %q", ref, err, example)}
	}
	return nil
}

// CheckKubernetesImage is CheckImage as the kubelet parses a pod's image (a normalized name:
// an image id alone, which only a Docker Engine resolves, is refused too).
func CheckKubernetesImage(at attrpath.Path, ref, what, example string) []problem.Problem {
	if p := imageWords(at, ref, what, example); p != nil {
		return p
	}
	if _, err := reference.ParseNormalizedNamed(ref); err != nil {
		return []problem.Problem{problem.At(at, "%q is not an image reference a kubelet pulls (%v); use repository[:tag] or repository@sha256:digest, lowercase, e.g. %q", ref, err, example)}
	}
	return nil
}

// imageWords refuses an empty reference and one of more than one word.
func imageWords(at attrpath.Path, ref, what, example string) []problem.Problem {
	switch {
	case strings.TrimSpace(ref) == "":
		return []problem.Problem{problem.At(at, "must name %s, e.g. %q or \"repo@sha256:...\"", what, example)}
	case strings.ContainsFunc(ref, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return []problem.Problem{problem.At(at, "%q contains spaces or control characters; an image reference is one word such as %q", ref, example)}
	}
	return nil
}

func controlExceptTabNewline(r rune) bool {
	return unicode.IsControl(r) && r != '\t' && r != '\n'
}

func orCPU(a engine.Accelerator) engine.Accelerator {
	if a == "" {
		return engine.CPU
	}
	return a
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
