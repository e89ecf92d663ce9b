package provider

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// fault is what the fault-injecting endpoint does to one generation request instead of
// passing it on to the engine.
type fault func(w http.ResponseWriter, r *http.Request)

// faultProxy stands in front of a simulated engine on loopback. Control calls pass through;
// generation requests are numbered from 1 (the preflight request) and those with a fault
// scheduled get it instead of an answer.
type faultProxy struct {
	next     http.Handler
	schedule func(n int64) fault // nil: pass the request on
	count    atomic.Int64
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/completions") {
		// The two cache-report probes a run may send at connect are not numbered: the
		// schedule counts the preflight and the trials' requests.
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte("llmserve cache report probe")) {
			p.next.ServeHTTP(w, r)
			return
		}
		if f := p.schedule(p.count.Add(1)); f != nil {
			// The server only notices a client leaving once the request body is read.
			_, _ = io.Copy(io.Discard, r.Body)
			f(w, r)
			return
		}
	}
	p.next.ServeHTTP(w, r)
}

func sseHeader(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
}

func sseWrite(w http.ResponseWriter, s string) {
	io.WriteString(w, s)
	w.(http.Flusher).Flush()
}

func waitForClient(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(time.Minute):
	}
}

const contentEvent = `data: {"choices":[{"index":0,"delta":{"content":"tok"}}]}` + "\n\n"

var faults = map[string]fault{
	"reset": func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	},
	"5xx": func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"engine overloaded"}}`, http.StatusServiceUnavailable)
	},
	"429": func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"rate limit reached"}}`, http.StatusTooManyRequests)
	},
	"stall before headers": func(w http.ResponseWriter, r *http.Request) { waitForClient(r) },
	"stall mid-stream": func(w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		sseWrite(w, contentEvent)
		waitForClient(r)
	},
	"truncated stream": func(w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		sseWrite(w, contentEvent+contentEvent)
	},
	"malformed SSE": func(w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		sseWrite(w, contentEvent+"data: {\"choices\":[{\"delta\":{\"content\":\n\n"+"data: [DONE]\n\n")
	},
	"oversized event": func(w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		sseWrite(w, `data: {"choices":[{"delta":{"content":"`)
		chunk := strings.Repeat("x", 64<<10)
		for i := 0; i < 64; i++ { // 4 MiB unless the client gives up first
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	},
	"key echoed in error body": func(w http.ResponseWriter, r *http.Request) {
		// The key straddles where a message is cut short (200 bytes).
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, "bad request "+strings.Repeat(".", 180)+" headers: "+r.Header.Get("Authorization")+strings.Repeat(" trailing", 50))
	},
}

// The kind and a phrase of the example message each fault must be reported with.
var faultWant = map[string][2]string{
	"reset":                    {"reset", "send request to"},
	"5xx":                      {"HTTP 503", "engine overloaded"},
	"429":                      {"HTTP 429", "rate limit reached"},
	"stall before headers":     {"stalled", "for 1s (trial.stall_timeout)"},
	"stall mid-stream":         {"stalled", "for 1s (trial.stall_timeout)"},
	"truncated stream":         {"truncated_stream", "ended without [DONE]"},
	"malformed SSE":            {"malformed_stream", "malformed stream event"},
	"oversized event":          {"malformed_stream", "larger than 1 MiB"},
	"key echoed in error body": {"HTTP 500", "bad request"},
}

// faultConfig benchmarks endpoint, journaling to progress; extra lines are added to the
// resource's attributes.
func faultConfig(endpoint, progress string, extra ...string) string {
	return fmt.Sprintf(`
resource "llmserve_capacity_benchmark" "test" {
  endpoint      = %q
  model         = "sim-qwen"
  api_key       = %q
  workloads     = [{ label = "64 / 8", input_tokens = 64, output_tokens = 8 }]
  slos          = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 150 }]
  search        = { min_concurrency = 1, max_concurrency = 3 }
  trial         = { warmup_requests = 0, measured_requests = 6, confirmation_trials = 1, stall_timeout = "1s", request_timeout = "5s" }
  progress_file = %q
%s
}`, endpoint, benchAPIKey, progress, strings.Join(extra, "\n"))
}

