package runner

import (
	"archive/tar"
	"bufio"
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
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/docker"
)

// Labels on a runner container: what it is, whose network it shares, which run it makes.
const (
	KindLabel   = "dev.llmserve.runner"        // "docker"
	TargetLabel = "dev.llmserve.runner.target" // the server container's full id
	KeyLabel    = "dev.llmserve.runner.key"    // Spec.Key of the run
)

// stopGrace is how long a runner of a changed configuration gets to end its trial's
// requests before it is killed; its trials are not reused by the new configuration anyway.
const stopGrace = 5 * time.Second

// Docker runs benchmarks in runner containers on one Docker Engine.
type Docker struct {
	Cli  *client.Client
	Host string // the docker_host, for messages and the results document
	// Image is runner.docker.image; empty builds the runner image from Binary on the engine.
	Image  string
	Binary string
}

// Job is one benchmark to run next to the server container Target (id or name).
type Job struct {
	Target string
	Spec   Spec
	// Seed is a journal a new runner starts from (the local progress file's contents), for
	// when no runner of this run is left on the engine to resume from.
	Seed []byte
	// Event receives every event of the runner, as it arrives (Mirror.Event).
	Event func(Event)
	// Note receives the provider's own lines about the runner (attached, resumed, removed).
	Note func(string)
	// RecordsDirectory, when set, receives the runner's records once the run finished.
	RecordsDirectory string
}

// Outcome is a runner's end as the engine left it.
type Outcome struct {
	Container string // the runner container's id
	Network   string // "container:<server id>"
	Result    Result
}

// Run runs job in a runner container and waits for its end. A runner of the same run
// already on the engine is attached to (running), collected (finished) or resumed from its
// journal (died, stopped); runners of the same server with another key are removed. The run
// itself goes on when ctx ends (a *DetachedError); the next Run of the same job finds it.
func (d *Docker) Run(ctx context.Context, job Job) (Outcome, error) {
	note := func(s string) {
		if job.Note != nil {
			job.Note(time.Now().UTC().Format("15:04:05") + "  runner: " + s)
		}
	}
	target, err := d.Cli.ContainerInspect(ctx, job.Target)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return Outcome{}, fmt.Errorf("runner.docker.container: no container %q on %s; give the id or name of the server container (llmserve_inference_server.<name>.id)", job.Target, d.Host)
		}
		return Outcome{}, d.wrap(err, "inspecting the server container %q", job.Target)
	}
	if target.State == nil || !target.State.Running {
		return Outcome{}, fmt.Errorf("runner.docker.container: the server container %s is not running (%s); the runner shares its network, so start it first", short(target.ID), stateOf(target))
	}
	out := Outcome{Network: "container:" + target.ID}
	key := job.Spec.Key()

	same, err := d.runners(ctx, target.ID, key, note)
	if err != nil {
		return out, err
	}
	var seed []byte
	var old string
	if len(same) > 0 {
		c := same[0]
		out.Container = c.ID
		if c.State == "running" {
			note(fmt.Sprintf("attached to runner %s, measuring since %s", short(c.ID), time.Unix(c.Created, 0).UTC().Format("15:04:05")))
			return d.follow(ctx, job, out)
		}
		res, ok, err := d.readResult(ctx, c.ID)
		if err != nil {
			return out, err
		}
		if ok && res.Stopped == nil {
			note(fmt.Sprintf("collected the result of runner %s, which finished while no apply was following it", short(c.ID)))
			return d.follow(ctx, job, out)
		}
		// Died, or stopped part-way: its journal is where the next runner starts.
		seed, _, err = d.readFile(ctx, c.ID, JournalPath)
		if err != nil {
			return out, err
		}
		old = c.ID
		note(fmt.Sprintf("runner %s ended before its result; a new runner resumes from its journal", short(c.ID)))
	}
	if seed == nil {
		seed = job.Seed
	}
	id, err := d.start(ctx, job, out.Network, target.ID, key, seed)
	if err != nil {
		if outOfDisk(err) {
			return out, &DiskFullError{Host: d.Host, Ended: old, Err: err}
		}
		return out, err
	}
	out.Container = id
	if old != "" {
		if err := d.remove(ctx, old, 0); err != nil {
			note(fmt.Sprintf("could not remove the ended runner %s: %v", short(old), err))
		}
	}
	note(fmt.Sprintf("started runner %s on %s in the network of the server container %s", short(id), d.Host, short(target.ID)))
	return d.follow(ctx, job, out)
}

