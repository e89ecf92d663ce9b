package capacity

import (
	"fmt"
	"strings"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// RunWarnings are the warnings a configuration earns once every value is known (at apply,
// when the experiment's replica count is read from the deployment): today, a cache flush
// by endpoint that reaches only one replica of several.
func (c Config) RunWarnings() []Problem {
	exp := c.Experiment
	if exp == nil || exp.Replicas <= 1 || c.CacheFlush == "none" || c.CacheFlush == "llamacpp" {
		return nil
	}
	return []Problem{{Path: attrpath.Root("trial").At("cache_flush"), Warning: true,
		Summary: "Cache flush reaches one replica",
		Detail: fmt.Sprintf("The endpoint serves %d replicas behind one Service. A flush by endpoint (SGLang /flush_cache, vLLM /reset_prefix_cache) "+
			"reaches only the replica the Service picks, so the others may keep warm prefix caches between trials; the provider cannot flush each pod "+
			"through a Service. llama.cpp is unaffected (cache_prompt: false on every request). Use one replica to measure without prefix-cache reuse.", exp.Replicas)}}
}

// ResultWarnings are what a finished run's document asks the user to look at: a workload
// whose numbers are the edge of the search rather than its capacity (at its
// capacity_bounded_by_search key), and trials served from a cache that should have been
// cold (the whole run: no single setting is to blame).
func (c Config) ResultWarnings(doc *results.Document) []Problem {
	var out []Problem
	if doc == nil {
		return nil
	}
	for _, w := range doc.Workloads {
		if w.SearchBound() == results.BoundNone {
			continue
		}
		out = append(out, Problem{Path: attrpath.Root("capacity_bounded_by_search").Key(w.Label), Warning: true,
			Summary: fmt.Sprintf("Capacity of workload %q is bounded by the search", w.Label),
			Detail: fmt.Sprintf("Workload %q: %s. maximum_passing_concurrency and first_failing_concurrency are the edge of the search, not the capacity; capacity_bounded_by_search[%q] is true.",
				w.Label, BoundNote(w, len(c.ConcurrencyLevels) > 0), w.Label)})
	}
	if warm := WarmCacheTrials(doc); len(warm) > 0 {
		out = append(out, Problem{Warning: true,
			Summary: "Prompts were served from a cache that should have been cold",
			Detail: fmt.Sprintf("With cache_flush = %q, the server reported cached prompt tokens beyond the prefix all prompts share in %s. "+
				"The flush did not take effect, so those trials' latencies are too low and the capacity may be too high; "+
				"each trial's note in results_json says more. Check that the server honours the flush (vLLM: VLLM_SERVER_DEV_MODE=1; SGLang: admin_api_key) and apply again.",
				c.CacheFlush, strings.Join(warm, "; "))})
	}
	return out
}
