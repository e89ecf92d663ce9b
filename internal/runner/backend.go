package runner

// What every runner backend does, written once (run, follow, collect): find the runners of
// the server, attach to the one of this configuration, collect its result, resume it from
// its journal or start a new one, follow its events, copy its records back and remove it. A
// backend (Docker, Kubernetes) says only how its runner processes are started, reached and
// removed.

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Backend is one place runner processes live.
type Backend interface {
	// Runners lists the runners of the server the backend measures, of every key.
	Runners(ctx context.Context) ([]Process, error)
	// Start starts a runner of job that resumes from seed (a journal; nil for none). A
	// runner that cannot be started leaves nothing behind.
	Start(ctx context.Context, job Job, seed []byte) (Process, error)
	// Follow passes the runner's events to job.Event as they come and returns its Result
	// once it has one; an error when it never will (it died: the error says why and what
	// is kept) or when the apply stops following it (ctx ended: the runner goes on).
	Follow(ctx context.Context, p Process, job Job) (Result, error)
	// Open reads one of the runner's files; false when it has none (yet).
	Open(ctx context.Context, p Process, f File) (io.ReadCloser, bool, error)
	// Remove stops the runner (after grace) and removes it with everything that belongs to
	// it; one already gone is fine.
	Remove(ctx context.Context, p Process, grace time.Duration) error
}

// File is one of the files a runner leaves.
type File int

// The files a runner leaves.
const (
	ResultFile     File = iota // the Result, once the run ended
	JournalFile                // the run's journal, what a new runner resumes from
	RecordsArchive             // a tar of the records directory, its names under records/
)

// Process is one runner a backend started.
type Process struct {
	ID      string // the container's id, the Job's name
	Key     string // Spec.Key of its run
	Created time.Time
	// Running is a runner still measuring or on its way to; false once it ended.
	Running bool
	// Name names it in messages ("runner 0123456789ab", "runner Job llm/llmserve-runner-…"),
	// Place says where it was started.
	Name, Place string
}

// run runs job on b and waits for its end: a runner of the same run found there is attached
// to (running), collected (finished) or replaced by one that resumes from its journal
// (ended before its result); runners of the same server with another key are removed. out
// holds what the backend already knows of the outcome (the network).
func run(ctx context.Context, b Backend, job Job, out Outcome) (Outcome, error) {
	note := func(format string, args ...any) {
		if job.Note != nil {
			job.Note(time.Now().UTC().Format("15:04:05") + "  runner: " + fmt.Sprintf(format, args...))
		}
	}
	key := job.Spec.Key()
	all, err := b.Runners(ctx)
	if err != nil {
		return out, err
	}
	var same []Process
	for _, p := range all {
		if p.Key == key {
			same = append(same, p)
			continue
		}
		// One server, one measurement at a time: two would load it together and both be wrong.
		if err := b.Remove(ctx, p, stopGrace); err != nil {
			return out, err
		}
		note("stopped and removed %s of another configuration", p.Name)
	}
	sort.SliceStable(same, func(i, j int) bool { return same[i].Created.After(same[j].Created) })
	for _, p := range same[min(1, len(same)):] {
		if err := b.Remove(ctx, p, stopGrace); err != nil {
			return out, err
		}
	}
	seed := job.Seed
	var ended *Process
	if len(same) > 0 {
		p := same[0]
		out.Container = p.ID
		res, ok, err := readResult(ctx, b, p)
		if err != nil {
			return out, err
		}
		switch {
		case ok && res.Stopped == nil:
			note("collected the result of %s, which finished while no apply was following it", p.Name)
			return follow(ctx, b, job, out, p)
		case !ok && p.Running:
			note("attached to %s, measuring since %s", p.Name, p.Created.UTC().Format("15:04:05"))
			return follow(ctx, b, job, out, p)
		}
		// Died, or stopped part-way: its journal is where the next runner starts.
		journal, ok, err := readAll(ctx, b, p, JournalFile)
		if err != nil {
			return out, err
		}
		if ok && len(journal) > 0 {
			seed = journal
		}
		ended = &p
		note("%s ended before its result; a new runner resumes from its journal", p.Name)
	}
	p, err := b.Start(ctx, job, seed)
	if err != nil {
		var disk *DiskFullError
		if errors.As(err, &disk) && ended != nil {
			disk.Ended = ended.ID
		}
		return out, err
	}
	out.Container = p.ID
	// The ended runner goes only once its successor holds its journal.
	if ended != nil {
		if err := b.Remove(ctx, *ended, 0); err != nil {
			note("could not remove the ended %s: %v", ended.Name, err)
		}
	}
	note("started %s %s", p.Name, p.Place)
	return follow(ctx, b, job, out, p)
}

