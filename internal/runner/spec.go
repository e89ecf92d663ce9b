// Package runner runs a capacity benchmark next to the server instead of in the Terraform
// process: the provider's own binary in its runner mode (Main), in a container on the
// server's Docker Engine sharing the server container's network namespace (Docker). The
// provider hands the runner a Spec, follows the Events it writes on its standard output
// (mirroring them where Terraform runs) and reads its Result back when it exits.
package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// Where the runner keeps its files inside its container: the journal and the result lie
// beside the spec. Dir is the runner's own; nothing else in the container is written.
const (
	Dir         = "/llmserve"
	SpecPath    = Dir + "/spec.json"      // written before start, removed by the runner once read: it holds the API keys
	JournalPath = Dir + "/" + journalName // the run's journal, what a new runner resumes from
	ResultPath  = Dir + "/" + resultName  // the Result, written once the run ends
	RecordsPath = Dir + "/records"        // records_directory inside the container

	journalName = "progress.jsonl"
	resultName  = "result.json"
)

// Spec is what a runner measures: the benchmark's configuration as capacity reads it (its
// callbacks and history are the runner's own).
type Spec struct {
	Config capacity.Config `json:"config"`
	// FleetToken is the secret the pods of a runner Job spread over several
	// (Config.Pods) and the provider present to one another (the pods' HTTP port is open to
	// the pod network); empty with one pod. Not in Key.
	FleetToken string `json:"fleet_token,omitempty"`
}

// Key identifies the measurement a runner makes: every setting of the spec but the API
// keys, hashed. A runner found with the same key is the same run (attach to it, collect
// it, resume it); one with another key belongs to a changed configuration.
func (s Spec) Key() string {
	c := s.Config
	c.APIKey, c.AdminAPIKey = "", ""
	if c.Pods <= 1 {
		c.Pods = 0 // one generator, however it was written: the run a runner of before pods made
	}
	raw, err := json.Marshal(c) //nolint:gosec // G117: the keys were blanked just above
	if err != nil {
		// Config is plain values; a failure here is a programming error, and a key that
		// matches nothing is the safe answer (a new runner is started).
		return "unencodable"
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:12])
}

// Event is one line of the runner's standard output: a human progress line or a finished
// trial (as the journal stores it).
type Event struct {
	Line  string                 `json:"line,omitempty"`
	Trial *capacity.JournalEntry `json:"trial,omitempty"`
}

// Result is what the runner leaves in ResultPath when the run ends.
type Result struct {
	// Document is raw results JSON (results.Marshal), nil when the run stopped before it.
	Document json.RawMessage  `json:"document,omitempty"`
	Resumed  capacity.Resumed `json:"resumed"`
	Failures []string         `json:"failures,omitempty"`
	// Error is why the run did not finish; Stopped is set when it stopped part-way.
	Error   string   `json:"error,omitempty"`
	Stopped *Stopped `json:"stopped,omitempty"`
}

// Stopped carries a capacity.StoppedError across the container boundary.
type Stopped struct {
	Why     capacity.StopReason `json:"why"`
	Where   string              `json:"where"`
	Kept    int                 `json:"kept"`
	LastErr string              `json:"last_error,omitempty"`
}

// Report turns the runner's result back into what capacity.Resume returns in the
// Terraform process, so the provider reports a run the same wherever it ran. journal names
// where the kept trials are for the user (the runner's container).
func (r Result) Report(journal string) (capacity.Report, error) {
	rep := capacity.Report{Resumed: r.Resumed, Failures: r.Failures}
	rep.Resumed.File = journal
	if len(r.Document) > 0 {
		doc, err := results.Parse(r.Document)
		if err != nil {
			return rep, fmt.Errorf("the runner's results document does not parse: %w", err)
		}
		rep.Document = doc
	}
	switch {
	case r.Stopped != nil:
		return rep, &capacity.StoppedError{Why: r.Stopped.Why, Where: r.Stopped.Where, Kept: r.Stopped.Kept, File: journal, LastErr: r.Stopped.LastErr}
	case r.Error != "":
		return rep, fmt.Errorf("%s", r.Error)
	case rep.Document == nil:
		return rep, fmt.Errorf("the runner ended without a result or an error")
	}
	return rep, nil
}
