package capacity

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/localfile"
	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/search"
)

// JournalEntry is one finished trial as the progress journal stores it: enough for a person
// watching `tail -f` and enough for a resumed search to skip it.
type JournalEntry struct {
	// Format marks the line as this provider's (journalFormat), so lines another program
	// wrote to the same file are never taken for trials. It is the first key written.
	// The short fields a person reads come first, the bulky metrics last.
	Format      string    `json:"format"`
	Time        time.Time `json:"time"`
	Workload    string    `json:"workload"`
	Concurrency int       `json:"concurrency"`
	Rate        float64   `json:"rate,omitempty"`    // an open-loop trial's request rate; its concurrency is 0
	Speedup     float64   `json:"speedup,omitempty"` // a replay trial's speedup; Rate is then the trace's mean rate times it
	Kind        string    `json:"kind"`              // probe | confirmation | comparison | run_completed
	Index       int       `json:"index"`             // 1-based confirmation (or comparison) trial number at its level; 1 for probes
	// Verdict is pass, fail (an objective was missed), error (requests failed) or
	// client_bound (the load generator was the bottleneck: Metrics.Client); written for
	// readers, Pass, Errors and the client block are what a resumed run reads.
	Verdict     string  `json:"verdict,omitempty"`
	DurationS   float64 `json:"duration_s,omitempty"` // the trial's wall-clock, preparation included
	Pass        bool    `json:"pass"`
	Fingerprint string  `json:"fingerprint"` // which configuration measured it
	// FingerprintParts hashes each setting the fingerprint covers (FingerprintParts), so a
	// line of another configuration says which differ; absent from older lines.
	FingerprintParts map[string]string `json:"fingerprint_parts,omitempty"`
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
func (t JournalEntry) LogFields() map[string]any {
	f := map[string]any{
		"workload":      t.Workload,
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
	// A trial is placed by its concurrency, or, open-loop, by its rate (and a replay's speedup).
	switch {
	case t.Rate == 0:
		f["concurrency"] = t.Concurrency
	case t.Speedup > 0:
		f["rate"], f["speedup"] = t.Rate, t.Speedup
	default:
		f["rate"] = t.Rate
	}
	return f
}

// level names where the trial ran: "concurrency 4", "rate 2.5 requests/s" or
// "speedup 1.5 (rate 2.5 requests/s)".
func (t JournalEntry) level() string {
	switch {
	case t.Rate == 0:
		return fmt.Sprintf("concurrency %d", t.Concurrency)
	case t.Speedup > 0:
		return fmt.Sprintf("speedup %.4g (rate %.4g requests/s)", t.Speedup, t.Rate)
	}
	return fmt.Sprintf("rate %.4g requests/s", t.Rate)
}

// FailureLine describes the trial's failed requests in one line naming the workload,
// where it ran (level) and the trial, or is empty when none failed.
func (t JournalEntry) FailureLine() string {
	if t.Errors == 0 {
		return ""
	}
	return fmt.Sprintf("workload %q, %s, %s %d: %d measured requests failed: %s",
		t.Workload, t.level(), t.Kind, max(t.Index, 1), t.Errors, metrics.DescribeErrors(t.ErrorSummary))
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

// clientBound says the trial's load generator was the bottleneck (its metrics' client block).
func (t JournalEntry) clientBound() bool { return t.Metrics != nil && t.Metrics.ClientBound() }

// remeasured says a resumed run measures the trial again rather than reusing it: its
// requests failed (the failure may have been the server's, not the load's), or its load
// generator was the bottleneck (it measured the client, and the client may have more CPU now).
func (t JournalEntry) remeasured() bool { return t.Errors > 0 || t.clientBound() }

// verdict is pass, fail (an objective was missed), error (requests failed) or client_bound.
func (t JournalEntry) verdict() string {
	switch {
	case t.clientBound():
		return results.VerdictClientBound
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

// kindComparison is the journal's kind of a full trial added for the comparison with a
// baseline (comparison.go): never one of the search's, which reuses only probes and
// confirmations; the document lists it as a confirmation with for_comparison.
const kindComparison = "comparison"

// Fingerprint identifies what a trial's outcome depends on, so journal entries from another
// configuration (or other triggers: another server, another revision) are never reused.
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
		Levels                          []int     `json:",omitempty"` // absent keeps older fingerprints
		OpenLoop                        *OpenLoop `json:",omitempty"`
	}{c.Endpoint, c.Model, c.API, c.Workloads, c.SLOs, c.MinConcurrency, c.MaxConcurrency,
		c.WarmupRequests, c.MeasuredRequests, c.ConfirmationTrials, c.CacheFlush, c.Seed,
		c.Experiment, runKey(c.Triggers), c.ConcurrencyLevels, c.OpenLoop}
	raw, _ := json.Marshal(key) // plain values only; cannot fail
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}

// runKey is the triggers as one canonical string: their JSON object, keys sorted, nothing
// escaped that need not be, so equal triggers always give the same key whatever order
// they were built in. No triggers at all is "<null>" and none as an empty map "{}": the
// keys journals written before this function recorded, so an interrupted run resumes
// across the upgrade.
func runKey(triggers map[string]string) string {
	if triggers == nil {
		return "<null>"
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(triggers) // a map of strings always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// journalFormat is the format key of every line this provider writes; a line is recognised
// as the journal's own by its first bytes, journalPrefix, even when a crash cut it short.
const (
	journalFormat = "llmserve-progress/v1"
	journalPrefix = `{"format":"` + journalFormat + `"`
)

// maxJournalLine bounds one line read back: a record with full metrics is tens of kilobytes,
// so anything this long is not a record, and is skipped rather than read into memory.
const maxJournalLine = 4 << 20

// JournalFile is what a progress journal may be: a regular file of at most 256 MiB, which it
// reads whole when a run starts. A trial's line is a few kilobytes, so that is tens of
// thousands of trials.
var JournalFile = localfile.Kind{Noun: "progress journal (progress_file)", MaxBytes: 256 << 20}

// Journal appends finished trials to a file, one JSON object per line.
type Journal struct {
	file        *os.File
	fingerprint string
	parts       map[string]string // FingerprintParts of the configuration
	history     []JournalEntry
	ignored     ignoredLines
	// needNewline: the file ends in a line a crash cut short; the next record starts on a
	// line of its own so it is not lost with the fragment.
	needNewline bool
}

// OpenJournal opens (creating) the journal at path and loads the entries of this
// configuration's unfinished run: entries recorded after its last completed run. An empty
// path gives a journal that records nothing. It refuses anything but a regular file, and a
// non-empty file in which this provider never wrote: it appends only to its own journal.
func OpenJournal(path string, cfg Config) (*Journal, error) {
	j := &Journal{fingerprint: cfg.Fingerprint(), parts: cfg.FingerprintParts()}
	if path == "" {
		return j, nil
	}
	// localfile: a regular file within JournalFile's bound, checked on the descriptor, opened
	// without blocking (a FIFO cannot hang the open, a device is never read).
	f, err := localfile.OpenAppend(path, JournalFile)
	if localfile.IsRefused(err) {
		return nil, fmt.Errorf("progress_file: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("open progress file %s: %w; give a writable path", path, err)
	}
	read, err := readJournal(f, j.fingerprint)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read progress file %s: %w", path, err)
	}
	if read.bytes > 0 && !read.ours {
		f.Close()
		return nil, fmt.Errorf("progress file %s is not empty and holds no line of a progress journal; "+
			"it is not this provider's to append to: give another path", path)
	}
	j.history, j.needNewline, j.file, j.ignored = read.history, read.unterminated, f, read.ignored
	j.history, j.ignored.suspect = vetHistory(read.history, read.lines, cfg)
	return j, nil
}

// ignoredLines counts the journal's own lines an open did not reuse, by why.
type ignoredLines struct {
	otherConfig int                 // another configuration's trials (or another provider version's fingerprint)
	otherParts  []map[string]string // each such trial's FingerprintParts (nil for older lines)
	damaged     int                 // cut short, not JSON, too long, or no trial this provider could have run
	delivered   int                 // trials of a run of this configuration that finished and was delivered
	// foreign counts lines that are not the journal's at all (another program's, a note
	// typed into the file), firstForeign the first one's line number.
	foreign, firstForeign int
	suspect               []suspectLine // this configuration's trials their own figures or the configuration contradict
}

// Ignored says, one reason a sentence, which lines of the journal were not reused and why;
// nil when every line of this configuration's unfinished run was usable. A journal is never
// ignored silently.
func (j *Journal) Ignored() []string {
	var out []string
	if n := j.ignored.otherConfig; n > 0 {
		out = append(out, fmt.Sprintf("%d %s of another configuration (%s), not reused", n, plural(n, "trial", "trials"), otherConfigText(j.parts, j.ignored.otherParts)))
	}
	if n := j.ignored.delivered; n > 0 {
		out = append(out, fmt.Sprintf("%d %s of an earlier run of this configuration that finished and was delivered, not reused: a new apply measures afresh", n, plural(n, "trial", "trials")))
	}
	if n := j.ignored.damaged; n > 0 {
		out = append(out, fmt.Sprintf("%d damaged %s (cut short, not valid JSON or no trial), skipped", n, plural(n, "line", "lines")))
	}
	if n := j.ignored.foreign; n > 0 {
		out = append(out, fmt.Sprintf("%d %s not written by this provider (the first: line %d), skipped: only the journal's own lines are read", n, plural(n, "line", "lines"), j.ignored.firstForeign))
	}
	for i, s := range j.ignored.suspect {
		if i == maxSuspectListed {
			n := len(j.ignored.suspect) - i
			out = append(out, fmt.Sprintf("%d more %s of this configuration not reused for such reasons; their trials are measured again", n, plural(n, "line", "lines")))
			break
		}
		out = append(out, fmt.Sprintf("line %d not reused: %s; its trial is measured again", s.line, s.why))
	}
	return out
}

// journalRead is what readJournal found.
type journalRead struct {
	history      []JournalEntry // this configuration's trials since its last completed run
	lines        []int          // the line number of each of history's trials, from 1
	ignored      ignoredLines
	ours         bool  // some line was written by a journal
	bytes        int64 // length of the file
	unterminated bool  // the last line has no newline
}

// readJournal reads journal lines from r: its own lines of the given fingerprint, in order,
// skipping lines of other configurations and programs, lines cut short, lines longer than
// maxJournalLine and records that cannot be a finished trial.
func readJournal(r io.Reader, fingerprint string) (journalRead, error) {
	var out journalRead
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	tooLong := false
	number := 0
	for {
		chunk, err := br.ReadSlice('\n')
		out.bytes += int64(len(chunk))
		switch {
		case tooLong:
		case len(line)+len(chunk) > maxJournalLine:
			tooLong, line = true, line[:0]
			out.ignored.damaged++
		default:
			line = append(line, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if len(chunk) > 0 {
			out.unterminated = chunk[len(chunk)-1] != '\n'
		}
		if len(line) > 0 || tooLong || len(chunk) > 0 {
			number++
		}
		switch {
		case bytes.HasPrefix(line, []byte(journalPrefix)):
			out.ours = true
			before := len(out.history)
			out.history = journalLine(out.history, line, fingerprint, &out.ignored)
			switch {
			case len(out.history) > before:
				out.lines = append(out.lines, number)
			case out.history == nil:
				out.lines = nil
			}
		case tooLong || len(bytes.TrimSpace(line)) == 0:
			// counted as damaged above, or an empty line (the newline a journal adds after
			// a line a crash cut short)
		default:
			if out.ignored.foreign++; out.ignored.foreign == 1 {
				out.ignored.firstForeign = number
			}
		}
		line, tooLong = line[:0], false
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// journalLine applies one of the journal's own lines to the history, counting what it
// does not use.
func journalLine(history []JournalEntry, line []byte, fingerprint string, ignored *ignoredLines) []JournalEntry {
	var t JournalEntry
	if json.Unmarshal(line, &t) != nil || t.Format != journalFormat {
		ignored.damaged++
		return history
	}
	if t.Kind == kindRunCompleted {
		// A delivered run's apply already said what it ignored before it: from here on,
		// only what came after is news, so the warning does not grow with every apply.
		*ignored = ignoredLines{}
		if t.Fingerprint == fingerprint {
			ignored.delivered = len(history)
			return nil
		}
		return history
	}
	if t.Fingerprint != fingerprint {
		ignored.otherConfig++
		ignored.otherParts = append(ignored.otherParts, t.FingerprintParts)
		return history
	}
	switch {
	case t.Kind != search.Probe.String() && t.Kind != search.Confirmation.String() && t.Kind != kindComparison,
		t.Rate == 0 && (t.Concurrency < 1 || t.Concurrency > search.MaxLevel),
		t.Rate != 0 && (t.Concurrency != 0 || !(t.Rate > 0) || math.IsInf(t.Rate, 0)),
		t.Speedup != 0 && (t.Rate == 0 || !(t.Speedup > 0) || math.IsInf(t.Speedup, 0)),
		t.Index < 0, t.Errors < 0:
		ignored.damaged++
		return history // not a trial this provider could have run
	}
	return append(history, t)
}

// History returns the trials an earlier run of the same configuration finished.
func (j *Journal) History() []JournalEntry { return j.history }

// Append writes one finished trial as a line.
func (j *Journal) Append(t JournalEntry) error {
	if j.file == nil {
		return nil
	}
	t.Format, t.Fingerprint, t.FingerprintParts = journalFormat, j.fingerprint, j.parts
	line, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("encode trial record: %w", err)
	}
	if j.needNewline {
		line = append([]byte{'\n'}, line...)
	}
	if _, err := j.file.Write(append(line, '\n')); err != nil {
		return err
	}
	j.needNewline = false
	return nil
}

// Complete records that the run finished and its result was delivered, so a later run of
// the same configuration measures afresh instead of replaying it.
func (j *Journal) Complete() error {
	j.history = nil
	return j.Append(JournalEntry{Time: time.Now().UTC(), Kind: kindRunCompleted})
}

// Close closes the file; safe on a journal without one.
func (j *Journal) Close() error {
	if j.file == nil {
		return nil
	}
	return errors.Join(j.file.Sync(), j.file.Close())
}
