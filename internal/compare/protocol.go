package compare

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// protocolDifferences sorts what differs between two documents' protocols into what makes
// their numbers different quantities (refused) and what changes the setup a reader should
// know about but leaves the numbers comparable (flagged).
//
// The setup (model, engine image, hardware) is refused when it differs, and when one run
// recorded it and the other did not: a run that recorded nothing may be anything, and a
// gate that compared it with a shipped example's document reported a +1278 % regression.
// sameSetup is the user saying the two runs measured the same model, engine and hardware;
// those differences are then flagged instead.
func protocolDifferences(b, c *results.Document, sameSetup bool) (refused, flagged []string) {
	setup := func(line string) {
		if sameSetup {
			flagged = append(flagged, line+" (same_setup: taken as the same)")
		} else {
			refused = append(refused, line+"; if both runs measured the same model, engine and hardware, record it in both (the benchmark's experiment) or say so with same_setup (compare() and the data source)")
		}
	}
	bo, co := b.Objectives(), c.Objectives()
	if keys(bo) != keys(co) {
		refused = append(refused, fmt.Sprintf("objectives differ: baseline judges %s, current %s; a percentile of another metric is another quantity", keys(bo), keys(co)))
	} else {
		for i := range bo {
			if bo[i].ThresholdMs != co[i].ThresholdMs || bo[i].Comparison != co[i].Comparison {
				flagged = append(flagged, fmt.Sprintf("objective %s: baseline %s, current %s; capacities answer different questions, the values at common levels are compared",
					bo[i].Key(), bo[i].String(), co[i].String()))
			}
		}
	}
	bp, cp := b.AIPerf, c.AIPerf
	be, ce := b.Experiment, c.Experiment
	switch same, why, known := sameModel(be, ce); {
	case !same:
		refused = append(refused, fmt.Sprintf("model differs: baseline %s, current %s; compare a model with itself", model(be), model(ce)))
	case why != "" && !known:
		setup(fmt.Sprintf("model named differently: baseline %s, current %s; %s", model(be), model(ce), why))
	case why != "":
		flagged = append(flagged, fmt.Sprintf("model named differently: baseline %s, current %s; %s", model(be), model(ce), why))
	}
	if bp.MeasuredRequestsPerTrial != cp.MeasuredRequestsPerTrial {
		refused = append(refused, fmt.Sprintf("measured requests per trial differ: baseline %d, current %d; a percentile over another number of requests has another spread and bias",
			bp.MeasuredRequestsPerTrial, cp.MeasuredRequestsPerTrial))
	}
	if bp.ArrivalPattern != cp.ArrivalPattern {
		refused = append(refused, fmt.Sprintf("arrival pattern differs: baseline %s, current %s", quoted(bp.ArrivalPattern), quoted(cp.ArrivalPattern)))
	}
	if bp.Streaming != cp.Streaming || bp.IgnoreEOS != cp.IgnoreEOS || bp.Temperature != cp.Temperature {
		refused = append(refused, fmt.Sprintf("request shape differs: baseline streaming=%v ignore_eos=%v temperature=%v, current streaming=%v ignore_eos=%v temperature=%v",
			bp.Streaming, bp.IgnoreEOS, bp.Temperature, cp.Streaming, cp.IgnoreEOS, cp.Temperature))
	}
	switch bi, ci := imageRepository(be.ImageTag), imageRepository(ce.ImageTag); {
	case bi != ci && bi != "" && ci != "":
		refused = append(refused, fmt.Sprintf("engine image differs: baseline %s, current %s; a new tag of the same image is compared, another engine is not", bi, ci))
	case bi != ci:
		setup(fmt.Sprintf("engine image recorded by one run only: baseline %s, current %s", quoted(bi), quoted(ci)))
	}
	if be.Hardware != ce.Hardware {
		if be.Hardware != "" && ce.Hardware != "" {
			setup(fmt.Sprintf("hardware differs: baseline %s, current %s", quoted(be.Hardware), quoted(ce.Hardware)))
		} else {
			setup(fmt.Sprintf("hardware recorded by one run only: baseline %s, current %s", quoted(be.Hardware), quoted(ce.Hardware)))
		}
	}
	if bp.EngineWarmupRequests != cp.EngineWarmupRequests {
		flagged = append(flagged, fmt.Sprintf("engine warm-up requests: baseline %d, current %d (a cold engine's first trials can be slower)", bp.EngineWarmupRequests, cp.EngineWarmupRequests))
	}
	if bp.WarmupsPerTrial != cp.WarmupsPerTrial {
		flagged = append(flagged, fmt.Sprintf("warmups per trial: baseline %d, current %d", bp.WarmupsPerTrial, cp.WarmupsPerTrial))
	}
	if bp.IndependentTrialsPerBoundarySide != cp.IndependentTrialsPerBoundarySide {
		flagged = append(flagged, fmt.Sprintf("confirmation trials per boundary side: baseline %d, current %d", bp.IndependentTrialsPerBoundarySide, cp.IndependentTrialsPerBoundarySide))
	}
	if bp.CachePolicy != cp.CachePolicy {
		flagged = append(flagged, fmt.Sprintf("cache policy: baseline %s, current %s", quoted(bp.CachePolicy), quoted(cp.CachePolicy)))
	}
	for _, f := range []struct {
		name string
		b, c any
	}{
		{"tensor parallelism", be.TensorParallelism, ce.TensorParallelism},
		{"replicas", max(be.Replicas, 1), max(ce.Replicas, 1)},
		{"context length", be.ContextLength, ce.ContextLength},
		{"speculative decoding", spec(be.SpeculativeMode), spec(ce.SpeculativeMode)},
	} {
		if f.b != f.c {
			flagged = append(flagged, fmt.Sprintf("%s: baseline %s, current %s", f.name, shown(f.b), shown(f.c)))
		}
	}
	return refused, flagged
}

