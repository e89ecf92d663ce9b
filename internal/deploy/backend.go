package deploy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

// ErrNotFound is returned (wrapped) by a Backend when the container does not exist.
var ErrNotFound = errors.New("container not found")

// ErrContainerLeft means a failed launch could not remove its container either.
var ErrContainerLeft = errors.New("the failed container could not be removed")

// ErrClash means the container could not be created or started because something else on
// the engine host already holds what it asks for: its name, or its host port. Nothing of
// this apply is left; the fix is another name or port, not a wait.
var ErrClash = errors.New("clash on the engine host")

// Backend runs single containers somewhere: a Docker Engine (internal/deploy/docker). It
// knows nothing of engines; Launch and WaitReady supply that. Kubernetes is not a Backend:
// its unit is a Deployment of replicas rolled out by the cluster, launched by
// kubernetes.Cluster.Launch with the same steps.
type Backend interface {
	// Create creates (but does not start) the container, fetching the image if the engine
	// host lacks it. It returns the container id.
	Create(ctx context.Context, c Container) (string, error)
	Start(ctx context.Context, id string) error
	// Inspect finds a container by id or name; a missing one is ErrNotFound.
	Inspect(ctx context.Context, idOrName string) (Status, error)
	// Logs returns the last tail lines of the container's output, stdout and stderr merged.
	Logs(ctx context.Context, id string, tail int) (string, error)
	// Remove stops the container, giving it grace to exit, then removes it. A container that
	// is already gone is not an error.
	Remove(ctx context.Context, id string, grace time.Duration) error
	// Stop stops a running container, giving it grace to exit, and keeps it.
	Stop(ctx context.Context, id string, grace time.Duration) error
	// SetRestartPolicy changes the restart policy of an existing container in place.
	SetRestartPolicy(ctx context.Context, id, policy string) error
	// KernelVersion is the engine host's kernel, recorded with results.
	KernelVersion(ctx context.Context) (string, error)
}

// RecordKeeper is a Backend that keeps a container's launch record true after an in-place
// change. The record is first written at create (SpecLabel); Docker labels cannot change
// after that, so the Docker backend keeps the amended record in a file inside the container.
type RecordKeeper interface {
	// WriteRecord replaces the launch record of an existing container, running or not.
	WriteRecord(ctx context.Context, id string, rec LaunchRecord) error
	// ReadRecord returns the amended record; ok is false when there is none, and the
	// record in SpecLabel is current.
	ReadRecord(ctx context.Context, id string) (rec LaunchRecord, ok bool, err error)
}

// Status is what a backend knows about a container.
type Status struct {
	ID            string
	Name          string
	Image         string // the reference it was created from
	ImageDigest   string // registry digest when the image came from one, else the local image id
	State         string // created, running, restarting, exited, dead, ...
	Running       bool
	ExitCode      int
	RestartCount  int
	RestartPolicy string
	Labels        map[string]string
	// Endpoint is the base URL (scheme, host, port; no path) at which the engine answers from
	// where the provider runs; empty until the container is running with its port published.
	Endpoint string
	HostPort int
	// Unpublished is a container that publishes nothing (Placement.Unpublished): Endpoint is
	// then its address inside the container's network namespace, reached through the engine.
	Unpublished bool
	// APIKey is the key the engine was launched with, read back from the container so an
	// imported server can be asked about itself. In memory only: never stored or logged, and
	// a Secret so that formatting the Status (a test's %+v, a log line) cannot print it.
	APIKey Secret
}

// Secret is a credential held in memory. Every fmt verb and text encoding writes it as
// "[redacted]" (nothing when empty, so an unset key still shows as unset); Reveal is the one
// way to the value, for the request that needs it.
type Secret string

const redacted = "[redacted]"

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

// String redacts the value.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// Format redacts the value for every verb (%v, %+v, %#v, %s, %q, %x, ...).
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'q' || verb == 'v' && f.Flag('#') {
		fmt.Fprintf(f, "%q", s.String())
		return
	}
	_, _ = io.WriteString(f, s.String()) // a Formatter has no way to report a failed write
}

