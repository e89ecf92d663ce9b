package capacity

// A run with its files: the progress journal it resumes from and appends to, and the human
// progress log. Resume is the one call a caller needs: it opens both, reuses what an earlier
// run of the same configuration finished, runs the rest, marks the journal complete and
// says what it reused, what it ignored, and, when the run stops, where it stopped.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/localfile"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// Files are where a run keeps its progress.
type Files struct {
	// ProgressFile is the JSON journal: one line per finished trial, reused by a later run
	// of the same configuration. Empty: none.
	ProgressFile string
	// ProgressLog receives one human line per finished trial and at the run's milestones,
	// for `tail -f`. Empty: none.
	ProgressLog string
	// Say, when set, also receives every human line (the provider's log).
	Say func(line string)
	// Trial, when set, receives every finished trial after the journal has it (the Docker
	// runner streams them to the provider, which mirrors the journal where Terraform runs).
	Trial func(JournalEntry)
}

// Check refuses files a run could not keep apart, as a *FileError: progress_log naming the
// file progress_file names (the same path once cleaned and made absolute, or one file
// through a link), whose human lines would break the journal a later run resumes from.
func (f Files) Check() error {
	if f.ProgressFile == "" || f.ProgressLog == "" {
		return nil
	}
	same := absClean(f.ProgressFile) == absClean(f.ProgressLog)
	if !same {
		a, errA := os.Stat(f.ProgressFile)
		b, errB := os.Stat(f.ProgressLog)
		same = errA == nil && errB == nil && os.SameFile(a, b)
	}
	if !same {
		return nil
	}
	return &FileError{Path: attrpath.Root("progress_log"), Err: fmt.Errorf("progress_log %q names the same file as progress_file %q: the journal is JSON lines a later apply resumes from, "+
		"and the log's human lines in it would make it unreadable; give progress_log a file of its own, e.g. %q", f.ProgressLog, f.ProgressFile, logBeside(f.ProgressFile))}
}

// absClean is p cleaned and absolute, or only cleaned when the working directory is unknown.
func absClean(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}

// logBeside suggests a progress log beside the journal.
func logBeside(journal string) string {
	if base := strings.TrimSuffix(journal, filepath.Ext(journal)); base+".log" != journal {
		return base + ".log"
	}
	return journal + ".progress.log"
}

// Report is what a run produced besides its document.
type Report struct {
	Document *results.Document // nil when the run stopped before any workload finished
	Resumed  Resumed
	// Failures has one line per trial with failed measured requests (see JournalEntry.FailureLine).
	Failures []string
}

// Resumed says what a run took from its journal and what it left there.
type Resumed struct {
	File      string
	Trials    int      // finished trials reused instead of measured again
	Workloads []string // the workloads they belong to, in order
	// Remeasured counts journaled trials whose requests failed, or whose load generator was
	// the bottleneck: kept as a record, measured again.
	Remeasured int
	// Ignored says why lines of the journal were not used (another configuration, damaged).
	Ignored []string
}

