package provider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/prompt"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// The resume promise, the way a user meets it: `terraform apply` (or `tofu apply`, whichever
// TF_ACC_TERRAFORM_PATH names) interrupted with SIGINT at several points, or a server that
// dies and comes back, then applied again. The re-apply must reuse exactly the trials the
// first apply finished — the server receives no prompt of a reused trial, and every prompt of
// every trial measured again — say so in a warning, write each trial once to the journal, and
// end with the boundary and the trial sequence of an uninterrupted run.

// resumeServer is the SGLang double (it reports cached tokens, tokenizes, flushes) behind a
// listener the test can close and reopen on the same port, recording the identity sentence of
// every prompt it is sent and calling hooks at the points a test interrupts.
type resumeServer struct {
	engine *simengine.Server
	addr   string

	mu       sync.Mutex
	srv      *http.Server
	received map[string]bool // identity sentences of the prompts received since reset
	gens     int             // generation requests since reset

	onGeneration func(n int)      // after the n-th generation request since reset arrived
	onFlush      func(n int) bool // the n-th flush since reset; true: hold it until the client leaves
	onTokenize   func(n int) bool // the n-th tokenize call since reset; true: hold it
	flushes      atomic.Int64
	tokenizes    atomic.Int64
}

func newResumeServer(t *testing.T) *resumeServer {
	t.Helper()
	eng, err := simengine.NewServer(simengine.Options{Model: simengine.TwoSlotModel(), ModelName: "sim-qwen",
		Protocol: simengine.SGLang, Version: "0.5.10"})
	if err != nil {
		t.Fatal(err)
	}
	s := &resumeServer{engine: eng, received: map[string]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	s.serve(ln)
	t.Cleanup(s.stop)
	return s
}

func (s *resumeServer) serve(ln net.Listener) {
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// stop closes the listener and every connection: the server is gone.
func (s *resumeServer) stop() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// restart serves again on the same address.
func (s *resumeServer) restart(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	s.serve(ln)
}

func (s *resumeServer) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.received, s.gens = map[string]bool{}, 0
	s.onGeneration, s.onFlush, s.onTokenize = nil, nil, nil
	s.flushes.Store(0)
	s.tokenizes.Store(0)
}

func (s *resumeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/completions"):
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		s.mu.Lock()
		for _, m := range req.Messages {
			if i := strings.IndexByte(m.Content, '.'); i > 0 {
				s.received[m.Content[:i+1]] = true
			}
		}
		s.gens++
		n, hook := s.gens, s.onGeneration
		s.mu.Unlock()
		if hook != nil {
			hook(n)
		}
	case strings.HasSuffix(r.URL.Path, "/flush_cache"):
		s.mu.Lock()
		hook := s.onFlush
		s.mu.Unlock()
		if hook != nil && hook(int(s.flushes.Add(1))) {
			holdUntilClientLeaves(r)
			return
		}
	case strings.HasSuffix(r.URL.Path, "tokenize"):
		s.mu.Lock()
		hook := s.onTokenize
		s.mu.Unlock()
		if hook != nil && hook(int(s.tokenizes.Add(1))) {
			holdUntilClientLeaves(r)
			return
		}
	}
	s.engine.ServeHTTP(w, r)
}

func holdUntilClientLeaves(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(2 * time.Minute):
	}
}

// cli runs the Terraform (or OpenTofu) CLI against the provider built from this module.
type cli struct {
	bin string
	env []string
}

func newCLI(t *testing.T) *cli {
	t.Helper()
	bin := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if bin == "" {
		t.Fatal("TF_ACC_TERRAFORM_PATH must name the terraform or tofu binary")
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "terraform-provider-llmserve"), ".")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the provider: %v\n%s", err, out)
	}
	rc := filepath.Join(dir, "cli.tfrc")
	config := fmt.Sprintf(`provider_installation {
  dev_overrides {
    "registry.terraform.io/llmserve/llmserve" = %[1]q
    "registry.opentofu.org/llmserve/llmserve" = %[1]q
  }
  direct {}
}
`, dir)
	if err := os.WriteFile(rc, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"TF_CLI_CONFIG_FILE=" + rc, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1"}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "TF_") && k != "CHECKPOINT_DISABLE" {
			env = append(env, kv)
		}
	}
	return &cli{bin: bin, env: env}
}