// runners lists the runners of the server, removes those of other keys and returns those
// of this key, newest first.
func (d *Docker) runners(ctx context.Context, target, key string, note func(string)) ([]container.Summary, error) {
	cs, err := d.Cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", KindLabel+"=docker"), filters.Arg("label", TargetLabel+"="+target))})
	if err != nil {
		return nil, d.wrap(err, "listing the runners of the server container %s", short(target))
	}
	var same []container.Summary
	for _, c := range cs {
		if c.Labels[KeyLabel] == key {
			same = append(same, c)
			continue
		}
		// One server, one measurement at a time: two would load it together and both be wrong.
		if err := d.remove(ctx, c.ID, stopGrace); err != nil {
			return nil, err
		}
		note(fmt.Sprintf("stopped and removed runner %s of another configuration", short(c.ID)))
	}
	sort.Slice(same, func(i, j int) bool { return same[i].Created > same[j].Created })
	for _, c := range same[min(1, len(same)):] {
		if err := d.remove(ctx, c.ID, stopGrace); err != nil {
			return nil, err
		}
	}
	return same[:min(1, len(same))], nil
}

// start creates and starts a runner; a runner that cannot be started is removed again.
func (d *Docker) start(ctx context.Context, job Job, network, target, key string, seed []byte) (string, error) {
	img, err := d.image(ctx)
	if err != nil {
		return "", err
	}
	spec, err := json.Marshal(job.Spec)
	if err != nil {
		return "", fmt.Errorf("encoding the runner's spec: %w", err)
	}
	labels := map[string]string{KindLabel: "docker", TargetLabel: target, KeyLabel: key, deploy.ManagedLabel: "true"}
	created, err := d.Cli.ContainerCreate(ctx,
		&container.Config{Image: img, Cmd: []string{"runner", SpecPath}, Labels: labels},
		&container.HostConfig{NetworkMode: container.NetworkMode(network)}, nil, nil, "")
	if err != nil {
		return "", d.wrap(err, "creating the runner container from image %s", img)
	}
	fail := func(err error) (string, error) {
		rmCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if rmErr := d.remove(rmCtx, created.ID, 0); rmErr != nil {
			return "", errors.Join(err, fmt.Errorf("the runner container %s is left: remove it with docker rm -f %s: %w", short(created.ID), short(created.ID), rmErr))
		}
		return "", err
	}
	files := []deploy.File{{Path: SpecPath, Content: spec, Mode: 0o400}}
	if len(seed) > 0 {
		files = append(files, deploy.File{Path: JournalPath, Content: seed, Mode: 0o600})
	}
	if err := d.writeFiles(ctx, created.ID, files); err != nil {
		return fail(err)
	}
	if err := d.Cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return fail(d.wrap(err, "starting the runner container (image %s)", img))
	}
	return created.ID, nil
}