// MarshalText redacts the value, so JSON and other encoders cannot write it either.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// ExitedError is the container stopping or restarting before it was ready.
type ExitedError struct {
	ID       string
	State    string
	ExitCode int
	Restarts int
	Logs     string
}

func (e *ExitedError) Error() string {
	what := fmt.Sprintf("exited with code %d", e.ExitCode)
	if e.Restarts > 0 {
		what = fmt.Sprintf("restarted (%d restarts, last exit code %d)", e.Restarts, e.ExitCode)
	}
	return fmt.Sprintf("container %s %s before the engine was ready; fix the flags, model or image its log names and apply again. Last log lines:\n%s", shortID(e.ID), what, e.Logs)
}

// LogTail is how many log lines a failure carries: enough for a Python traceback.
const LogTail = 40

// Launch creates and starts the container and waits until the engine generates. Whatever
// fails after create, the container is removed, so nothing is left that state does not know.
func Launch(ctx context.Context, b Backend, c Container, r Readiness) (Status, engine.ServerInfo, error) {
	id, err := b.Create(ctx, c)
	if err != nil {
		return Status{}, engine.ServerInfo{}, fmt.Errorf("creating container %q: %w", c.Name, err)
	}
	err = checkImageBackend(ctx, b, id, c)
	var st Status
	var info engine.ServerInfo
	if err == nil {
		st, info, err = startAndWait(ctx, b, id, r)
	}
	if err == nil {
		return st, info, nil
	}
	// The caller's context may be the one that expired; cleanup gets its own.
	cleanupCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if rmErr := b.Remove(cleanupCtx, id, 0); rmErr != nil {
		return Status{}, engine.ServerInfo{}, errors.Join(err, fmt.Errorf("%w: remove it by hand (docker rm -f %s): %w", ErrContainerLeft, shortID(id), rmErr))
	}
	return Status{}, engine.ServerInfo{}, err
}

// checkImageBackend refuses, before it starts, a container whose image says it lacks the
// backend the launch computes on (ImageBackendsLabel, which Docker copies from the image onto
// the container): llama.cpp would otherwise start on the CPU or fail on --device with a
// message about devices, not images.
func checkImageBackend(ctx context.Context, b Backend, id string, c Container) error {
	if c.ImageBackend == "" {
		return nil
	}
	st, err := b.Inspect(ctx, id)
	if err != nil {
		return fmt.Errorf("inspecting container %s: %w", shortID(id), err)
	}
	have, labelled := st.Labels[ImageBackendsLabel]
	if !labelled || slices.Contains(strings.Split(have, ","), c.ImageBackend) {
		return nil
	}
	return fmt.Errorf("image %s holds the ggml backends %q (label %s), not %s, which accelerator needs: "+
		"build the Vulkan variant (scripts/build-llamacpp-image.sh --vulkan, llmserve/llamacpp-vulkan:<version>) and set image to it, or set accelerator = \"cpu\"",
		c.Image, have, ImageBackendsLabel, c.ImageBackend)
}

func startAndWait(ctx context.Context, b Backend, id string, r Readiness) (Status, engine.ServerInfo, error) {
	if err := b.Start(ctx, id); err != nil {
		return Status{}, engine.ServerInfo{}, fmt.Errorf("starting container %s: %w\nLast log lines:\n%s", shortID(id), err, tailLogs(ctx, b, id, r.Redact))
	}
	info, err := WaitReady(ctx, b, id, r)
	if err != nil {
		return Status{}, engine.ServerInfo{}, err
	}
	st, err := b.Inspect(ctx, id)
	if err != nil {
		return Status{}, engine.ServerInfo{}, fmt.Errorf("inspecting container %s after it became ready: %w", shortID(id), err)
	}
	return st, info, nil
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