// apply runs `apply -auto-approve` in dir; interrupt, when set, is called with a function that
// sends the CLI a SIGINT, as Ctrl-C in a terminal does.
func (c *cli) apply(t *testing.T, dir string, interrupt func(sigint func())) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, "apply", "-auto-approve", "-no-color", "-input=false")
	cmd.Dir, cmd.Env = dir, c.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if interrupt != nil {
		var once sync.Once
		interrupt(func() { once.Do(func() { _ = cmd.Process.Signal(syscall.SIGINT) }) })
	}
	err := cmd.Wait()
	return out.String(), err
}

func (c *cli) outputs(t *testing.T, dir string) map[string]json.RawMessage {
	t.Helper()
	cmd := exec.Command(c.bin, "output", "-json")
	cmd.Dir, cmd.Env = dir, c.env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("output: %v", err)
	}
	var raw map[string]struct{ Value json.RawMessage }
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatal(err)
	}
	vals := map[string]json.RawMessage{}
	for k, v := range raw {
		vals[k] = v.Value
	}
	return vals
}

const resumeWorkload = "64 / 8"

func resumeConfig(endpoint, progress string) string {
	return fmt.Sprintf(`
terraform {
  required_providers {
    llmserve = { source = "llmserve/llmserve" }
  }
}

resource "llmserve_capacity_benchmark" "test" {
  endpoint      = %[1]q
  model         = "sim-qwen"
  workloads     = [{ label = %[3]q, input_tokens = 64, output_tokens = 8 }]
  slos          = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 150 }]
  search        = { min_concurrency = 1, max_concurrency = 6 }
  trial         = { warmup_requests = 1, measured_requests = 8, confirmation_trials = 2, cache_flush = "auto" }
  progress_file = %[2]q
  progress_log  = "${%[2]q}.log"
}

output "maximum" { value = llmserve_capacity_benchmark.test.maximum_passing_concurrency[%[3]q] }
output "first_failing" { value = llmserve_capacity_benchmark.test.first_failing_concurrency[%[3]q] }
output "trials" {
  value = [for t in jsondecode(llmserve_capacity_benchmark.test.results_json).workloads[0].trials : "${t.kind} ${t.trial} at ${t.concurrency}"]
}
`, endpoint, progress, resumeWorkload)
}

// journalTrials reads the progress file's trials of the run in progress: the lines after the
// last run_completed marker, and those before it separately.
func journalTrials(t *testing.T, path string) []capacity.JournalEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		t.Fatal(err)
	}
	defer f.Close()
	var out []capacity.JournalEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		var e capacity.JournalEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Kind == "run_completed" {
			continue
		}
		if len(out) > 0 && e.Fingerprint != out[0].Fingerprint {
			continue // another configuration's line (a hand edit)
		}
		out = append(out, e)
	}
	return out
}

// forgeJournal appends what a hand edit leaves: a line cut short, and the first trial again
// under another configuration's fingerprint.
func forgeJournal(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	var e capacity.JournalEntry
	if err := json.Unmarshal([]byte(first), &e); err != nil {
		t.Fatal(err)
	}
	// Rewritten in place, keys in their order: the line still starts as the journal's own.
	foreign := strings.Replace(first, `"fingerprint":"`+e.Fingerprint+`"`, `"fingerprint":"0123456789abcdef"`, 1)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "%s\n{\"format\":\"llmserve-progress/v1\",\"time\":\"2026-12-03T17:\n", foreign); err != nil {
		t.Fatal(err)
	}
}

// identities are the identity sentences of every prompt of a trial.
func identities(e capacity.JournalEntry, warmups, measured int) []string {
	stream := capacity.TrialStream(e.Workload, e.Concurrency, e.Kind, e.Index)
	var out []string
	for i := range warmups {
		out = append(out, prompt.Identity(1, stream+" warmup", i))
	}
	for i := range measured {
		out = append(out, prompt.Identity(1, stream+" measured", i))
	}
	return out
}

