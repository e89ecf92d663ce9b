package runner

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
	var target container.InspectResponse
	err := docker.Bounded(ctx, 0, func(ctx context.Context) (err error) {
		target, err = d.Cli.ContainerInspect(ctx, job.Target)
		return err
	})
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
	return run(ctx, &dockerRunners{d: d, target: target.ID, network: out.Network}, job, out)
}

// dockerRunners is the Backend of the runner containers of one server container: each shares
// its network namespace, and is reached and removed through the engine.
type dockerRunners struct {
	d               *Docker
	target, network string
}

func (b *dockerRunners) process(c container.Summary) Process {
	return Process{ID: c.ID, Key: c.Labels[KeyLabel], Created: time.Unix(c.Created, 0), Running: c.State == "running",
		Name: "runner " + short(c.ID)}
}

// Runners lists the runner containers of the server container.
func (b *dockerRunners) Runners(ctx context.Context) ([]Process, error) {
	var cs []container.Summary
	err := docker.Bounded(ctx, 0, func(ctx context.Context) (err error) {
		cs, err = b.d.Cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
			filters.Arg("label", KindLabel+"=docker"), filters.Arg("label", TargetLabel+"="+b.target))})
		return err
	})
	if err != nil {
		return nil, b.d.wrap(err, "listing the runners of the server container %s", short(b.target))
	}
	out := make([]Process, len(cs))
	for i, c := range cs {
		out[i] = b.process(c)
	}
	return out, nil
}

// Start creates and starts a runner; a runner that cannot be started is removed again.
func (b *dockerRunners) Start(ctx context.Context, job Job, seed []byte) (Process, error) {
	d := b.d
	p, err := b.start(ctx, job, seed)
	if outOfDisk(err) {
		return p, &DiskFullError{Host: d.Host, Err: err}
	}
	return p, err
}

func (b *dockerRunners) start(ctx context.Context, job Job, seed []byte) (Process, error) {
	d := b.d
	img, err := d.image(ctx)
	if err != nil {
		return Process{}, err
	}
	spec, err := json.Marshal(job.Spec)
	if err != nil {
		return Process{}, fmt.Errorf("encoding the runner's spec: %w", err)
	}
	key := job.Spec.Key()
	labels := map[string]string{KindLabel: "docker", TargetLabel: b.target, KeyLabel: key, deploy.ManagedLabel: "true"}
	var created container.CreateResponse
	err = docker.Bounded(ctx, 0, func(ctx context.Context) (err error) {
		created, err = d.Cli.ContainerCreate(ctx,
			&container.Config{Image: img, Cmd: []string{"runner", SpecPath}, Labels: labels},
			&container.HostConfig{NetworkMode: container.NetworkMode(b.network)}, nil, nil, "")
		return err
	})
	if err != nil {
		return Process{}, d.wrap(err, "creating the runner container from image %s", img)
	}
	fail := func(err error) (Process, error) {
		rmCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if rmErr := d.remove(rmCtx, created.ID, 0); rmErr != nil {
			return Process{}, errors.Join(err, fmt.Errorf("the runner container %s is left: remove it with docker rm -f %s: %w", short(created.ID), short(created.ID), rmErr))
		}
		return Process{}, err
	}
	files := []deploy.File{{Path: SpecPath, Content: spec, Mode: 0o400}}
	if len(seed) > 0 {
		files = append(files, deploy.File{Path: JournalPath, Content: seed, Mode: 0o600})
	}
	if err := d.writeFiles(ctx, created.ID, files); err != nil {
		return fail(err)
	}
	if err := docker.Bounded(ctx, 0, func(ctx context.Context) error {
		return d.Cli.ContainerStart(ctx, created.ID, container.StartOptions{})
	}); err != nil {
		return fail(d.wrap(err, "starting the runner container (image %s)", img))
	}
	return Process{ID: created.ID, Key: key, Created: time.Now(), Running: true, Name: "runner " + short(created.ID),
		Place: fmt.Sprintf("on %s in the network of the server container %s", d.Host, short(b.target))}, nil
}

// Follow streams the runner's events to job.Event until it exits, then reads its end.
func (b *dockerRunners) Follow(ctx context.Context, p Process, job Job) (Result, error) {
	d, id := b.d, p.ID
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
			return Result{}, &DetachedError{Container: id, Host: d.Host, TimedOut: errors.Is(ctx.Err(), context.DeadlineExceeded)}
		}
		return Result{}, &EngineLostError{Container: id, Host: d.Host, Err: err}
	case err := <-lost:
		return Result{}, &EngineLostError{Container: id, Host: d.Host, Err: err}
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
	res, ok, err := readResult(ctx, b, p)
	if err != nil {
		return res, err
	}
	if !ok {
		return res, b.died(ctx, job, p, exit, stderr.String())
	}
	return res, nil
}

