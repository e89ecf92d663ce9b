package capacity

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// TrialRecord is one finished trial as the progress journal stores it: enough for a person
// watching `tail -f` and enough for a resumed search to skip it.
type TrialRecord struct {
	Time        time.Time `json:"time"`
	Fingerprint string    `json:"fingerprint"` // which configuration measured it
	Workload    string    `json:"workload"`
	Concurrency int       `json:"concurrency"`
	Kind        string    `json:"kind"`  // probe | confirmation | run_completed
	Index       int       `json:"index"` // 1-based confirmation trial number; 0 for probes
	Pass        bool      `json:"pass"`
	// SLOs is each objective's value. Closeness is the largest objective value relative to
	// its threshold (at least 1: missed), the search's guard band reads it.
	SLOs         []results.SLOResult `json:"slos"`
	Closeness    float64             `json:"closeness"`
	ValueIsBound bool                `json:"closeness_is_lower_bound,omitempty"` // a probe cut short knows only a bound
	DecidedEarly bool                `json:"decided_early"`
	Requests     int                 `json:"requests,omitempty"` // confirmation trials: requests sent, warmups included
	Errors       int                 `json:"errors,omitempty"`   // failed measured requests
	// ErrorSummary says why requests failed, by kind, with one redacted example each. A
	// trial with failed requests fails for that reason: a probe stopped by one has no
	// objective values and no closeness.
	ErrorSummary []results.ErrorCount `json:"error_summary,omitempty"`
	CostS        float64              `json:"cost_request_seconds"`
	Metrics      *results.Trial       `json:"metrics,omitempty"` // full metrics of the trial
}

// LogFields is the record as structured log fields.
func (t TrialRecord) LogFields() map[string]any {
	f := map[string]any{
		"workload":      t.Workload,
		"concurrency":   t.Concurrency,
		"kind":          t.Kind,
		"index":         t.Index,
		"verdict":       t.verdict(),
		"slos":          sloFields(t.SLOs),
		"closeness":     t.Closeness,
		"decided_early": t.DecidedEarly,
		"errors":        t.Errors,
	}
	if t.Errors > 0 {
		f["error_summary"] = metrics.DescribeErrors(t.ErrorSummary)
	}
	return f
}

// FailureLine describes the trial's failed requests in one line naming the workload,
// concurrency and trial, or is empty when none failed.
func (t TrialRecord) FailureLine() string {
	if t.Errors == 0 {
		return ""
	}
	return fmt.Sprintf("workload %q, concurrency %d, %s %d: %d measured requests failed: %s",
		t.Workload, t.Concurrency, t.Kind, max(t.Index, 1), t.Errors, metrics.DescribeErrors(t.ErrorSummary))
}

// sloFields reads like "p95 time_to_first_token=8123.4 (met)" per objective.
func sloFields(rs []results.SLOResult) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		key := results.SLO{Metric: r.Metric, Percentile: r.Percentile}.Key()
		out[i] = fmt.Sprintf("%s=%.1f (%s)", key, r.Value, map[bool]string{true: "met", false: "missed"}[r.Met])
	}
	return out
}

// verdict is pass, fail (an objective was missed) or error (requests failed).
func (t TrialRecord) verdict() string {
	switch {
	case t.Pass:
		return "pass"
	case t.Errors > 0:
		return "error"
	}
	return "fail"
}

// kindRunCompleted marks the end of a finished run in the journal: trials before it belong
// to a result already delivered and are never reused.
const kindRunCompleted = "run_completed"

// Fingerprint identifies what a trial's outcome depends on, so journal entries from another
// configuration (or another run key: a changed trigger, another server) are never reused.
// The API key is deliberately left out.
func (c Config) Fingerprint() string {
	key := struct {
		Endpoint, Model, API            string
		Workloads                       []Workload
		SLOs                            []results.SLO
		Min, Max, Warmup, Measured, Cfm int
		Flush                           string
		Seed                            int64
		Experiment                      *results.Experiment
		RunKey                          string
		Levels                          []int `json:",omitempty"` // absent keeps older fingerprints
	}{c.Endpoint, c.Model, c.API, c.Workloads, c.SLOs, c.MinConcurrency, c.MaxConcurrency,
		c.WarmupRequests, c.MeasuredRequests, c.ConfirmationTrials, c.CacheFlush, c.Seed,
		c.Experiment, c.RunKey, c.ConcurrencyLevels}
	raw, _ := json.Marshal(key) // plain values only; cannot fail
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}

// Journal appends finished trials to a file, one JSON object per line.
type Journal struct {
	file        *os.File
	fingerprint string
	history     []TrialRecord
}

// OpenJournal opens (creating) the journal at path and loads the entries of this
// configuration's unfinished run: entries recorded after its last completed run. An empty
// path gives a journal that records nothing.
func OpenJournal(path string, cfg Config) (*Journal, error) {
	j := &Journal{fingerprint: cfg.Fingerprint()}
	if path == "" {
		return j, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open progress file %s: %w; give a writable path", path, err)
	}
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for scanner.Scan() {
		var t TrialRecord
		// Lines from other tools, or a line cut by a crash, are skipped, not fatal.
		if json.Unmarshal(scanner.Bytes(), &t) != nil || t.Fingerprint != j.fingerprint {
			continue
		}
		if t.Kind == kindRunCompleted {
			j.history = nil
			continue
		}
		j.history = append(j.history, t)
	}
	if err := scanner.Err(); err != nil {
		f.Close()
		return nil, fmt.Errorf("read progress file %s: %w", path, err)
	}
	j.file = f
	return j, nil
}

// History returns the trials an earlier run of the same configuration finished.
func (j *Journal) History() []TrialRecord { return j.history }

// Append writes one finished trial as a line.
func (j *Journal) Append(t TrialRecord) error {
	if j.file == nil {
		return nil
	}
	t.Fingerprint = j.fingerprint
	line, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("encode trial record: %w", err)
	}
	_, err = j.file.Write(append(line, '\n'))
	return err
}

// Complete records that the run finished and its result was delivered, so a later run of
// the same configuration measures afresh instead of replaying it.
func (j *Journal) Complete() error {
	j.history = nil
	return j.Append(TrialRecord{Time: time.Now().UTC(), Kind: kindRunCompleted})
}

// Close closes the file; safe on a journal without one.
func (j *Journal) Close() error {
	if j.file == nil {
		return nil
	}
	return errors.Join(j.file.Sync(), j.file.Close())
}
