package capacity

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// fingerprintFields are the settings a journal line records a short hash of beside its
// fingerprint, named as the configuration names them, in the order a message lists them: a
// line of another configuration then says which of them differ, not only that one did.
var fingerprintFields = []string{"endpoint", "model", "api", "workloads", "slos", "search", "arrival", "trial", "triggers", "experiment"}

// FingerprintParts is a short hash of each setting Fingerprint covers, by fingerprintFields'
// names. The fingerprint alone decides whether a line is reused; the parts only explain a
// mismatch.
func (c Config) FingerprintParts() map[string]string {
	var arrival, ladder any
	if o := c.OpenLoop; o != nil {
		arrival = struct {
			Arrival     any
			MaxInFlight int
		}{o.Arrival, o.MaxInFlight}
		ladder = struct {
			Min, Max, Tolerance float64
			Speedup             bool
		}{o.MinRate, o.MaxRate, o.Tolerance, o.Speedup}
	}
	values := map[string]any{
		"endpoint":  c.Endpoint,
		"model":     c.Model,
		"api":       c.API,
		"workloads": c.Workloads,
		"slos":      c.SLOs,
		"search": struct {
			Min, Max int
			Levels   []int
			Ladder   any
		}{c.MinConcurrency, c.MaxConcurrency, c.ConcurrencyLevels, ladder},
		"arrival": arrival,
		"trial": struct {
			Warmup, Measured, Confirmations int
			Flush                           string
			Seed                            int64
		}{c.WarmupRequests, c.MeasuredRequests, c.ConfirmationTrials, c.CacheFlush, c.Seed},
		"triggers":   runKey(c.Triggers),
		"experiment": c.Experiment,
	}
	out := make(map[string]string, len(values))
	for k, v := range values {
		raw, _ := json.Marshal(v) // plain values only; cannot fail
		sum := sha256.Sum256(raw)
		out[k] = hex.EncodeToString(sum[:4])
	}
	return out
}

// differingFields names the settings whose parts differ between two lines' parts, in
// fingerprintFields' order; nil when either has none (a line written before the parts).
func differingFields(ours, theirs map[string]string) []string {
	if len(ours) == 0 || len(theirs) == 0 {
		return nil
	}
	var out []string
	for _, f := range fingerprintFields {
		if ours[f] != theirs[f] {
			out = append(out, f)
		}
	}
	return out
}

// otherConfigText is why lines of another configuration were not reused: the settings that
// differ, counted over those lines, or, for lines that do not say, the settings that may.
func otherConfigText(ours map[string]string, others []map[string]string) string {
	count := map[string]int{}
	unknown := 0
	for _, o := range others {
		d := differingFields(ours, o)
		if len(d) == 0 {
			unknown++ // written before the parts, or by another provider version's fingerprint
		}
		for _, f := range d {
			count[f]++
		}
	}
	var named []string
	for _, f := range fingerprintFields {
		if count[f] > 0 {
			named = append(named, f)
		}
	}
	const maybe = "endpoint, model, workloads, objectives, search or trial settings, triggers or experiment differ"
	switch {
	case len(named) == 0:
		return maybe
	case unknown > 0:
		return joinAnd(named) + " " + differ(len(named)) + "; for older lines: " + maybe
	}
	return joinAnd(named) + " " + differ(len(named))
}

func differ(n int) string {
	if n == 1 {
		return "differs"
	}
	return "differ"
}

// joinAnd reads "a", "a and b", "a, b and c".
func joinAnd(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
