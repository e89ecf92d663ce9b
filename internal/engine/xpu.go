package engine

import (
	"slices"
	"strings"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
)

// What SGLang and vLLM need on Intel GPUs beyond their flags, from Intel's runbook and the
// engines' source. Sources, cited below as:
//
//   - [R] intel/skills skills/sglang-xpu-run (SKILL.md, references/multi-gpu-tp.md,
//     references/spec-decode-and-multimodal.md) @1bd12276, mirrored from
//     intel/gpu-ai-skills @31534d95; measured on 1 and 2 × Arc Pro B70 with
//     lmsysorg/sglang:v0.5.20-xpu (torch 2.13.0+xpu).
//   - [R0] the same spec-decode file @b1ad0342 (older): EAGLE on intel_xpu with top-k 1 and no
//     page size, and "--speculative-algorithm MTP", which [R] corrects.
//   - [X] sgl-project/sglang python/sglang/srt/layers/attention/xpu_backend.py, stored text
//     @00aa3882 and @069b2c7f: XPUAttentionBackend.init_forward_metadata asserts
//     "XPUAttentionBackend doesn't support speculative decoding yet, please use
//     --attention-backend triton instead." on a decode batch carrying spec_info.
//
// [X] is a reading of the source; [R] is a run of the released v0.5.20 image on the target
// card, EAGLE3 on intel_xpu with page size 64 and decode graph capture off (accept length
// ~3.1, 256 tokens in 3.0 s against 7.4 s without), and says upstream's own XPU nightly CI
// runs EAGLE and EAGLE3 under exactly those constraints. The provider launches what [R]
// measured; a user who still wants triton names it in extra_args, and keeps it.

// FITCPIfaceEnv pins libfabric's TCP provider to one interface. [R] multi-gpu-tp.md: with
// tensor parallel > 1 oneCCL falls back to libfabric's tcp provider (the image's shm provider
// yields nothing: "fi_getinfo: -61"), which ranks non-loopback interfaces first; under
// --network host it picks a Docker bridge, and then SGLang becomes ready but its first request
// never returns, and vLLM (--tensor-parallel-size 2) never becomes ready. "lo" fixes both on
// one host at no cost (TP 2, 8 × 64 tokens: 1524 ms/request on lo against 1655 on the NIC);
// with bridge networking the container sees only its own eth0 and lo, so nothing is needed;
// across nodes lo breaks the ranks (pin the NIC the nodes share).
const FITCPIfaceEnv = "FI_TCP_IFACE"

// xpuSpecPageSize is the page size intel_xpu runs speculative decoding with ([R]: "--page-size
// 64", upstream's XPU spec-decode CI constraint).
const xpuSpecPageSize = "64"

// The SGLang flags the XPU speculative launch sets ([R]'s command, v0.5.20).
const (
	sglangAttentionBackend = "--attention-backend"
	sglangPageSize         = "--page-size"
	sglangNoDecodeGraph    = "--disable-decode-cuda-graph"
	sglangXPUBackend       = "intel_xpu"
)

// sglangDecodeGraphFlags are the flags by which a user already decided decode graph capture.
var sglangDecodeGraphFlags = []string{sglangNoDecodeGraph, "--disable-cuda-graph", "--cuda-graph-backend-decode"}

// xpuSpeculative: SGLang on Intel XPU with speculative decoding.
func (s Spec) xpuSpeculative() bool {
	return s.Engine == SGLang && s.Accelerator == XPU && s.Speculative != nil
}

// xpuAttentionBackend is the attention backend an XPU speculative launch runs: the user's
// (extra_args), else intel_xpu.
func (s Spec) xpuAttentionBackend() string {
	if v, ok := flagValue(s.ExtraArgs, sglangAttentionBackend); ok {
		return v
	}
	return sglangXPUBackend
}

// xpuSpeculativeArgs are the flags SGLang's speculative decoding needs on XPU, each only
// where extra_args does not already decide it: the intel_xpu backend with page size 64 ([R]:
// the paged intel_xpu path), and decode graph capture off with any backend ([R]: "spec
// decode is not combined with XPU graph capture").
func (s Spec) xpuSpeculativeArgs() []string {
	if !s.xpuSpeculative() {
		return nil
	}
	var a []string
	if !hasFlag(s.ExtraArgs, sglangAttentionBackend) {
		a = append(a, sglangAttentionBackend, sglangXPUBackend)
	}
	if s.xpuAttentionBackend() == sglangXPUBackend && !hasFlag(s.ExtraArgs, sglangPageSize) {
		a = append(a, sglangPageSize, xpuSpecPageSize)
	}
	if !slices.ContainsFunc(sglangDecodeGraphFlags, func(f string) bool { return hasSwitch(s.ExtraArgs, f) }) {
		a = append(a, sglangNoDecodeGraph)
	}
	return a
}

// validateXPUSpeculative refuses the XPU speculative launches [R] says cannot run.
func (s Spec) validateXPUSpeculative() []problem.Problem {
	if !s.xpuSpeculative() {
		return nil
	}
	var out []problem.Problem
	if s.Speculative.TopK > 1 {
		out = append(out, problem.At(attrpath.Root("speculative").At("topk"),
			"SGLang on XPU drafts only top-k 1 (topk > 1 is not on the paged intel_xpu path, and upstream's XPU speculative CI runs --speculative-eagle-topk 1: intel/skills sglang-xpu-run, lmsysorg/sglang:v0.5.20-xpu); set topk = 1 and draft_tokens = steps + 1"))
	}
	if v, ok := flagValue(s.ExtraArgs, sglangPageSize); ok && s.xpuAttentionBackend() == sglangXPUBackend && v != xpuSpecPageSize {
		out = append(out, problem.At(attrpath.Root("extra_args"),
			"speculative decoding on SGLang's intel_xpu attention backend runs with --page-size 64 (upstream's XPU speculative CI, intel/skills sglang-xpu-run), got %s; remove --page-size from extra_args so the provider passes 64, or set 64", v))
	}
	return out
}

