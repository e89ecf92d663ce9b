// Command llmserve-recompute recomputes every trial's metrics of a capacity result from its
// per-request records (records_directory) and prints them in the results document's form:
// the same workloads, each with its recomputed trials. The numbers are the benchmark's own,
// bit for bit; -check says so, listing any value that differs and exiting 1. One metric is
// not derivable from records, connection_setup_ms (connect and TLS time are measured but not
// recorded per request): it is left out of the output and of the check, and said so.
//
//	terraform output -raw results_json > result.json
//	go run ./cmd/llmserve-recompute -results result.json -records ./records -check
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// output mirrors a results document: per workload, the recomputed trials.
type output struct {
	Workloads []outputWorkload `json:"workloads"`
}

type outputWorkload struct {
	Label  string          `json:"label"`
	Trials []results.Trial `json:"trials"`
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("llmserve-recompute", flag.ContinueOnError)
	fs.SetOutput(stderr)
	resultsPath := fs.String("results", "", "results document (results_json) naming the records files")
	dir := fs.String("records", "", "the benchmark's records_directory")
	check := fs.Bool("check", false, "compare with the document; exit 1 when any value differs")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *resultsPath == "" || *dir == "" {
		fmt.Fprintln(stderr, "llmserve-recompute: -results and -records are required")
		fs.Usage()
		return 2
	}
	raw, err := results.ReadFile(*resultsPath)
	if err != nil {
		fmt.Fprintln(stderr, "llmserve-recompute:", err)
		return 1
	}
	doc, err := results.Parse(raw)
	if err != nil {
		fmt.Fprintln(stderr, "llmserve-recompute:", err)
		return 1
	}
	v, err := records.Verify(doc, *dir)
	if err != nil {
		fmt.Fprintln(stderr, "llmserve-recompute:", err)
		return 1
	}
	fmt.Fprintf(stderr, "llmserve-recompute: %s is not derivable from records files (they hold no connect or TLS time); it is left out of the output and the check\n", records.NotDerivable)
	var out output
	for _, r := range v.Trials {
		if n := len(out.Workloads); n == 0 || out.Workloads[n-1].Label != r.Workload {
			out.Workloads = append(out.Workloads, outputWorkload{Label: r.Workload})
		}
		w := &out.Workloads[len(out.Workloads)-1]
		w.Trials = append(w.Trials, r.Recomputed)
	}
	for _, d := range v.Differences {
		fmt.Fprintln(stderr, d)
	}
	for _, c := range v.Contradictions {
		fmt.Fprintln(stderr, c.Error())
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(stderr, "llmserve-recompute:", err)
		return 1
	}
	if *check && !v.OK() {
		fmt.Fprintf(stderr, "llmserve-recompute: %d values differ from the document, and %d headline values contradict the recomputed trials\n", len(v.Differences), len(v.Contradictions))
		return 1
	}
	if *check {
		fmt.Fprintf(stderr, "llmserve-recompute: %d trials recomputed, every value identical; the headline of every workload derives from them\n", len(v.Trials))
	}
	return 0
}
