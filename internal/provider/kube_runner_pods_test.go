package provider

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// runner.kubernetes.pods = 2 on the real control plane: the runner Job is an Indexed Job of
// two pods, each running the real runner program on its pod IP; pod 0 runs the search and
// sends each trial's shares to pod 1 over the pod network, both started behind the barrier;
// the provider reads pod 0 through the API server's pod proxy (the default pod_access) and
// posts it pod 1's address there. Every trial is spread over both pods (concurrency 3 as 2
// and 1), records from both merged into one file per trial that recomputes bit for bit
// (records.Verify: llmserve-recompute -check). Then the same run with pod 1's runner killed
// mid-run (restarted in place, as the kubelet does: the trial it was in is sent again) and
// with the apply interrupted and attached to again: the same levels, no Job left.
func TestAccInferenceDeployment_runnerPods(t *testing.T) {
	kubeconfig, cs := kubeTestEnv(t)
	engines := startKubeDoubles(t, cs, "default")
	runners := startKubeRunners(t, cs, "default")
	c := newCLI(t)
	const name = "runner-pods"
	tfFile := func(dir, body string) {
		cfg := "terraform {\n  required_providers {\n    llmserve = { source = \"llmserve/llmserve\" }\n  }\n}\n" + body
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	depDir := t.TempDir()
	tfFile(depDir, strings.SplitN(kubeRunnerConfig(kubeconfig, name, "", ""), `resource "llmserve_capacity_benchmark"`, 2)[0]+`
output "endpoint" { value = llmserve_inference_deployment.doubles.endpoint }
output "replicas" { value = llmserve_inference_deployment.doubles.replica_endpoints }
output "model" { value = llmserve_inference_deployment.doubles.served_model_name }
`)
	if out, err := c.apply(t, depDir, nil); err != nil {
		t.Fatalf("deployment: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		cmd := exec.Command(c.bin, "destroy", "-auto-approve", "-no-color")
		cmd.Dir, cmd.Env = depDir, c.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("destroy: %v\n%s", err, out)
		}
	})
	outs := c.outputs(t, depDir)
	bench := func(dir string) {
		tfFile(dir, fmt.Sprintf(`
provider "llmserve" {
  kubernetes {
    config_path = %[1]q
  }
}

resource "llmserve_capacity_benchmark" "inside" {
  endpoint          = %[2]s
  replica_endpoints = %[3]s
  model             = %[5]s
  workloads         = [{ label = "64 / 8", input_tokens = 64, output_tokens = 128 }]
  slos              = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 60000 }]
  search            = { concurrency_levels = [1, 2, 3, 4, 5, 6] }
  trial             = { warmup_requests = 2, measured_requests = 16, confirmation_trials = 1, cache_flush = "auto" }
  progress_file     = %[4]q
  progress_log      = "${%[4]q}.log"
  records_directory = %[6]q
  runner = {
    kubernetes = {
      namespace     = "default"
      image         = "ghcr.io/llmserve/llmserve-runner:test"
      node_selector = { type = "kwok" }
      tolerations   = [{ key = "kwok.x-k8s.io/node", operator = "Exists", effect = "NoSchedule" }]
      pods          = 2
    }
  }
}

output "levels" { value = llmserve_capacity_benchmark.inside.maximum_passing_concurrency["64 / 8"] }
output "results" { value = llmserve_capacity_benchmark.inside.results_json }
`, kubeconfig, outs["endpoint"], outs["replicas"], filepath.Join(dir, "p.jsonl"), outs["model"], filepath.Join(dir, "records")))
	}
	trialsIn := func(path string) int {
		raw, _ := os.ReadFile(path)
		return strings.Count(string(raw), `"kind":"probe"`) + strings.Count(string(raw), `"kind":"confirmation"`)
	}
	// merged checks the run's document: every trial over both pods, its records from both,
	// every value recomputed from them.
	merged := func(t *testing.T, dir string) *results.Document {
		t.Helper()
		var raw string
		if err := json.Unmarshal(c.outputs(t, dir)["results"], &raw); err != nil {
			t.Fatal(err)
		}
		doc, err := results.Parse([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		var skews []float64
		for _, tr := range doc.Workloads[0].AllTrials {
			pt := tr.Pods
			if pt == nil || pt.Pods != 2 || len(pt.Shares) != 2 || pt.Shares[0].Concurrency+pt.Shares[1].Concurrency != tr.Concurrency {
				t.Fatalf("trial at %d: pods %+v", tr.Concurrency, pt)
			}
			lines, _, err := records.Read(filepath.Join(dir, "records", tr.RecordsFile))
			if err != nil {
				t.Fatal(err)
			}
			byPod := [2]int{}
			for _, l := range lines {
				if l.Kind == records.KindMeasured {
					byPod[*l.Pod]++
				}
			}
			if byPod[0] != pt.Shares[0].MeasuredRequests || byPod[1] != pt.Shares[1].MeasuredRequests {
				t.Errorf("trial at %d: measured records by pod %v, shares %+v", tr.Concurrency, byPod, pt.Shares)
			}
			if tr.Concurrency > 1 {
				skews = append(skews, pt.StartSkewMs)
			}
		}
		v, err := records.Verify(doc, filepath.Join(dir, "records"))
		if err != nil {
			t.Fatal(err)
		}
		if !v.OK() {
			t.Errorf("the merged records do not reproduce the document: %q %+v", v.Differences, v.Contradictions)
		}
		slices.Sort(skews)
		t.Logf("start skew between the two pods over %d trials: median %.3f ms, max %.3f ms", len(skews), skews[len(skews)/2], skews[len(skews)-1])
		return doc
	}

	freshDir := t.TempDir()
	bench(freshDir)
	before := engines.served()
	if out, err := c.apply(t, freshDir, nil); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	wantRequests := engines.served() - before
	want := c.outputs(t, freshDir)["levels"]
	merged(t, freshDir)
	if runners.started.Load() < 2 {
		t.Errorf("%d runner processes started, want both pods'", runners.started.Load())
	}
	if err := runnerJobsGone(cs, "default"); err != nil {
		t.Error(err)
	}
	trialRequests := int64(2 + 16)

	t.Run("a pod killed mid-run loses at most its trial", func(t *testing.T) {
		dir := t.TempDir()
		bench(dir)
		before := engines.served()
		out, err := c.apply(t, dir, func(func()) {
			go func() {
				if waitFor(t, func() bool { return trialsIn(filepath.Join(dir, "p.jsonl")) >= 3 }) {
					jobs := runnerJobs(t, cs, "default")
					if len(jobs) == 1 {
						runners.killPod(t, jobs[0], 1)
					}
				}
			}()
		})
		if err != nil {
			t.Fatalf("apply: %v\n%s", err, out)
		}
		if got := c.outputs(t, dir)["levels"]; string(got) != string(want) {
			t.Errorf("levels %s, uninterrupted %s", got, want)
		}
		served := engines.served() - before
		log, _ := os.ReadFile(filepath.Join(dir, "p.jsonl.log"))
		t.Logf("%d requests served (uninterrupted %d); progress log says of the lost pod: %q", served, wantRequests, grepLines(string(log), "runner pod 1"))
		if served > wantRequests+trialRequests {
			t.Errorf("%d requests served, want at most %d + one trial's %d", served, wantRequests, trialRequests)
		}
		merged(t, dir)
		if err := runnerJobsGone(cs, "default"); err != nil {
			t.Error(err)
		}
	})
	t.Run("interrupted and attached to again", func(t *testing.T) {
		dir := t.TempDir()
		bench(dir)
		before := engines.served()
		out, err := c.apply(t, dir, func(sigint func()) {
			go func() {
				if waitFor(t, func() bool { return trialsIn(filepath.Join(dir, "p.jsonl")) >= 2 }) {
					sigint()
				}
			}()
		})
		if err == nil || !strings.Contains(out, "keeps measuring") {
			t.Fatalf("interrupted apply: err %v:\n%s", err, out)
		}
		out, err = c.apply(t, dir, nil)
		if err != nil {
			t.Fatalf("second apply: %v\n%s", err, out)
		}
		log, _ := os.ReadFile(filepath.Join(dir, "p.jsonl.log"))
		if !strings.Contains(out+string(log), "runner Job") || !strings.Contains(out+string(log), "attached to") && !strings.Contains(out+string(log), "collected the result") {
			t.Errorf("the second apply does not say it attached:\n%s\n%s", out, log)
		}
		if got := c.outputs(t, dir)["levels"]; string(got) != string(want) {
			t.Errorf("levels %s, uninterrupted %s", got, want)
		}
		if served := engines.served() - before; served != wantRequests {
			t.Errorf("%d requests served, uninterrupted %d: a trial was lost or measured twice", served, wantRequests)
		}
		merged(t, dir)
		if err := runnerJobsGone(cs, "default"); err != nil {
			t.Error(err)
		}
	})
}

// grepLines is the lines of s that hold sub.
func grepLines(s, sub string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}