// follow waits for the runner's result and collects it: the records copied back and the
// runner removed, unless the run stopped with trials kept (its journal is where the next
// apply resumes).
func follow(ctx context.Context, b Backend, job Job, out Outcome, p Process) (Outcome, error) {
	res, err := b.Follow(ctx, p, job)
	if err != nil {
		return out, err
	}
	out.Result = res
	if res.Stopped != nil && res.Stopped.Kept > 0 {
		return out, nil
	}
	if res.Error == "" && res.Stopped == nil && job.RecordsDirectory != "" {
		if err := copyRecords(ctx, b, p, job.RecordsDirectory); err != nil {
			return out, fmt.Errorf("the run finished, but its records could not be copied back from %s (kept; apply again to collect them): %w", p.Name, err)
		}
	}
	return out, b.Remove(ctx, p, 0)
}

func copyRecords(ctx context.Context, b Backend, p Process, dir string) error {
	rc, ok, err := b.Open(ctx, p, RecordsArchive)
	if err != nil {
		return err
	}
	if !ok {
		return nil // no trial was measured: nothing recorded
	}
	defer rc.Close()
	return extractRecords(rc, dir)
}

// extractRecords writes the regular files of a records archive (its names start with the
// directory's own name) into dir, confined to it: the records' relative paths (records_file)
// are kept as the runner wrote them, a symbolic link found in dir where a record goes is
// replaced by the record, and a link to a directory outside dir is refused, never followed.
func extractRecords(r io.Reader, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("records_directory %s: %w", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("records_directory %s: %w", dir, err)
	}
	defer root.Close()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		_, rel, _ := strings.Cut(path.Clean(h.Name), "/")
		if rel == "" || !filepath.IsLocal(filepath.FromSlash(rel)) {
			continue
		}
		name := filepath.FromSlash(rel)
		if err := writeRecord(root, name, io.LimitReader(tr, maxFileBytes)); err != nil {
			return fmt.Errorf("records_directory %s: %s: %w", dir, rel, err)
		}
	}
}

// writeRecord writes one record below root. Whatever is at name is replaced, not written
// through: a symbolic link planted there is removed, and the file is created anew (O_EXCL).
func writeRecord(root *os.Root, name string, r io.Reader) error {
	if parent := filepath.Dir(name); parent != "." {
		if err := root.MkdirAll(parent, 0o755); err != nil {
			return err
		}
	}
	if err := root.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// maxFileBytes bounds a file read back from a runner: a journal of full trials is megabytes.
const maxFileBytes = 256 << 20

// readAll reads one of the runner's files whole, up to maxFileBytes.
func readAll(ctx context.Context, b Backend, p Process, f File) ([]byte, bool, error) {
	rc, ok, err := b.Open(ctx, p, f)
	if err != nil || !ok {
		return nil, false, err
	}
	defer rc.Close()
	raw, err := io.ReadAll(io.LimitReader(rc, maxFileBytes))
	if err != nil {
		return nil, false, fmt.Errorf("reading from %s: %w", p.Name, err)
	}
	return raw, true, nil
}

// readResult is the runner's Result, once it has one.
func readResult(ctx context.Context, b Backend, p Process) (Result, bool, error) {
	raw, ok, err := readAll(ctx, b, p, ResultFile)
	if err != nil || !ok {
		return Result{}, false, err
	}
	var res Result
	if err := json.Unmarshal(raw, &res); err != nil {
		return Result{}, false, fmt.Errorf("the result in %s does not parse: %w", p.Name, err)
	}
	return res, true, nil
}
