package runner

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
)

// Mirror writes a runner's events where Terraform runs, as a local run writes them: each
// finished trial into the progress file (the same journal format), each human line into the
// progress log and to Say. A runner's events are replayed from its start when the provider
// attaches to it again, so what the files already hold is skipped.
type Mirror struct {
	journal *capacity.Journal
	log     *os.File
	say     func(string)

	seenLines  map[string]bool
	seenTrials map[string]bool
}

// OpenMirror opens the local files of a run of cfg; empty paths mirror nothing there. A
// file that cannot be used is a *capacity.FileError naming its attribute, as a local run's.
func OpenMirror(cfg capacity.Config, progressFile, progressLog string, say func(string)) (*Mirror, error) {
	m := &Mirror{say: say, seenLines: map[string]bool{}, seenTrials: map[string]bool{}}
	j, err := capacity.OpenJournal(progressFile, cfg)
	if err != nil {
		return nil, &capacity.FileError{Path: attrpath.Root("progress_file"), Err: err}
	}
	m.journal = j
	// Every line the file holds counts, whether or not the journal would reuse it: a line
	// is mirrored once, as it was written.
	eachLine(progressFile, func(line []byte) {
		var t capacity.JournalEntry
		if json.Unmarshal(line, &t) == nil {
			m.seenTrials[trialKey(t)] = true
		}
	})
	if progressLog != "" {
		if fi, err := os.Stat(progressLog); err == nil && !fi.Mode().IsRegular() {
			_ = j.Close()
			return nil, &capacity.FileError{Path: attrpath.Root("progress_log"), Err: fmt.Errorf("progress log %s is not a regular file (%s); give the path of a file the provider may create", progressLog, fi.Mode().Type())}
		}
		eachLine(progressLog, func(line []byte) { m.seenLines[string(line)] = true })
		m.log, err = os.OpenFile(progressLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			_ = j.Close()
			return nil, &capacity.FileError{Path: attrpath.Root("progress_log"), Err: fmt.Errorf("open progress log %s: %w; give a writable path", progressLog, err)}
		}
	}
	return m, nil
}

// eachLine calls fn with every line of the file at path; a file that cannot be read has none.
func eachLine(path string, fn func([]byte)) {
	if path == "" {
		return
	}
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		fn(sc.Bytes())
	}
}

// trialKey tells one finished trial from every other: the moment it finished and where.
func trialKey(t capacity.JournalEntry) string {
	return fmt.Sprintf("%s|%s|%s|%d|%d|%g|%g", t.Time.UTC().Format("2006-01-02T15:04:05.999999999"), t.Workload, t.Kind, t.Index, t.Concurrency, t.Rate, t.Speedup)
}

// Event mirrors one event, unless the local files already hold it.
func (m *Mirror) Event(e Event) {
	if e.Trial != nil {
		if k := trialKey(*e.Trial); !m.seenTrials[k] {
			m.seenTrials[k] = true
			if err := m.journal.Append(*e.Trial); err != nil {
				m.Line(fmt.Sprintf("cannot append to the progress file: %v", err))
			}
		}
	}
	if e.Line != "" {
		m.Line(e.Line)
	}
}

// Line writes one human line (the runner's, or the provider's own about the runner).
func (m *Mirror) Line(line string) {
	if m.seenLines[line] {
		return
	}
	m.seenLines[line] = true
	if m.log != nil {
		_, _ = fmt.Fprintln(m.log, strings.TrimRight(line, "\n")) // a full disk must not stop the measurement
	}
	if m.say != nil {
		m.say(line)
	}
}

// Complete marks the local journal's run complete, as a finished local run does.
func (m *Mirror) Complete() error { return m.journal.Complete() }

// Close closes the local files.
func (m *Mirror) Close() {
	_ = m.journal.Close()
	if m.log != nil {
		_ = m.log.Close()
	}
}