// Summary is the sentence a user reads: "resumed 14 of the trials in ./q.progress.jsonl
// (workloads "2K / 512", "8K / 1K"); measured the rest", or "" when nothing was reused.
func (r Resumed) Summary() string {
	if r.Trials == 0 {
		return ""
	}
	quoted := make([]string, len(r.Workloads))
	for i, w := range r.Workloads {
		quoted[i] = fmt.Sprintf("%q", w)
	}
	noun := "workload"
	if len(quoted) > 1 {
		noun = "workloads"
	}
	s := fmt.Sprintf("resumed %d finished %s from %s (%s %s) instead of measuring %s again; measured the rest",
		r.Trials, plural(r.Trials, "trial", "trials"), r.File, noun, strings.Join(quoted, ", "), plural(r.Trials, "it", "them"))
	if r.Remeasured > 0 {
		s += fmt.Sprintf("; %d journaled %s with failed requests or a client-bound load generator measured again", r.Remeasured, plural(r.Remeasured, "trial", "trials"))
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// FileError is a progress file or log that cannot be used; Path names the attribute.
type FileError struct {
	Path attrpath.Path
	Err  error
}

func (e *FileError) Error() string { return e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// StoppedError is a run that ended before its result: interrupted (Terraform's stop), out of
// time, or with a server that went away after answering. It names where the run was and
// what it kept, instead of the call chain that noticed.
type StoppedError struct {
	Why     StopReason
	Where   string // the trial and its step, or "between trials"
	Kept    int    // finished trials a resumed run reuses
	File    string // the progress file they are kept in; "" when none is set
	LastErr string // StopServerGone: what the server last said; otherwise what the run was waiting on, when it knows

	Cause error
}

// StopReason is why a run stopped part-way.
type StopReason int

// Reasons a run stops part-way.
const (
	StopInterrupted StopReason = iota // the caller cancelled (Terraform's interrupt)
	StopTimedOut                      // the caller's deadline (timeouts.create) passed
	StopServerGone                    // the server stopped answering after good trials
)

func (e *StoppedError) Error() string {
	var b strings.Builder
	trials := fmt.Sprintf("%d finished %s", e.Kept, plural(e.Kept, "trial", "trials"))
	switch e.Why {
	case StopServerGone:
		fmt.Fprintf(&b, "the server stopped answering after %d good %s", e.Kept, plural(e.Kept, "trial", "trials"))
		if e.Where != "between trials" {
			fmt.Fprintf(&b, " (during %s)", e.Where)
		}
		fmt.Fprintf(&b, "; last error: %s", e.LastErr)
	case StopTimedOut:
		fmt.Fprintf(&b, "timed out (timeouts.create) during %s", e.Where)
	default:
		fmt.Fprintf(&b, "interrupted during %s", e.Where)
	}
	if e.Why != StopServerGone && e.LastErr != "" {
		fmt.Fprintf(&b, ", waiting on the server: %s", e.LastErr)
	}
	if e.File == "" {
		if e.Kept > 0 {
			fmt.Fprintf(&b, "; the %s will be measured again: set progress_file to keep finished trials across applies", trials)
		}
		if e.Why == StopTimedOut {
			b.WriteString("; raise timeouts.create")
		}
		return b.String()
	}
	fmt.Fprintf(&b, "; %s %s kept in %s; ", trials, plural(e.Kept, "is", "are"), e.File)
	switch e.Why {
	case StopServerGone:
		b.WriteString("apply again to resume once the server is back (check its logs)")
	case StopTimedOut:
		b.WriteString("raise timeouts.create and apply again to resume")
	default:
		b.WriteString("apply again to resume")
	}
	return b.String()
}

func (e *StoppedError) Unwrap() error { return e.Cause }

// Summary is the one-line title of the diagnostic.
func (e *StoppedError) Summary() string {
	switch e.Why {
	case StopTimedOut:
		return "Capacity benchmark timed out"
	case StopServerGone:
		return "Inference server stopped answering"
	}
	return "Capacity benchmark interrupted"
}

// Resume runs cfg with its files (see Files). cfg.History, Progress and ProgressLine are
// set here. The run's error is a *FileError when a file cannot be used, a *StoppedError when
// the run stopped part-way, or what Run returns otherwise.
func Resume(ctx context.Context, cfg Config, files Files) (Report, error) {
	rep := Report{Resumed: Resumed{File: files.ProgressFile}}
	// The fingerprint names each trace by its contents. A configuration that does not
	// validate stops the run once its files are open, as a run stopped by any other error.
	invalid := cfg.check()
	if err := files.Check(); err != nil {
		return rep, err
	}
	journal, err := OpenJournal(files.ProgressFile, cfg)
	if err != nil {
		return rep, &FileError{Path: attrpath.Root("progress_file"), Err: err}
	}
	defer journal.Close()
	var logFile *os.File
	if files.ProgressLog != "" {
		logFile, err = openProgressLog(files.ProgressLog)
		if err != nil {
			return rep, &FileError{Path: attrpath.Root("progress_log"), Err: err}
		}
		defer logFile.Close()
	}
	say := func(line string) {
		if logFile != nil {
			_, _ = fmt.Fprintln(logFile, line) // a full disk must not stop the measurement
		}
		if files.Say != nil {
			files.Say(line)
		}
	}
	rep.Resumed.Ignored = journal.Ignored()
	for _, t := range journal.History() {
		if t.remeasured() {
			rep.Resumed.Remeasured++
		}
	}
	cfg.History = journal.History()
	cfg.Progress = func(t JournalEntry) {
		if line := t.FailureLine(); line != "" {
			rep.Failures = append(rep.Failures, line)
		}
		if err := journal.Append(t); err != nil {
			say(fmt.Sprintf("cannot append to the progress file %s: %v", files.ProgressFile, err))
		}
		if files.Trial != nil {
			files.Trial(t)
		}
	}
	cfg.ProgressLine = say
	say(startLine(cfg, files, journal))

	doc, st, err := (*results.Document)(nil), runStats{start: time.Now()}, invalid
	if invalid == nil {
		doc, st, err = run(ctx, cfg)
	}
	rep.Document = doc
	rep.Resumed.Trials, rep.Resumed.Workloads = st.reused, st.reusedBy
	if err != nil {
		var stopped *StoppedError
		if errors.As(err, &stopped) {
			stopped.File = files.ProgressFile
		}
		say(time.Now().UTC().Format("15:04:05") + "  stopped: " + err.Error())
		return rep, err
	}
	if err := journal.Complete(); err != nil {
		say(fmt.Sprintf("cannot mark the run complete in the progress file %s: %v", files.ProgressFile, err))
	}
	say(fmt.Sprintf("%s  finished: %d trials measured, %d resumed, in %s", time.Now().UTC().Format("15:04:05"), st.measured, st.reused, round(time.Since(st.start).Seconds())))
	return rep, nil
}

// startLine opens the log of a run: what it measures and what the journal gives it.
func startLine(cfg Config, files Files, j *Journal) string {
	labels := make([]string, len(cfg.Workloads))
	for i, w := range cfg.Workloads {
		labels[i] = fmt.Sprintf("%q", w.Label)
	}
	s := fmt.Sprintf("%s  started: %s against %s", time.Now().UTC().Format("15:04:05"), strings.Join(labels, ", "), cfg.Endpoint)
	if n := len(j.History()); n > 0 {
		s += fmt.Sprintf("; %s holds %d finished %s of this configuration, which the search reuses", files.ProgressFile, n, plural(n, "trial", "trials"))
	}
	for _, why := range j.Ignored() {
		s += "; ignored in " + files.ProgressFile + ": " + why
	}
	return s
}

// progressLogFile is the human log: written, never read back, so it has no size bound.
var progressLogFile = localfile.Kind{Noun: "progress log"}

// openProgressLog opens the human log for appending; like the journal, only a regular file.
func openProgressLog(path string) (*os.File, error) {
	f, err := localfile.OpenLog(path, progressLogFile)
	if localfile.IsRefused(err) {
		return nil, fmt.Errorf("progress log: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("open progress log %s: %w; give a writable path", path, err)
	}
	return f, nil
}

// explain turns the error that stopped a run into what happened to the run: interrupted,
// out of time, or a server that went away after good trials. Other errors pass unchanged.
func (w *runTracker) explain(ctx context.Context, err error) error {
	w.mu.Lock()
	good := w.good
	lastErr := w.lastError
	w.mu.Unlock()
	if ctxErr := ctx.Err(); ctxErr != nil {
		st := &StoppedError{Why: StopInterrupted, Where: w.where(), Kept: good, Cause: err}
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			st.Why = StopTimedOut
		}
		// A wait the server kept refusing ends with the context; its last answer says why
		// the run was still waiting.
		var refused *engine.FlushRefusedError
		if errors.As(err, &refused) {
			st.LastErr = "the cache flush " + refused.Answer()
		}
		return st
	}
	if good == 0 {
		return err
	}
	var unreachable *engine.UnreachableError
	switch {
	case errors.As(err, &unreachable):
		lastErr = unreachable.Call + " failed: " + unreachable.Cause
	case errors.Is(err, ErrServerFailing):
		lastErr = cmp.Or(lastErr, err.Error())
	default:
		return err
	}
	return &StoppedError{Why: StopServerGone, Where: w.where(), Kept: good, LastErr: lastErr, Cause: err}
}