// follow streams the runner's events to job.Event until it exits, then reads its end.
func (d *Docker) follow(ctx context.Context, job Job, out Outcome) (Outcome, error) {
	id := out.Container
	logCtx, stopLogs := context.WithCancel(ctx)
	defer stopLogs()
	var stderr tailBuffer
	logsDone := make(chan error, 1)
	go func() { logsDone <- d.stream(logCtx, id, job.Event, &stderr) }()

	lost := make(chan error, 1)
	go d.watch(logCtx, lost)
	statusCh, errCh := d.Cli.ContainerWait(ctx, id, container.WaitConditionNotRunning)
	var exit int64
	select {
	case st := <-statusCh:
		exit = st.StatusCode
	case err := <-errCh:
		if ctx.Err() != nil {
			return out, &DetachedError{Container: id, Host: d.Host, TimedOut: errors.Is(ctx.Err(), context.DeadlineExceeded)}
		}
		return out, &EngineLostError{Container: id, Host: d.Host, Err: err}
	case err := <-lost:
		return out, &EngineLostError{Container: id, Host: d.Host, Err: err}
	}
	// The log stream ends with the container; the last events may still be on their way.
	select {
	case err := <-logsDone:
		if err != nil && job.Note != nil {
			// The files here miss lines; the result, read from the container, does not.
			job.Note(fmt.Sprintf("runner: the log stream of runner %s broke (%v); progress lines may be missing here, the result is complete", short(id), err))
		}
	case <-time.After(5 * time.Second):
		stopLogs()
	}

	res, ok, err := d.readResult(ctx, id)
	if err != nil {
		return out, err
	}
	if !ok {
		return out, d.died(ctx, job, id, exit, stderr.String())
	}
	out.Result = res
	if res.Stopped != nil && res.Stopped.Kept > 0 {
		return out, nil // kept: its journal is where the next apply resumes
	}
	if res.Error == "" && res.Stopped == nil && job.RecordsDirectory != "" {
		if err := d.copyRecords(ctx, id, job.RecordsDirectory); err != nil {
			return out, fmt.Errorf("the run finished, but its records could not be copied back from runner %s (kept; apply again to collect them): %w", short(id), err)
		}
	}
	if err := d.remove(ctx, id, 0); err != nil {
		return out, err
	}
	return out, nil
}

// The engine is asked whether it still answers every engineCheckEvery while a runner is
// followed; one silent for engineLostAfter is lost (an ssh link that hangs instead of
// failing would otherwise hold the apply forever). A lost engine is so reported within
// engineLostAfter + engineCheckEvery: 40 seconds.
var (
	engineCheckEvery = 10 * time.Second
	engineLostAfter  = 30 * time.Second
)

// watch pings the engine until ctx ends, and sends the error once it has failed for
// engineLostAfter.
func (d *Docker) watch(ctx context.Context, lost chan<- error) {
	t := time.NewTicker(engineCheckEvery)
	defer t.Stop()
	var failingSince time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, engineCheckEvery)
		_, err := d.Cli.Ping(pctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			failingSince = time.Time{}
			continue
		case failingSince.IsZero():
			failingSince = time.Now()
		}
		if time.Since(failingSince) >= engineLostAfter {
			lost <- fmt.Errorf("it has not answered for %s: %w", engineLostAfter, err)
			return
		}
	}
}

// outOfDisk says whether the engine refused for lack of disk on its host.
func outOfDisk(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "no space left on device")
}

// died says what happened to a runner that ended without a result, and keeps it only when
// its journal holds trials to resume from.
func (d *Docker) died(ctx context.Context, job Job, id string, exit int64, stderr string) error {
	e := &DiedError{Container: id, Host: d.Host, ExitCode: exit, Stderr: strings.TrimSpace(stderr)}
	if ci, err := d.Cli.ContainerInspect(ctx, id); err == nil && ci.State != nil {
		e.OOMKilled = ci.State.OOMKilled
		if e.Stderr == "" {
			e.Stderr = strings.TrimSpace(ci.State.Error)
		}
	}
	if journal, ok, err := d.readFile(ctx, id, JournalPath); err == nil && ok {
		e.Kept = keptTrials(journal, job.Spec.Config)
	}
	if e.Kept == 0 {
		e.Removed = d.remove(ctx, id, 0) == nil
	}
	return e
}

// keptTrials counts the trials of the run's unfinished journal a new runner would reuse.
func keptTrials(journal []byte, cfg capacity.Config) int {
	f, err := os.CreateTemp("", "llmserve-runner-journal-*.jsonl")
	if err != nil {
		return 0
	}
	defer os.Remove(f.Name())
	_, err = f.Write(journal)
	_ = f.Close()
	if err != nil {
		return 0
	}
	j, err := capacity.OpenJournal(f.Name(), cfg)
	if err != nil {
		return 0
	}
	defer j.Close()
	return len(j.History())
}

// stream follows the runner's output: events from stdout, the last of stderr kept.
func (d *Docker) stream(ctx context.Context, id string, event func(Event), stderr io.Writer) error {
	rc, err := d.Cli.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
	if err != nil {
		return err
	}
	defer rc.Close()
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, stderr, rc)
		_ = pw.CloseWithError(err)
	}()
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), 16<<20) // a trial with full metrics is tens of kilobytes
	for sc.Scan() {
		var e Event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if event != nil {
			event(e)
		}
	}
	_ = pr.Close()
	return sc.Err()
}

