package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

type inProcess []capacity.Peer

func (p inProcess) Peers(context.Context) ([]capacity.Peer, error) { return p, nil }

// -check holds on a run whose every trial two load generators sent (runner.kubernetes.pods
// = 2): the records of both, merged, reproduce every value bit for bit. A document whose p95
// is the mean of the pods' own p95s, as tools that merge summaries report, is caught.
func TestCheckHoldsOnAMergedRun(t *testing.T) {
	t.Parallel()
	eng, err := simengine.NewServer(simengine.Options{Model: simengine.TwoSlotModel(), ModelName: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	dir := t.TempDir()
	cfg := capacity.Config{
		Endpoint: srv.URL, Model: "sim", API: "chat",
		Workloads:      []capacity.Workload{{Label: "64 / 8", InputTokens: 64, OutputTokens: 8}},
		SLOs:           []results.SLO{{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: 150}},
		MinConcurrency: 1, MaxConcurrency: 6, WarmupRequests: 2, MeasuredRequests: 16, ConfirmationTrials: 2,
		CacheFlush: "auto", Seed: 1, StallTimeout: 30 * time.Second, RequestTimeout: time.Minute,
		RecordsDirectory: filepath.Join(dir, "records"),
	}
	cfg.Pods, cfg.Fleet = 2, inProcess{capacity.NewWorker(cfg)}
	doc, _, resultsPath := runToFile(t, cfg, dir)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-results", resultsPath, "-records", cfg.RecordsDirectory, "-check"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "every value identical") {
		t.Fatalf("stderr: %s", stderr.String())
	}

	// The mean of the pods' own p95 TTFTs in place of the merged one: -check refuses it.
	w := &doc.Workloads[0]
	forged, tr95 := -1, 0.0
	for i, tr := range w.AllTrials {
		if tr.StoppedEarly {
			continue // every pod's share recorded whole: the forged share below is caught
		}
		lines, _, err := records.Read(filepath.Join(cfg.RecordsDirectory, tr.RecordsFile))
		if err != nil {
			t.Fatal(err)
		}
		var p95 [2]float64
		for pod := range 2 {
			var ttft []float64
			for _, l := range lines {
				if l.Kind == records.KindMeasured && l.Pod != nil && *l.Pod == pod && l.FirstTokenNs != nil {
					ttft = append(ttft, float64(*l.FirstTokenNs-*l.SentNs)/1e6)
				}
			}
			if len(ttft) == 0 {
				break
			}
			if p95[pod], err = metrics.Percentile(ttft, 95); err != nil {
				t.Fatal(err)
			}
		}
		if mean := (p95[0] + p95[1]) / 2; p95[1] > 0 && mean != tr.TTFTMs.P95 {
			tr95 = tr.TTFTMs.P95
			w.AllTrials[i].TTFTMs.P95, forged = mean, i
			break
		}
	}
	if forged < 0 {
		t.Fatal("no trial where the pods' mean p95 differs from the merged p95")
	}
	raw, err := results.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(resultsPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := run([]string{"-results", resultsPath, "-records", cfg.RecordsDirectory, "-check"}, &bytes.Buffer{}, &stderr); code != 1 || !strings.Contains(stderr.String(), "ttft_ms") {
		t.Errorf("the pods' averaged p95: exit %d, %s", code, stderr.String())
	}

	// A share that says pod 1 was given fewer requests than its records hold: caught too.
	w.AllTrials[forged].TTFTMs.P95 = tr95
	sh := w.AllTrials[forged].Pods.Shares
	sh[0].MeasuredRequests, sh[1].MeasuredRequests = sh[0].MeasuredRequests+1, sh[1].MeasuredRequests-1
	if raw, err = results.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(resultsPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := run([]string{"-results", resultsPath, "-records", cfg.RecordsDirectory, "-check"}, &bytes.Buffer{}, &stderr); code != 1 || !strings.Contains(stderr.String(), "pods.shares[1].measured_requests") {
		t.Errorf("a forged share: exit %d, %s", code, stderr.String())
	}
}
