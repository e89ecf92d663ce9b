package capacity

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// A run reads its traces into workloads of its own: the caller's configuration, passed by
// value, keeps its slice as it was. Run and Resume used to read them into the caller's
// array through their copy of it.
func TestRunLeavesTheCallersWorkloads(t *testing.T) {
	t.Parallel()
	cfg := replayConfig("http://127.0.0.1:1", constantTrace(t, 12, 100)) // nothing listens: the run stops at connect
	cfg.StallTimeout, cfg.RequestTimeout = time.Minute, time.Minute
	if _, err := Run(context.Background(), cfg); err == nil {
		t.Fatal("Run against a closed port: want an error")
	}
	if cfg.Workloads[0].Trace != nil {
		t.Error("Run read the trace into the caller's workloads")
	}
	if _, err := Resume(context.Background(), cfg, Files{ProgressFile: filepath.Join(t.TempDir(), "p.jsonl")}); err == nil {
		t.Fatal("Resume against a closed port: want an error")
	}
	if cfg.Workloads[0].Trace != nil {
		t.Error("Resume read the trace into the caller's workloads")
	}
	// Check reads them into its own configuration, which a run then takes as it is.
	if err := Err(cfg.Check()); err != nil || cfg.Workloads[0].Trace == nil || !cfg.checked {
		t.Errorf("Check: %v, trace read %v, checked %v", err, cfg.Workloads[0].Trace != nil, cfg.checked)
	}
}

// A configuration with an error is checked again by a run and refused, however it was
// made: Check marks only one without errors.
func TestCheckMarksOnlyAValidConfiguration(t *testing.T) {
	t.Parallel()
	cfg := replayConfig("http://127.0.0.1:1", constantTrace(t, 12, 100))
	cfg.MeasuredRequests = 0
	if err := Err(cfg.Check()); err == nil || cfg.checked {
		t.Fatalf("Check of measured_requests = 0: %v, checked %v", err, cfg.checked)
	}
	if _, err := Run(context.Background(), cfg); err == nil || cfg.checked {
		t.Fatalf("Run of measured_requests = 0: %v", err)
	}
}