// noisy reports a full trial whose objective came within a factor 1.6 of its threshold: the
// engine's trials are 15 times below or twice above it unless the machine stalled.
func noisy(trials []capacity.JournalEntry) bool {
	for _, e := range trials {
		if !e.DecidedEarly && e.Closeness > 1/1.6 && e.Closeness < 1.6 {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, cond func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func TestAccCapacityBenchmark_interruptAndResume(t *testing.T) {
	testAccPreCheck(t)
	srv := newResumeServer(t)
	c := newCLI(t)
	endpoint := "http://" + srv.addr

	// The uninterrupted run every resumed one must equal.
	freshDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(freshDir, "main.tf"), []byte(resumeConfig(endpoint, filepath.Join(freshDir, "p.jsonl"))), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := c.apply(t, freshDir, nil); err != nil {
		t.Fatalf("uninterrupted apply: %v\n%s", err, out)
	}
	want := c.outputs(t, freshDir)
	freshTrials := journalTrials(t, filepath.Join(freshDir, "p.jsonl"))
	total := len(freshTrials)
	if total < 5 {
		t.Fatalf("the uninterrupted run has %d trials; the test needs more to interrupt", total)
	}
	t.Logf("uninterrupted: maximum %s, first failing %s, trials %s", want["maximum"], want["first_failing"], want["trials"])

	cases := []struct {
		name string
		// arm sets the server's hooks for the first apply; it calls sigint (or stops the
		// server) at the point under test. progress is the journal's path.
		arm func(progress string, sigint func())
		// serverDies: the first apply ends because the server went away, not by SIGINT.
		serverDies bool
		// forge: before the re-apply, the journal is hand-edited: a line cut short and a
		// trial of another configuration are appended, which the re-apply must say it ignored.
		forge    bool
		wantText string // in the first apply's error
	}{
		{name: "after 1 finished trial", arm: func(progress string, sigint func()) {
			go func() {
				if waitFor(t, func() bool { return len(journalTrials(t, progress)) >= 1 }) {
					sigint()
				}
			}()
		}, wantText: "interrupted during"},
		{name: "after 3 finished trials", arm: func(progress string, sigint func()) {
			go func() {
				if waitFor(t, func() bool { return len(journalTrials(t, progress)) >= 3 }) {
					sigint()
				}
			}()
		}, forge: true, wantText: "interrupted during"},
		{name: "in the middle of a trial", arm: func(progress string, sigint func()) {
			// Request 1 is the preflight; the first trial sends 1 + 8; this is the
			// second trial's fifth request.
			srv.onGeneration = func(n int) {
				if n == 1+9+5 {
					sigint()
				}
			}
		}, wantText: "while its requests ran"},
		{name: "during a cache flush", arm: func(progress string, sigint func()) {
			// Flush 1 identifies the method before any trial; 3 is before the third trial.
			srv.onFlush = func(n int) bool {
				if n == 3 {
					sigint()
					return true
				}
				return false
			}
		}, wantText: "while flushing the server's prefix cache"},
		{name: "during prompt preparation", arm: func(progress string, sigint func()) {
			// Prompts are fitted while the server settles: the interrupt waits until the
			// flush (milliseconds on loopback) is over and only the held prompts are left.
			srv.onTokenize = func(int) bool {
				if len(journalTrials(t, progress)) < 2 {
					return false
				}
				go func() {
					time.Sleep(500 * time.Millisecond)
					sigint()
				}()
				return true
			}
		}, wantText: "while its prompts were prepared"},
		{name: "server dies and comes back", serverDies: true, arm: func(progress string, _ func()) {
			go func() {
				if waitFor(t, func() bool { return len(journalTrials(t, progress)) >= 2 }) {
					srv.stop()
				}
			}()
		}, wantText: "the server stopped answering after"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			progress := filepath.Join(dir, "p.jsonl")
			if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(resumeConfig(endpoint, progress)), 0o644); err != nil {
				t.Fatal(err)
			}
			srv.reset()
			out, err := c.apply(t, dir, func(sigint func()) {
				srv.mu.Lock()
				tc.arm(progress, sigint)
				srv.mu.Unlock()
			})
			srv.reset()
			if tc.serverDies {
				srv.restart(t)
			}
			if err == nil {
				t.Fatalf("the first apply succeeded; it should have stopped:\n%s", out)
			}
			flat := strings.Join(strings.Fields(out), " ")
			if !strings.Contains(flat, tc.wantText) || !strings.Contains(flat, "apply again to resume") ||
				strings.Contains(flat, "context canceled") || strings.Contains(flat, "check the endpoint URL") {
				t.Errorf("the stopped apply says:\n%s\nwant %q, \"apply again to resume\", and no call chain", out, tc.wantText)
			}
			first := journalTrials(t, progress)
			var kept []capacity.JournalEntry // a trial whose requests failed is measured again
			for _, e := range first {
				if e.Errors == 0 {
					kept = append(kept, e)
				}
			}
			if len(kept) == 0 || len(kept) >= total {
				t.Fatalf("%d trials kept of %d: the interruption came at the wrong time", len(kept), total)
			}
			if tc.serverDies && !strings.Contains(flat, fmt.Sprintf("after %d good trials", len(kept))) {
				t.Errorf("the stopped apply does not count the %d good trials:\n%s", len(kept), out)
			}

			if tc.forge {
				forgeJournal(t, progress)
			}
			out, err = c.apply(t, dir, nil)
			if err != nil {
				t.Fatalf("re-apply: %v\n%s", err, out)
			}
			flat = strings.Join(strings.Fields(out), " ")
			if tc.forge && (!strings.Contains(flat, "1 trial of another configuration") || !strings.Contains(flat, "1 damaged line")) {
				t.Errorf("the re-apply does not say which hand-edited lines it ignored:\n%s", out)
			}
			if want := fmt.Sprintf("Resumed %d finished %s", len(kept), map[bool]string{true: "trial", false: "trials"}[len(kept) == 1]); !strings.Contains(flat, want) {
				t.Errorf("the re-apply does not say %q:\n%s", want, out)
			}
			all := journalTrials(t, progress)
			srv.mu.Lock()
			received := srv.received
			srv.mu.Unlock()
			for _, e := range kept {
				for _, id := range identities(e, 1, 8) {
					if received[id] {
						t.Errorf("the re-apply sent a prompt of reused trial %s %d at %d", e.Kind, e.Index, e.Concurrency)
						break
					}
				}
			}
			for _, e := range all[len(first):] {
				missing := 0
				for _, id := range identities(e, 1, 8) {
					if !received[id] {
						missing++
					}
				}
				// A probe stopped early sends only part of its prompts; a confirmation all.
				if e.Kind == "confirmation" && missing > 0 || missing == 9 {
					t.Errorf("%s %d at %d is in the journal but %d of its prompts never reached the server", e.Kind, e.Index, e.Concurrency, missing)
				}
			}
			seen := map[string]bool{}
			for _, e := range all {
				if e.Errors > 0 {
					continue // kept as a record of what happened, measured again
				}
				key := fmt.Sprintf("%s %d at %d", e.Kind, e.Index, e.Concurrency)
				if seen[key] {
					t.Errorf("the journal holds %s twice", key)
				}
				seen[key] = true
			}
			got := c.outputs(t, dir)
			compare := []string{"maximum", "first_failing", "trials"}
			if noisy(freshTrials) || noisy(all) {
				// The machine stalled a trial near its threshold: the search then rightly
				// asks for other trials than a run that was not stalled; the boundary holds.
				t.Logf("a trial came near its threshold (a stall on this machine): trial sequences not compared")
				compare = compare[:2]
			}
			for _, k := range compare {
				if string(got[k]) != string(want[k]) {
					t.Errorf("%s = %s, uninterrupted %s", k, got[k], want[k])
				}
			}
			log, _ := os.ReadFile(progress + ".log")
			if !strings.Contains(string(log), "stopped: ") || !strings.Contains(string(log), "resumed") || !strings.Contains(string(log), "finished: ") {
				t.Errorf("progress log:\n%s", log)
			}
			t.Logf("kept %d of %d trials; the re-apply measured %d and was sent %d generation requests", len(kept), total, len(all)-len(first), len(received))
		})
	}
}