func (d *Docker) readResult(ctx context.Context, id string) (Result, bool, error) {
	raw, ok, err := d.readFile(ctx, id, ResultPath)
	if err != nil || !ok {
		return Result{}, false, err
	}
	var res Result
	if err := json.Unmarshal(raw, &res); err != nil {
		return Result{}, false, fmt.Errorf("the result in runner %s does not parse: %w", short(id), err)
	}
	return res, true, nil
}

// maxFileBytes bounds a file read back from a runner: a journal of full trials is megabytes.
const maxFileBytes = 256 << 20

// readFile copies one file out of a container; false when it does not exist.
func (d *Docker) readFile(ctx context.Context, id, p string) ([]byte, bool, error) {
	rc, _, err := d.Cli.CopyFromContainer(ctx, id, p)
	if cerrdefs.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, d.wrap(err, "reading %s from runner %s", p, short(id))
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	if _, err := tr.Next(); err != nil {
		return nil, false, fmt.Errorf("reading %s from runner %s: %w", p, short(id), err)
	}
	data, err := io.ReadAll(io.LimitReader(tr, maxFileBytes))
	if err != nil {
		return nil, false, fmt.Errorf("reading %s from runner %s: %w", p, short(id), err)
	}
	return data, true, nil
}

// copyRecords copies the runner's records directory into dir (records_directory).
func (d *Docker) copyRecords(ctx context.Context, id, dir string) error {
	rc, _, err := d.Cli.CopyFromContainer(ctx, id, RecordsPath)
	if cerrdefs.IsNotFound(err) {
		return nil // no trial was measured: nothing recorded
	}
	if err != nil {
		return d.wrap(err, "reading the records of runner %s", short(id))
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

// writeFiles copies files into a created container.
func (d *Docker) writeFiles(ctx context.Context, id string, files []deploy.File) error {
	archive, err := docker.Archive(files)
	if err != nil {
		return err
	}
	if err := d.Cli.CopyToContainer(ctx, id, "/", archive, container.CopyToContainerOptions{}); err != nil {
		return d.wrap(err, "writing the spec into runner %s", short(id))
	}
	return nil
}

// remove stops (after grace) and removes a runner; one already gone is fine.
func (d *Docker) remove(ctx context.Context, id string, grace time.Duration) error {
	secs := int(grace / time.Second)
	if err := d.Cli.ContainerStop(ctx, id, container.StopOptions{Timeout: &secs}); err != nil && !cerrdefs.IsNotFound(err) {
		return d.wrap(err, "stopping runner %s", short(id))
	}
	if err := d.Cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) && !strings.Contains(err.Error(), "is already in progress") {
		return d.wrap(err, "removing runner %s", short(id))
	}
	return nil
}

// Remove removes every runner of the run with key on the server container target (the
// benchmark's destroy); a server that is gone has none left to find by it.
func (d *Docker) Remove(ctx context.Context, target, key string) error {
	f := filters.NewArgs(filters.Arg("label", KindLabel+"=docker"), filters.Arg("label", KeyLabel+"="+key))
	if ci, err := d.Cli.ContainerInspect(ctx, target); err == nil {
		f.Add("label", TargetLabel+"="+ci.ID)
	}
	cs, err := d.Cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return d.wrap(err, "listing the benchmark's runners")
	}
	for _, c := range cs {
		if err := d.remove(ctx, c.ID, stopGrace); err != nil {
			return err
		}
	}
	return nil
}

func (d *Docker) wrap(err error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if client.IsErrConnectionFailed(err) {
		return fmt.Errorf("%s: cannot reach the Docker Engine at %s: %w", msg, d.Host, err)
	}
	return fmt.Errorf("%s on %s: %w", msg, d.Host, err)
}

func stateOf(ci container.InspectResponse) string {
	if ci.State == nil {
		return "no state"
	}
	return string(ci.State.Status)
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// tailBuffer keeps the last 4 KiB written to it (a runner's stderr, for its fault).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - 4096; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
