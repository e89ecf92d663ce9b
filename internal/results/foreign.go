package results

import "encoding/json"

// AIPerfExportHint explains, when data looks like AIPerf's (or GenAI-Perf's) own JSON export
// rather than schema v1, why it is refused and what to give instead; "" otherwise. Users
// reach for that file first: it sits beside every AIPerf run, but it describes one run at
// one concurrency, not a capacity boundary with its confirmation trials.
func AIPerfExportHint(data []byte) string {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return ""
	}
	if _, ok := top["schema_version"]; ok {
		return ""
	}
	_, input := top["input_config"]
	metric := false
	for _, key := range []string{"records", "time_to_first_token", "request_latency", "request_throughput"} {
		if raw, ok := top[key]; ok && len(raw) > 0 && raw[0] == '{' {
			metric = true
		}
	}
	if !input && !metric {
		return ""
	}
	return "This looks like AIPerf's own export (profile_export_aiperf.json or GenAI-Perf's profile_export_genai_perf.json): " +
		"the statistics of one run at one concurrency, not a capacity result. Give a schema v1 document instead: " +
		"llmserve_capacity_benchmark.<name>.results_json, or a file in that shape (see the \"Results schema v1\" guide)."
}
