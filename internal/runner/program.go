package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// Exit statuses of the runner mode. Whatever the status, ResultPath says what happened when
// the runner got as far as the run; without it the runner died (or never started).
const (
	ExitFinished = 0 // a result document
	ExitStopped  = 3 // the run ended without one (stopped, failed); ResultPath says why
	ExitBadSpec  = 4 // the spec could not be read
)

// Main is the runner mode of the provider's binary (`terraform-provider-llmserve runner
// [spec]`): it reads the spec (SpecPath by default) and removes it, runs capacity.Resume
// with the journal beside it (JournalPath), writes every human line and finished trial to
// stdout as Events, and the Result beside it too (ResultPath). ctx ends the run as Terraform's interrupt ends a
// local one (the container is stopped).
//
// `runner relay <host:port>` is the relay mode (HTTPClient): stdin and stdout copied to and
// from one connection to the server, from inside its network namespace.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 2 && args[0] == "relay" {
		return relay(ctx, args[len(args)-1], os.Stdin, stdout, stderr)
	}
	specPath := SpecPath
	if len(args) > 0 {
		specPath = args[0]
	}
	spec, err := readSpec(specPath)
	if err != nil {
		fmt.Fprintf(stderr, "llmserve runner: %v\n", err)
		return ExitBadSpec
	}
	return measure(ctx, spec, filepath.Dir(specPath), stdout, stderr)
}

// measure runs spec's benchmark with its journal and result in dir: Main's run, and the run
// of a Kubernetes runner's pod 0 (spec.Config.Fleet then reaches the other pods).
func measure(ctx context.Context, spec Spec, dir string, stdout, stderr io.Writer) int {
	out := &eventWriter{enc: json.NewEncoder(stdout)}
	if f, ok := spec.Config.Fleet.(*httpFleet); ok {
		f.say = func(line string) { out.write(Event{Line: line}) }
	}
	rep, runErr := capacity.Resume(ctx, spec.Config, capacity.Files{
		ProgressFile: filepath.Join(dir, journalName),
		Say:          func(line string) { out.write(Event{Line: line}) },
		Trial:        func(t capacity.JournalEntry) { out.write(Event{Trial: &t}) },
	})
	res := Result{Resumed: rep.Resumed, Failures: rep.Failures}
	if rep.Document != nil {
		raw, err := results.Marshal(rep.Document)
		if err != nil && runErr == nil {
			runErr = fmt.Errorf("encoding the results document: %w", err)
		}
		res.Document = raw
	}
	var stopped *capacity.StoppedError
	switch {
	case errors.As(runErr, &stopped):
		res.Stopped = &Stopped{Why: stopped.Why, Where: stopped.Where, Kept: stopped.Kept, LastErr: stopped.LastErr}
	case runErr != nil:
		res.Error = runErr.Error()
	}
	if err := writeResult(filepath.Join(dir, resultName), res); err != nil {
		fmt.Fprintf(stderr, "llmserve runner: %v\n", err)
		return ExitStopped
	}
	if runErr != nil {
		return ExitStopped
	}
	return ExitFinished
}

func readSpec(path string) (Spec, error) {
	var spec Spec
	raw, err := os.ReadFile(path)
	if err != nil {
		return spec, fmt.Errorf("reading the run spec: %w", err)
	}
	// It holds the API keys: gone from the container's filesystem once read.
	_ = os.Remove(path)
	if err := json.Unmarshal(raw, &spec); err != nil {
		return spec, fmt.Errorf("the run spec %s does not parse (a runner of another provider version?): %w", path, err)
	}
	return spec, nil
}

func writeResult(path string, res Result) error {
	raw, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encoding the result: %w", err)
	}
	// Whole or absent: a runner killed while writing leaves no half a result to collect.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return fmt.Errorf("writing the result: %w", err)
	}
	return os.Rename(tmp, path)
}

// eventWriter writes one JSON line per event; the search calls it from one goroutine at a
// time, the mutex keeps that true whatever calls it.
type eventWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (w *eventWriter) write(e Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = w.enc.Encode(e) // stdout gone: the journal and the result still hold everything
}