// shapeDifferences are the differences of one workload's lengths between two documents.
func shapeDifferences(b, c results.Workload) []string {
	var out []string
	for _, f := range []struct {
		name string
		b, c float64
	}{
		{"input tokens", float64(b.ConfiguredISL), float64(c.ConfiguredISL)},
		{"output tokens", float64(b.ConfiguredOSL), float64(c.ConfiguredOSL)},
		{"input tokens stddev", b.InputTokensStddev, c.InputTokensStddev},
		{"output tokens stddev", b.OutputTokensStddev, c.OutputTokensStddev},
		{"shared prefix tokens", float64(b.SharedPrefixTokens), float64(c.SharedPrefixTokens)},
	} {
		if f.b != f.c {
			out = append(out, fmt.Sprintf("%s: baseline %g, current %g", f.name, f.b, f.c))
		}
	}
	return out
}

func keys(slos []results.SLO) string {
	ks := make([]string, len(slos))
	for i, s := range slos {
		ks[i] = s.Key()
	}
	slices.Sort(ks)
	return strings.Join(ks, ", ")
}

func model(e results.Experiment) string {
	if e.Checkpoint != "" {
		return fmt.Sprintf("%s (%s)", quoted(e.Model), e.Checkpoint)
	}
	return quoted(e.Model)
}

// notRecorded is how a value a document left empty reads in a sentence.
const notRecorded = "(not recorded)"

// quoted is s in quotes, or notRecorded when empty.
func quoted(s string) string {
	if s == "" {
		return notRecorded
	}
	return fmt.Sprintf("%q", s)
}

// shown is v for a sentence, or notRecorded for an empty string or a zero count.
func shown(v any) string {
	switch x := v.(type) {
	case string:
		if x == "" {
			return notRecorded
		}
	case int:
		if x == 0 {
			return notRecorded
		}
	}
	return fmt.Sprint(v)
}

// sameModel tells whether two documents measured the same model, and when the names differ
// why they are taken to be the same. A model is named by a hub id ("Qwen/Qwen3-8B"), a file
// path ("/models/tiny-llama.gguf") or a served alias ("tiny"); the same file under another
// directory is the same model, and so is anything under an alias of a run that recorded no
// experiment (the benchmark then knows only the name the server answers to, which a server
// chooses freely): those are flagged, not refused. Two identities that both say what they are
// (hub ids or files, or both runs with their experiment) and differ are two models. Two
// checkpoints (revisions) that are both recorded must agree.
//
// known is false when the names alone cannot tell (one is missing, or an alias of a run
// without an experiment): the caller refuses that unless the user says the setups are the
// same.
func sameModel(b, c results.Experiment) (same bool, why string, known bool) {
	if b.Checkpoint != "" && c.Checkpoint != "" && b.Checkpoint != c.Checkpoint {
		return false, "", true
	}
	if b.Model == c.Model {
		return true, "", true
	}
	bi, ci := modelIdentity(b.Model), modelIdentity(c.Model)
	switch {
	case bi != "" && bi == ci:
		return true, "the same model file (" + bi + ")", true
	case b.Checkpoint != "" && b.Checkpoint == c.Checkpoint:
		return true, "the same checkpoint", true
	case b.Model == "" || c.Model == "":
		return true, "one run did not record its model", false
	case isAlias(b.Model) && !hasExperiment(b), isAlias(c.Model) && !hasExperiment(c):
		return true, "an alias the server answers to, in a run that recorded no experiment", false
	}
	return false, "", true
}

// modelIdentity is a model file's name without its directory and extension, lower case
// ("/models/Tiny-Llama.gguf" → "tiny-llama"); a hub id or alias as it is.
func modelIdentity(m string) string {
	base := path.Base(strings.ReplaceAll(m, "\\", "/"))
	if ext := path.Ext(base); strings.EqualFold(ext, ".gguf") || strings.EqualFold(ext, ".safetensors") || strings.EqualFold(ext, ".bin") {
		return strings.ToLower(strings.TrimSuffix(base, ext))
	}
	if strings.HasPrefix(m, "/") || strings.HasPrefix(m, "./") {
		return strings.ToLower(base)
	}
	return m
}

// isAlias is a name that is neither a hub id (owner/name) nor a path.
func isAlias(m string) bool { return !strings.ContainsAny(m, "/\\") && path.Ext(m) == "" }

// hasExperiment tells whether the run recorded its deployment (the benchmark's experiment,
// which the inference server fills in), not only the name it asked the server for.
func hasExperiment(e results.Experiment) bool {
	return e.ImageTag != "" || e.ImageDigest != "" || e.Hardware != ""
}

// imageRepository is an image reference without its tag or digest: the engine, not its
// release.
func imageRepository(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}

func spec(s *results.SpeculativeMode) string {
	if s == nil {
		return "off"
	}
	return fmt.Sprintf("%s steps=%d topk=%d draft_tokens=%d", s.Algorithm, s.Steps, s.TopK, s.DraftTokens)
}