// faultedRequest is the generation request the fault replaces: the first of the confirmation
// trial at concurrency 3. Before it come the preflight (1) and the confirmation trials at 1
// (2-7) and 2 (8-13), which the search walks up through; confirmations are never stopped
// early, so the fault shows in full.
const faultedRequest = 14

// TestAccCapacityBenchmark_faults: one faulty answer fails that request within its bound,
// with the expected kind and a redacted example, and nothing else: the run goes on, the
// boundary is found as without the fault, and the failure is kept in results_json,
// workload_results and the progress file.
func TestAccCapacityBenchmark_faults(t *testing.T) {
	t.Parallel()
	for name, f := range faults {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			engine := newBoundaryEngine(t)
			proxy := &faultProxy{next: engine, schedule: func(n int64) fault {
				if n == faultedRequest {
					return f
				}
				return nil
			}}
			srv := httptest.NewServer(proxy)
			defer srv.Close()
			progress := filepath.Join(t.TempDir(), "progress.jsonl")
			want := faultWant[name]
			start := time.Now()
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config: faultConfig(srv.URL, progress),
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("maximum_passing_concurrency"),
							knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Int64Exact(2)})),
						statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("first_failing_concurrency"),
							knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Int64Exact(3)})),
						statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("workload_results").AtSliceIndex(0).AtMapKey("notes"),
							knownvalue.ListExact([]knownvalue.Check{knownvalue.StringRegexp(regexp.MustCompile(
								`^confirmation 1 at concurrency 3: 1 measured requests failed: 1 ` + regexp.QuoteMeta(want[0]) + ` \(e\.g\. ".*` + regexp.QuoteMeta(want[1])))})),
						statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test",
							tfjsonpath.New("workload_results").AtSliceIndex(0).AtMapKey("failing_trials").AtSliceIndex(0).AtMapKey("error_summary"),
							knownvalue.ListExact([]knownvalue.Check{knownvalue.ObjectPartial(map[string]knownvalue.Check{
								"count":   knownvalue.Int64Exact(1),
								"example": knownvalue.StringRegexp(regexp.MustCompile(regexp.QuoteMeta(want[1]))),
							})})),
						statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test",
							tfjsonpath.New("workload_results").AtSliceIndex(0).AtMapKey("failing_trials").AtSliceIndex(0).AtMapKey("correctness").AtMapKey("errors"),
							knownvalue.Int64Exact(1)),
					},
					Check: func(s *terraform.State) error {
						raw := s.RootModule().Resources["llmserve_capacity_benchmark.test"].Primary.Attributes["results_json"]
						if _, err := results.Parse([]byte(raw)); err != nil {
							return err
						}
						return noKeyIn(raw, progress)
					},
				}},
			})
			t.Logf("%s: apply with the fault took %v", name, time.Since(start).Round(time.Millisecond))
			// The journal keeps the failed trial with its summary.
			rec := journalEntry(t, progress, func(r capacity.JournalEntry) bool { return r.Errors > 0 })
			if rec.Concurrency != 3 || rec.Kind != "confirmation" || len(rec.ErrorSummary) != 1 {
				t.Fatalf("journaled failed trial %+v, want the confirmation at 3 with one summary entry", rec)
			}
		})
	}
}

// A 503 on the first streamed request (the preflight) is retried: it is not measured.
func TestAccCapacityBenchmark_preflight503(t *testing.T) {
	t.Parallel()
	engine := newBoundaryEngine(t)
	proxy := &faultProxy{next: engine, schedule: func(n int64) fault {
		if n == 1 {
			return faults["5xx"]
		}
		return nil
	}}
	srv := httptest.NewServer(proxy)
	defer srv.Close()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: faultConfig(srv.URL, filepath.Join(t.TempDir(), "progress.jsonl")),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("maximum_passing_concurrency"),
					knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Int64Exact(2)})),
				statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("workload_results").AtSliceIndex(0).AtMapKey("notes"),
					knownvalue.ListSizeExact(0)),
			},
		}},
	})
}

