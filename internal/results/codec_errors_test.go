package results

// What Parse and Marshal say about documents they cannot read or write: each problem with
// its JSON path, a bounded list.

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestMarshalErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		doc  *Document
		want string
	}{
		{"nil", nil, "nil results document"},
		{"other version", &Document{SchemaVersion: 2}, "cannot write schema_version 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Marshal(tc.doc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Marshal() error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// mutated returns the reference with one change applied to its generic tree.
func mutated(t *testing.T, change func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(readReference(t), &m); err != nil {
		t.Fatal(err)
	}
	change(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func obj(v any, keys ...any) map[string]any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			v = v.(map[string]any)[k]
		case int:
			v = v.([]any)[k]
		}
	}
	return v.(map[string]any)
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		data []byte
		want []string // each must appear in the error
	}{
		{"not JSON", []byte(`{"schema_version": 1,`), []string{"not valid JSON"}},
		{"empty", []byte(``), []string{"not valid JSON"}},
		{"trailing data", []byte(`{"schema_version": 1} {}`), []string{"not valid JSON", "after the top-level value"}},
		{"array at top", []byte(`[1]`), []string{"document: expected object, got array"}},
		{"too deep", []byte(strings.Repeat("[", 200) + strings.Repeat("]", 200)), []string{"nesting deeper than 100"}},
		{"no version", []byte(`{"workloads": []}`), []string{"schema_version: missing required key"}},
		{"version 2", []byte(`{"schema_version": 2}`), []string{"schema_version: unsupported version 2: this provider reads version 1"}},
		{"version as string", []byte(`{"schema_version": "1"}`), []string{"schema_version: expected integer, got string"}},
		{"only a version", []byte(`{"schema_version": 1}`), []string{
			"experiment: missing required key", "aiperf: missing required key", `slos: missing required key (or the single "slo" of older documents)`,
			"workloads: missing required key", "correctness_total: missing required key",
		}},
		{"mistyped p95", mutated(t, func(m map[string]any) {
			obj(m, "workloads", 1, "passing_trials", 0, "ttft_ms")["p95"] = "fast"
		}), []string{"workloads[1].passing_trials[0].ttft_ms.p95: expected number, got string"}},
		{"missing counter", mutated(t, func(m map[string]any) {
			delete(obj(m, "workloads", 2, "failing_trials", 1, "correctness"), "http_200")
		}), []string{"workloads[2].failing_trials[1].correctness.http_200: missing required key"}},
		{"null threshold", mutated(t, func(m map[string]any) {
			obj(m, "slo")["threshold_ms"] = nil
		}), []string{"slo.threshold_ms: expected number, got null"}},
		{"fractional count", mutated(t, func(m map[string]any) {
			obj(m, "experiment")["tensor_parallelism"] = 4.5
		}), []string{"experiment.tensor_parallelism: expected integer, got 4.5"}},
		{"boundary as string", mutated(t, func(m map[string]any) {
			obj(m, "workloads", 0)["maximum_passing_concurrency"] = "11"
		}), []string{"workloads[0].maximum_passing_concurrency: expected integer, got string"}},
		{"workloads not array", mutated(t, func(m map[string]any) {
			m["workloads"] = map[string]any{}
		}), []string{"workloads: expected array, got object"}},
		{"trial not object", mutated(t, func(m map[string]any) {
			obj(m, "workloads", 0)["failing_trials"].([]any)[2] = 7
		}), []string{"workloads[0].failing_trials[2]: expected object, got number"}},
		{"bool as string", mutated(t, func(m map[string]any) {
			obj(m, "aiperf")["streaming"] = "yes"
		}), []string{"aiperf.streaming: expected boolean, got string"}},
		{"speculative mode mistyped", mutated(t, func(m map[string]any) {
			obj(m, "experiment")["speculative_mode"] = "EAGLE"
		}), []string{"experiment.speculative_mode: expected object, got string"}},
		{"speculative mode key missing", mutated(t, func(m map[string]any) {
			delete(obj(m, "experiment", "speculative_mode"), "topk")
		}), []string{"experiment.speculative_mode.topk: missing required key"}},
		{"protocol number mistyped", mutated(t, func(m map[string]any) {
			obj(m, "aiperf")["temperature"] = "cold"
		}), []string{"aiperf.temperature: expected number, got string"}},
		{"concurrency mistyped", mutated(t, func(m map[string]any) {
			obj(m, "workloads", 0, "passing_trials", 1)["concurrency"] = "eleven"
		}), []string{"workloads[0].passing_trials[1].concurrency: expected integer, got string"}},
		{"number out of range", []byte(strings.Replace(string(readReference(t)), `"output_throughput_tps": 255.27724311247786`, `"output_throughput_tps": 1e999`, 1)),
			[]string{"workloads[0].passing_trials[0].output_throughput_tps: number 1e999 is out of range"}},
		{"duplicate label", mutated(t, func(m map[string]any) {
			obj(m, "workloads", 2)["label"] = "2K / 512"
		}), []string{`workloads[2].label: duplicate workload label "2K / 512" (also workloads[0])`}},
		{"two problems", mutated(t, func(m map[string]any) {
			obj(m, "workloads", 0, "passing_trials", 0, "itl_ms")["p50"] = true
			delete(obj(m, "correctness_total"), "errors")
		}), []string{"workloads[0].passing_trials[0].itl_ms.p50: expected number, got boolean", "correctness_total.errors: missing required key"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Parse(tc.data)
			if err == nil {
				t.Fatalf("Parse() = %+v, want an error", d)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse() error = %q\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

func TestParseErrorsAreCapped(t *testing.T) {
	t.Parallel()
	// Every trial's every number mistyped: thousands of problems, a bounded message.
	data := mutated(t, func(m map[string]any) {
		for _, w := range m["workloads"].([]any) {
			for _, side := range []string{"passing_trials", "failing_trials"} {
				for _, tr := range w.(map[string]any)[side].([]any) {
					for k := range tr.(map[string]any) {
						tr.(map[string]any)[k] = "x"
					}
				}
			}
		}
	})
	_, err := Parse(data)
	if err == nil {
		t.Fatal("want an error")
	}
	if n := strings.Count(err.Error(), "\n"); n != maxErrors {
		t.Errorf("error has %d lines, want %d:\n%v", n+1, maxErrors+1, err)
	}
	if !strings.Contains(err.Error(), "more problems") {
		t.Errorf("error does not say more problems were left out: %v", err)
	}
}