// Open copies one file out of the runner container.
func (b *dockerRunners) Open(ctx context.Context, p Process, f File) (io.ReadCloser, bool, error) {
	if f == RecordsArchive {
		rc, err := docker.OpenStream(ctx, 0, b.d.copyFrom(p.ID, RecordsPath))
		if cerrdefs.IsNotFound(err) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, b.d.wrap(err, "reading the records of runner %s", short(p.ID))
		}
		return rc, true, nil
	}
	path := ResultPath
	if f == JournalFile {
		path = JournalPath
	}
	raw, ok, err := b.d.readFile(ctx, p.ID, path)
	if err != nil || !ok {
		return nil, ok, err
	}
	return io.NopCloser(bytes.NewReader(raw)), true, nil
}

// Remove stops (after grace) and removes a runner container.
func (b *dockerRunners) Remove(ctx context.Context, p Process, grace time.Duration) error {
	return b.d.remove(ctx, p.ID, grace)
}

// The engine is asked whether it still answers every engineCheckEvery while a runner is
// followed; one silent for engineLostAfter is lost (an ssh link that hangs instead of
// failing would otherwise hold the apply forever). A lost engine is so reported within
// engineLostAfter + engineCheckEvery: 40 seconds.
var (
	engineCheckEvery = 10 * time.Second
	engineLostAfter  = 30 * time.Second
)

// EngineLostWithin is how soon a lost engine is reported while a runner is followed.
const EngineLostWithin = 40 * time.Second

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
func (b *dockerRunners) died(ctx context.Context, job Job, p Process, exit int64, stderr string) error {
	d, id := b.d, p.ID
	e := &DiedError{Container: id, Host: d.Host, ExitCode: exit, Stderr: strings.TrimSpace(stderr)}
	var ci container.InspectResponse
	if err := docker.Bounded(ctx, 0, func(ctx context.Context) (err error) { ci, err = d.Cli.ContainerInspect(ctx, id); return err }); err == nil && ci.State != nil {
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

// readFile copies one file out of a container; false when it does not exist. The copy is a
// stream (docker.OpenStream): it takes as long as the file needs while bytes flow.
func (d *Docker) readFile(ctx context.Context, id, p string) ([]byte, bool, error) {
	var data []byte
	err := docker.Stream(ctx, 0, d.copyFrom(id, p), func(r io.Reader) error {
		tr := tar.NewReader(r)
		if _, err := tr.Next(); err != nil {
			return err
		}
		var err error
		data, err = io.ReadAll(io.LimitReader(tr, maxFileBytes))
		return err
	})
	if cerrdefs.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, d.wrap(err, "reading %s from runner %s", p, short(id))
	}
	return data, true, nil
}

// copyFrom opens the tar stream of path p in container id.
func (d *Docker) copyFrom(id, p string) func(context.Context) (io.ReadCloser, error) {
	return func(ctx context.Context) (io.ReadCloser, error) {
		rc, _, err := d.Cli.CopyFromContainer(ctx, id, p)
		return rc, err
	}
}

// writeFiles copies files into a created container.
func (d *Docker) writeFiles(ctx context.Context, id string, files []deploy.File) error {
	archive, err := docker.Archive(files)
	if err != nil {
		return err
	}
	if err := docker.Bounded(ctx, docker.UploadTime(archive.Len()), func(ctx context.Context) error {
		return d.Cli.CopyToContainer(ctx, id, "/", archive, container.CopyToContainerOptions{})
	}); err != nil {
		return d.wrap(err, "writing the spec into runner %s", short(id))
	}
	return nil
}

// remove stops (after grace) and removes a runner; one already gone is fine.
func (d *Docker) remove(ctx context.Context, id string, grace time.Duration) error {
	secs := int(grace / time.Second)
	if err := docker.Bounded(ctx, grace, func(ctx context.Context) error {
		return d.Cli.ContainerStop(ctx, id, container.StopOptions{Timeout: &secs})
	}); err != nil && !cerrdefs.IsNotFound(err) {
		return d.wrap(err, "stopping runner %s", short(id))
	}
	if err := docker.Bounded(ctx, 0, func(ctx context.Context) error {
		return d.Cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	}); err != nil && !cerrdefs.IsNotFound(err) && !strings.Contains(err.Error(), "is already in progress") {
		return d.wrap(err, "removing runner %s", short(id))
	}
	return nil
}

// Remove removes every runner of the run with key on the server container target (the
// benchmark's destroy); a server that is gone has none left to find by it.
func (d *Docker) Remove(ctx context.Context, target, key string) error {
	f := filters.NewArgs(filters.Arg("label", KindLabel+"=docker"), filters.Arg("label", KeyLabel+"="+key))
	var ci container.InspectResponse
	err := docker.Bounded(ctx, 0, func(ctx context.Context) (err error) { ci, err = d.Cli.ContainerInspect(ctx, target); return err })
	switch {
	case err == nil:
		f.Add("label", TargetLabel+"="+ci.ID)
	case !cerrdefs.IsNotFound(err):
		return d.wrap(err, "inspecting the server container %q", target)
	}
	var cs []container.Summary
	err = docker.Bounded(ctx, 0, func(ctx context.Context) (err error) {
		cs, err = d.Cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
		return err
	})
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

// wrap says what failed on the runner's engine (docker.Wrap: an engine that does not answer
// within its bound, or cannot be reached, as such).
func (d *Docker) wrap(err error, format string, args ...any) error {
	return docker.Wrap(d.Host, err, format, args...)
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