// knownFP16ShortDrafts are the draft checkpoints [R] names as fp16 with a 2048-token context
// in their config: the pairs upstream's XPU nightly runs.
var knownFP16ShortDrafts = []string{"lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B", "lmsys/sglang-EAGLE-llama2-chat-7B"}

// allowLongerContextEnv lets SGLang run a target context longer than a draft's config declares.
const allowLongerContextEnv = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"

// LaunchWarnings are what a plan should say about a launch that is valid but, by what is
// known of its parts, will fail after it starts. env is the container's configured
// environment.
//
// SGLang on XPU with one of the drafts [R] names: an fp16 draft needs --dtype bfloat16 ("the
// server reports ready, then the scheduler crashes on the first request (expected mat1 and
// mat2 to have the same dtype … BFloat16 != Half)"), and a draft whose config declares 2048
// tokens needs SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 ("without it startup refuses the
// target's 131072"). Other drafts' configs cannot be read at plan, so nothing is said of them.
// NEXTN on XPU: [R] saw the Triton GDN verify kernel crash the scheduler on the first request
// with Qwen3.5 on v0.5.20 (upstream changed that kernel later, sglang#37213).
func (s Spec) LaunchWarnings(env map[string]string) []problem.Problem {
	if !s.xpuSpeculative() {
		return nil
	}
	var out []problem.Problem
	warn := func(p attrpath.Path, summary, format string, args ...any) {
		pr := problem.At(p, format, args...)
		pr.Summary, pr.Warning = summary, true
		out = append(out, pr)
	}
	sp := s.Speculative
	if slices.ContainsFunc(knownFP16ShortDrafts, func(d string) bool { return strings.EqualFold(d, sp.DraftModel) }) {
		if v, _ := flagValue(s.ExtraArgs, "--dtype"); v != "bfloat16" {
			warn(attrpath.Root("extra_args"), "fp16 draft on XPU",
				"the draft %s is an fp16 checkpoint: on XPU the server becomes ready, then its scheduler crashes on the first request (\"expected mat1 and mat2 to have the same dtype … BFloat16 != Half\"; intel/skills sglang-xpu-run, lmsysorg/sglang:v0.5.20-xpu). Add \"--dtype\", \"bfloat16\" to extra_args", sp.DraftModel)
		}
		if env[allowLongerContextEnv] != "1" {
			warn(attrpath.Root("environment"), "Draft context shorter than the target's",
				"the draft %s declares a 2048-token context, and SGLang refuses the target's longer one at start unless %s=1 (intel/skills sglang-xpu-run, upstream's XPU test fixture); set environment = { %s = \"1\" }", sp.DraftModel, allowLongerContextEnv, allowLongerContextEnv)
		}
	}
	if strings.EqualFold(sp.Algorithm, "NEXTN") {
		warn(attrpath.Root("speculative").At("algorithm"), "NEXTN on XPU is unproven",
			"on lmsysorg/sglang:v0.5.20-xpu, NEXTN (Qwen3.5's own MTP layer) loads and reports ready, then the first request crashes the scheduler in the Triton GDN verify kernel (intel/skills sglang-xpu-run); upstream changed that kernel later (sgl-project/sglang#37213). Prove it on your image, or use EAGLE3 with a draft_model")
	}
	return out
}

// HostNetworkEnv is the environment a server sharing the host's network needs on top of the
// user's: FI_TCP_IFACE=lo for SGLang and vLLM on XPU with tensor parallel > 1 (see
// FITCPIfaceEnv), unless the user set it (a multi-node launch pins its shared NIC).
func (s Spec) HostNetworkEnv(user map[string]string) map[string]string {
	if !s.xpuCollectives() {
		return nil
	}
	if _, set := user[FITCPIfaceEnv]; set {
		return nil
	}
	return map[string]string{FITCPIfaceEnv: "lo"}
}

// xpuCollectives: SGLang or vLLM on XPU whose ranks all-reduce through oneCCL.
func (s Spec) xpuCollectives() bool {
	return (s.Engine == SGLang || s.Engine == VLLM) && s.Accelerator == XPU && s.TensorParallel > 1
}

// FirstCompletionHint explains a server whose health answers but whose first completion never
// returns, where the spec makes a cause known; "" otherwise.
func (s Spec) FirstCompletionHint() string {
	if !s.xpuCollectives() {
		return ""
	}
	return "a tensor-parallel XPU server that is up but never answers its first completion is the symptom of oneCCL's TCP transport on an interface the ranks cannot reach " +
		"(intel/skills sglang-xpu-run references/multi-gpu-tp.md, lmsysorg/sglang:v0.5.20-xpu): check that " + FITCPIfaceEnv + "=lo reached the container " +
		"(docker inspect -f '{{.Config.Env}}'; the provider sets it with network_mode = \"host\" unless environment sets it), or use network_mode = \"bridge\"; " +
		"if it still hangs, run the runbook's scripts/tp_collective_probe.py (--world-size = tensor_parallel_size) in the same image, network mode and ZE_AFFINITY_MASK: " +
		"COLLECTIVE HUNG is the transport, COLLECTIVE OK points at the engine (retry a lower tensor_parallel_size)"
}

// hasSwitch finds a flag that takes no value ("--flag"), or any flag in the "--flag=v" form.
func hasSwitch(args []string, name string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return a == name || strings.HasPrefix(a, name+"=") })
}