// A server failing every measured request at the minimum concurrency leaves no capacity to
// report: apply fails with the summary. The search's first trial is the full confirmation
// trial at the minimum, and its failing entirely is the error itself, so no trial finished:
// the journal holds none, and the next apply measures the minimum afresh.
func TestAccCapacityBenchmark_allFailAtMinimum(t *testing.T) {
	t.Parallel()
	engine := newBoundaryEngine(t)
	proxy := &faultProxy{next: engine, schedule: func(n int64) fault {
		if n >= 2 {
			return faults["5xx"]
		}
		return nil
	}}
	srv := httptest.NewServer(proxy)
	defer srv.Close()
	dir := t.TempDir()
	progress := filepath.Join(dir, "progress.jsonl")
	recordsDir := filepath.Join(dir, "records")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      faultConfig(srv.URL, progress, fmt.Sprintf("  records_directory = %q", recordsDir)),
			ExpectError: regexp.MustCompile(`every measured request\s+failed: 6 of 6 at the minimum\s+concurrency: 6 HTTP 503 \(e\.g\.\s+"HTTP\s+503`),
		}},
	})
	// Nothing already measured is lost: the trial that stopped the run is journaled with what
	// the server answered, and its records file is written.
	got := journalEntry(t, progress, func(r capacity.JournalEntry) bool { return r.Concurrency == 1 })
	if got.LogFields()["verdict"] != "error" || got.Errors != 6 {
		t.Errorf("aborting trial journaled with verdict %v and %d errors, want error and 6", got.LogFields()["verdict"], got.Errors)
	}
	if len(got.ErrorSummary) != 1 || got.ErrorSummary[0].Kind != "http_status" || got.ErrorSummary[0].HTTPStatus != 503 || got.ErrorSummary[0].Count != 6 {
		t.Errorf("error summary = %+v, want 6 http_status 503", got.ErrorSummary)
	}
	if got.Metrics == nil || got.Metrics.RecordsFile == "" {
		t.Fatalf("aborting trial names no records file: %+v", got.Metrics)
	}
	if _, err := os.Stat(filepath.Join(recordsDir, filepath.FromSlash(got.Metrics.RecordsFile))); err != nil {
		t.Errorf("records file of the aborting trial: %v", err)
	}
}

// noKeyIn fails when the API key, or its first characters, appear in the results or the
// progress file.
func noKeyIn(resultsJSON, progress string) error {
	journal, err := os.ReadFile(progress)
	if err != nil {
		return err
	}
	for where, text := range map[string]string{"results_json": resultsJSON, "progress file": string(journal)} {
		if strings.Contains(text, benchAPIKey[:8]) {
			return fmt.Errorf("%s carries the API key's first characters", where)
		}
	}
	return nil
}

func journalEntry(t *testing.T, path string, match func(capacity.JournalEntry) bool) capacity.JournalEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r capacity.JournalEntry
		if json.Unmarshal(sc.Bytes(), &r) == nil && match(r) {
			return r
		}
	}
	t.Fatalf("no matching record in %s", path)
	return capacity.JournalEntry{}
}

// The warning lists every trial with failed requests, a screenful at most.
func TestFailureWarning(t *testing.T) {
	t.Parallel()
	var lines []string
	for c := 1; c <= 12; c++ {
		lines = append(lines, capacity.JournalEntry{Workload: "8K / 1K", Concurrency: c, Kind: "probe", Index: 1, Errors: 1,
			ErrorSummary: []results.ErrorCount{{Kind: "stalled", Count: 1, Example: "stalled while streaming (after 3 content chunks): no byte for 5m0s (trial.stall_timeout)"}}}.FailureLine())
	}
	got := failureWarning(lines, true)
	for _, want := range []string{
		"12 trials had failed measured requests.",
		"their error summaries are in results_json and workload_results.",
		`- workload "8K / 1K", concurrency 1, probe 1: 1 measured requests failed: 1 stalled (e.g. "stalled while streaming (after 3 content chunks): no byte for 5m0s (trial.stall_timeout)")`,
		`- workload "8K / 1K", concurrency 10, probe 1`,
		"... and 2 more",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warning lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "concurrency 11,") {
		t.Errorf("warning lists more than 10 trials:\n%s", got)
	}
	// A run that stopped (every request failed at the minimum) delivers no results_json.
	if stopped := failureWarning(lines[:1], false); strings.Contains(stopped, "are in results_json") || !strings.Contains(stopped, "there is no results_json") {
		t.Errorf("warning of a stopped run points at results_json:\n%s", stopped)
	}
}
