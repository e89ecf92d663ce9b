package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/docker/go-connections/nat"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

var _ deploy.Backend = (*Backend)(nil)

// Backend is a deploy.Backend on one Docker Engine.
type Backend struct {
	cli     *client.Client
	hostURL string // the docker_host; its host name is where a remote engine's ports are reached
}

// NewBackend wraps an existing client; host is the docker_host it was built for.
func NewBackend(cli *client.Client, host string) *Backend {
	return &Backend{cli: cli, hostURL: host}
}

// Client is the underlying Engine API client, for tests and sweepers.
func (b *Backend) Client() *client.Client { return b.cli }

// DefaultCallTimeout bounds one Engine API call that returns as soon as the engine has done
// a bookkeeping step (inspect, list, create, start, update, info, remove, a file copied in
// or out); a stop adds its grace period. Without it an engine that accepts connections and
// never answers (a tarpit, a hung daemon) would hold plan and apply for as long as Terraform
// lets them run. A stream (an image pull's or build's progress, a file read back) is bound
// by its silence instead: no byte for the same time ends it. deploy.CallTimeoutEnv replaces
// it.
const DefaultCallTimeout = 2 * time.Minute

// callTimeout is DefaultCallTimeout; tests shorten it.
var callTimeout = DefaultCallTimeout

// CallTimeout is the bound of one Engine API call: DefaultCallTimeout, or what
// deploy.CallTimeoutEnv says.
func CallTimeout() time.Duration { return deploy.CallTimeout(callTimeout) }

// errNoAnswer is the cause of a call's own deadline, told apart from the caller's.
var errNoAnswer = errors.New("no answer from the Docker Engine")

// Bounded runs one Engine API call under its own deadline (CallTimeout plus extra) and says
// so when that deadline, not the caller's, ended it (Wrap then names the engine and the
// call).
func Bounded(ctx context.Context, extra time.Duration, call func(context.Context) error) error {
	bound := CallTimeout() + extra
	cctx, cancel := context.WithTimeoutCause(ctx, bound, errNoAnswer)
	defer cancel()
	err := call(cctx)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(cctx), errNoAnswer) {
		return fmt.Errorf("%w within %s", errNoAnswer, bound)
	}
	return err
}

func bounded(ctx context.Context, extra time.Duration, call func(context.Context) error) error {
	return Bounded(ctx, extra, call)
}

// Stream runs one Engine API call that answers with a stream (an image pull's or build's
// progress, a file copied out of a container) and consumes it (OpenStream).
func Stream(ctx context.Context, extra time.Duration, open func(context.Context) (io.ReadCloser, error), consume func(io.Reader) error) error {
	rc, err := OpenStream(ctx, extra, open)
	if err != nil {
		return err
	}
	err = consume(rc)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	return err
}

// OpenStream runs one Engine API call that answers with a stream: open must answer within
// CallTimeout plus extra (a request body to upload), and the stream it returned then ends
// once the engine has sent nothing for CallTimeout, its reads failing as an engine that does
// not answer (Wrap). A stream that keeps flowing may take as long as it needs. Close stops
// the watch.
func OpenStream(ctx context.Context, extra time.Duration, open func(context.Context) (io.ReadCloser, error)) (io.ReadCloser, error) {
	bound := CallTimeout()
	sctx, cancel := context.WithCancelCause(ctx)
	silent := time.AfterFunc(bound+extra, func() { cancel(errNoAnswer) })
	silence := func(err error) error {
		if err != nil && err != io.EOF && ctx.Err() == nil && errors.Is(context.Cause(sctx), errNoAnswer) {
			return fmt.Errorf("%w within %s", errNoAnswer, bound)
		}
		return err
	}
	rc, err := open(sctx)
	if err != nil {
		silent.Stop()
		cancel(nil)
		return nil, silence(err)
	}
	silent.Reset(bound)
	return &watchedStream{rc: rc, rearm: func() { silent.Reset(bound) }, silence: silence,
		stop: func() { silent.Stop(); cancel(nil) }}, nil
}

// watchedStream rearms its silence bound on every read that brought bytes.
type watchedStream struct {
	rc      io.ReadCloser
	rearm   func()
	silence func(error) error
	stop    func()
}

func (s *watchedStream) Read(p []byte) (int, error) {
	n, err := s.rc.Read(p)
	if n > 0 {
		s.rearm()
	}
	return n, s.silence(err)
}

func (s *watchedStream) Close() error {
	err := s.rc.Close()
	s.stop()
	return err
}

// Wrap says what failed on the Docker Engine at host: what was being done (format, args),
// and an engine that did not answer within its bound, or could not be reached, as such.
func Wrap(host string, err error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if errors.Is(err, errNoAnswer) {
		return fmt.Errorf("%s: %w at %s; the engine accepts connections but does not respond: check the daemon and docker_host", msg, err, host)
	}
	if client.IsErrConnectionFailed(err) {
		return fmt.Errorf("%s: cannot reach the Docker Engine at %s (%s): %w", msg, host, hostHint(host), err)
	}
	return fmt.Errorf("%s on %s: %w", msg, host, err)
}

func (b *Backend) wrap(err error, format string, args ...any) error {
	if errors.Is(err, errNoAnswer) || client.IsErrConnectionFailed(err) {
		return Wrap(b.hostURL, err, format, args...)
	}
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), err)
}

// Create implements deploy.Backend.
func (b *Backend) Create(ctx context.Context, c deploy.Container) (string, error) {
	if err := b.ensureImage(ctx, c.Image); err != nil {
		return "", err
	}
	cfg, hc, err := toDocker(c)
	if err != nil {
		return "", err
	}
	var resp container.CreateResponse
	err = bounded(ctx, 0, func(ctx context.Context) (err error) {
		resp, err = b.cli.ContainerCreate(ctx, cfg, hc, nil, nil, c.Name)
		return err
	})
	if err != nil {
		if strings.Contains(err.Error(), "is already in use") {
			return "", fmt.Errorf("%w: container name %q is taken on %s; choose another name, or import the existing container (terraform import) or remove it (docker rm -f %s): %w", deploy.ErrClash, c.Name, b.hostURL, c.Name, err)
		}
		return "", b.wrap(err, "creating container %q", c.Name)
	}
	if len(c.Files) > 0 {
		if err := b.writeFiles(ctx, resp.ID, c.Files); err != nil {
			// Launch removes only what Create returned; nothing of this container may stay.
			rmCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if rmErr := b.Remove(rmCtx, resp.ID, 0); rmErr != nil {
				return "", errors.Join(err, fmt.Errorf("%w: remove it by hand (docker rm -f %s): %w", deploy.ErrContainerLeft, shortID(resp.ID), rmErr))
			}
			return "", err
		}
	}
	return resp.ID, nil
}

// ensureImage pulls the image only when the engine does not have it, so a locally built or
// preloaded image (air-gapped hosts) is used as is.
func (b *Backend) ensureImage(ctx context.Context, ref string) error {
	if err := bounded(ctx, 0, func(ctx context.Context) error { _, err := b.cli.ImageInspect(ctx, ref); return err }); err == nil {
		return nil
	} else if !cerrdefs.IsNotFound(err) {
		return b.wrap(err, "inspecting image %q", ref)
	}
	// The pull only completes when its progress stream is drained; errors arrive in-stream.
	var tail bytes.Buffer
	opened := false
	err := Stream(ctx, 0, func(ctx context.Context) (io.ReadCloser, error) {
		rc, err := b.cli.ImagePull(ctx, ref, image.PullOptions{})
		opened = err == nil
		return rc, err
	}, func(r io.Reader) error { _, err := io.Copy(&tail, r); return err })
	switch {
	case err != nil && !opened:
		return b.wrap(err, "image %q is not on the engine and pulling it failed; load it (docker load) or check the registry", ref)
	case err != nil:
		return b.wrap(err, "pulling image %q", ref)
	}
	if bytes.Contains(tail.Bytes(), []byte(`"error"`)) {
		return fmt.Errorf("pulling image %q failed: %.500s", ref, lastLine(tail.String()))
	}
	return nil
}

func toDocker(c deploy.Container) (*container.Config, *container.HostConfig, error) {
	port, err := nat.NewPort("tcp", strconv.Itoa(c.Port))
	if err != nil {
		return nil, nil, fmt.Errorf("port %d: %w", c.Port, err)
	}
	env := make([]string, 0, len(c.Env))
	for k, v := range c.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env) // stable order: the same config always creates the same container
	cfg := &container.Config{
		Image:        c.Image,
		Entrypoint:   c.Entrypoint,
		Cmd:          c.Args,
		Env:          env,
		Labels:       c.Labels,
		ExposedPorts: nat.PortSet{port: struct{}{}},
	}
	if c.StopTimeoutSeconds > 0 {
		t := c.StopTimeoutSeconds
		cfg.StopTimeout = &t
	}
	hc := &container.HostConfig{
		GroupAdd:      c.GroupAdd,
		ShmSize:       c.ShmSizeBytes,
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyMode(orDefault(c.RestartPolicy, "no"))},
	}
	switch {
	case c.HostNetwork:
		hc.NetworkMode = "host"
	case c.Unpublished:
		// Nothing published: the engine's port is reached from its network namespace only.
	default:
		hp := ""
		if c.HostPort != 0 {
			hp = strconv.Itoa(c.HostPort)
		}
		hc.PortBindings = nat.PortMap{port: {{HostIP: c.BindAddress, HostPort: hp}}}
	}
	if c.IPCHost {
		hc.IpcMode = container.IPCModeHost
	}
	for _, d := range c.Devices {
		hc.Devices = append(hc.Devices, container.DeviceMapping{PathOnHost: d, PathInContainer: d, CgroupPermissions: "rwm"})
	}
	if c.GPURequest != nil {
		req := container.DeviceRequest{Driver: "nvidia", Capabilities: [][]string{{"gpu"}}}
		if len(c.GPURequest) == 0 {
			req.Count = -1 // all GPUs
		} else {
			req.DeviceIDs = c.GPURequest
		}
		hc.DeviceRequests = []container.DeviceRequest{req}
	}
	for _, m := range c.Mounts {
		t := mount.TypeBind
		if m.Type == "volume" {
			t = mount.TypeVolume
		}
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: t, Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly})
	}
	return cfg, hc, nil
}

// ToDocker exposes the translation for tests that assert the Engine API objects without
// creating a container (device nodes and GPUs this host does not have).
func ToDocker(c deploy.Container) (*container.Config, *container.HostConfig, error) {
	return toDocker(c)
}

// Start implements deploy.Backend.
func (b *Backend) Start(ctx context.Context, id string) error {
	if err := bounded(ctx, 0, func(ctx context.Context) error { return b.cli.ContainerStart(ctx, id, container.StartOptions{}) }); err != nil {
		// Docker's words for a host port another process or container holds.
		if m := err.Error(); strings.Contains(m, "port is already allocated") || strings.Contains(m, "address already in use") {
			return fmt.Errorf("%w: the host port is taken on %s; choose another host_port (or leave it unset for a free one): %w", deploy.ErrClash, b.hostURL, err)
		}
		return b.wrap(err, "starting container %s", id)
	}
	return nil
}

// Inspect implements deploy.Backend.
func (b *Backend) Inspect(ctx context.Context, idOrName string) (deploy.Status, error) {
	var ci container.InspectResponse
	err := bounded(ctx, 0, func(ctx context.Context) (err error) {
		ci, err = b.cli.ContainerInspect(ctx, idOrName)
		return err
	})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return deploy.Status{}, fmt.Errorf("container %q: %w", idOrName, deploy.ErrNotFound)
		}
		return deploy.Status{}, b.wrap(err, "inspecting container %q", idOrName)
	}
	st := deploy.Status{
		ID:    ci.ID,
		Name:  strings.TrimPrefix(ci.Name, "/"),
		Image: ci.Config.Image,
	}
	if ci.Config != nil {
		st.Labels = ci.Config.Labels
	}
	if ci.State != nil {
		st.State, st.Running, st.ExitCode = string(ci.State.Status), ci.State.Running, ci.State.ExitCode
	}
	st.RestartCount = ci.RestartCount
	if ci.HostConfig != nil {
		st.RestartPolicy = string(ci.HostConfig.RestartPolicy.Name)
	}
	st.ImageDigest = b.imageDigest(ctx, ci.Image, ci.Config.Image)
	if ci.Config != nil {
		if rec, err := deploy.ParseLaunchRecord(ci.Config.Labels[deploy.SpecLabel]); err == nil {
			st.APIKey = deploy.Secret(engine.LaunchAPIKey(rec.Spec.Engine, envMap(ci.Config.Env), ci.Args))
		}
	}
	hostIP, hostPort := publishedPort(ci)
	st.HostPort = hostPort
	if st.Running && hostPort != 0 {
		st.Endpoint = EndpointURL(b.hostURL, hostIP, hostPort)
	}
	if rec, err := deploy.ParseLaunchRecord(ci.Config.Labels[deploy.SpecLabel]); err == nil && rec.Placement.Unpublished && !rec.Placement.HostNetwork {
		// Its address inside its own network namespace, where a runner sharing it reaches it.
		st.Unpublished, st.HostPort, st.Endpoint = true, 0, ""
		if st.Running && rec.Spec.Port > 0 {
			st.Endpoint = "http://" + net.JoinHostPort(deploy.UnpublishedAddress, strconv.Itoa(rec.Spec.Port))
		}
	}
	return st, nil
}

// publishedPort is where the engine's port is reachable on the engine host: the published
// binding, or the port itself under host networking.
func publishedPort(ci container.InspectResponse) (string, int) {
	if ci.HostConfig != nil && ci.HostConfig.NetworkMode.IsHost() {
		// The image may expose ports of its own; the engine's is the one it was launched on.
		if ci.Config != nil {
			if rec, err := deploy.ParseLaunchRecord(ci.Config.Labels[deploy.SpecLabel]); err == nil && rec.Spec.Port > 0 {
				return "", rec.Spec.Port
			}
			if len(ci.Config.ExposedPorts) == 1 {
				for p := range ci.Config.ExposedPorts {
					return "", p.Int()
				}
			}
		}
		return "", 0
	}
	if ci.NetworkSettings == nil {
		return "", 0
	}
	for _, bindings := range ci.NetworkSettings.Ports {
		for _, pb := range bindings {
			if n, err := strconv.Atoi(pb.HostPort); err == nil && n > 0 {
				return pb.HostIP, n
			}
		}
	}
	return "", 0
}

// EndpointURL is the base URL at which an engine published on bindIP:port of the engine host
// at dockerHost answers from where the provider runs. Plans compute it before the container
// exists and Inspect after, with this one function, so the two cannot disagree.
func EndpointURL(dockerHost, bindIP string, port int) string {
	return "http://" + net.JoinHostPort(reachableHost(endpointHost(dockerHost), bindIP), strconv.Itoa(port))
}

func reachableHost(remote, bindIP string) string {
	wildcard := bindIP == "" || bindIP == "0.0.0.0" || bindIP == "::"
	switch {
	case remote != "" && (wildcard || net.ParseIP(bindIP).IsLoopback()):
		// A remote engine's loopback is not ours; its name is the best address we have.
		return remote
	case wildcard:
		return "127.0.0.1"
	default:
		return bindIP
	}
}

// imageDigest prefers the registry digest (what a pull by digest pins) and falls back to the
// local image id for images built or loaded on the engine, which have none.
func (b *Backend) imageDigest(ctx context.Context, imageID, ref string) string {
	var ii image.InspectResponse
	err := bounded(ctx, 0, func(ctx context.Context) (err error) {
		ii, err = b.cli.ImageInspect(ctx, imageID)
		return err
	})
	if err != nil {
		return imageID
	}
	repo := ref
	if i := strings.LastIndex(repo, "@"); i >= 0 {
		repo = repo[:i]
	} else if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	for _, d := range ii.RepoDigests {
		if name, digest, ok := strings.Cut(d, "@"); ok && (name == repo || strings.HasSuffix(name, "/"+repo)) {
			return digest
		}
	}
	if len(ii.RepoDigests) > 0 {
		_, digest, _ := strings.Cut(ii.RepoDigests[0], "@")
		return digest
	}
	return ii.ID
}

// Logs implements deploy.Backend.
func (b *Backend) Logs(ctx context.Context, id string, tail int) (string, error) {
	var out bytes.Buffer
	err := bounded(ctx, 0, func(ctx context.Context) error {
		rc, err := b.cli.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: strconv.Itoa(tail)})
		if err != nil {
			return err
		}
		defer rc.Close()
		// Containers run without a TTY, so the stream is multiplexed; merge both halves.
		_, err = stdcopy.StdCopy(&out, &out, rc)
		return err
	})
	if err != nil {
		return out.String(), b.wrap(err, "reading logs of container %s", id)
	}
	return strings.TrimRight(out.String(), "\n"), nil
}

// Remove implements deploy.Backend.
func (b *Backend) Remove(ctx context.Context, id string, grace time.Duration) error {
	secs := int(grace / time.Second)
	err := bounded(ctx, grace, func(ctx context.Context) error {
		return b.cli.ContainerStop(ctx, id, container.StopOptions{Timeout: &secs})
	})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return b.wrap(err, "stopping container %s", id)
	}
	err = bounded(ctx, 0, func(ctx context.Context) error {
		return b.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	})
	switch {
	case isRemovalInProgress(err):
		// Another caller is removing it: done only once it is gone, or a check right after
		// (CheckDestroy, a create of the same name) would still find it.
		return b.waitGone(ctx, id)
	case err != nil && !cerrdefs.IsNotFound(err):
		return b.wrap(err, "removing container %s", id)
	}
	return nil
}

func isRemovalInProgress(err error) bool {
	return err != nil && strings.Contains(err.Error(), "is already in progress")
}

// removalWait bounds the wait for a removal someone else started; the engine removes a
// stopped container in well under a second.
var removalWait = time.Minute

// waitGone polls until container id no longer exists, for at most removalWait.
func (b *Backend) waitGone(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, removalWait)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := bounded(ctx, 0, func(ctx context.Context) error { _, err := b.cli.ContainerInspect(ctx, id); return err })
		switch {
		case cerrdefs.IsNotFound(err):
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("container %s was still being removed after %s (%w); check it with docker ps -a and remove it with docker rm -f %s", shortID(id), removalWait, ctx.Err(), shortID(id))
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// Stop implements deploy.Backend.
func (b *Backend) Stop(ctx context.Context, id string, grace time.Duration) error {
	secs := int(grace / time.Second)
	if err := bounded(ctx, grace, func(ctx context.Context) error {
		return b.cli.ContainerStop(ctx, id, container.StopOptions{Timeout: &secs})
	}); err != nil {
		return b.wrap(err, "stopping container %s", id)
	}
	return nil
}

// SetRestartPolicy implements deploy.Backend.
func (b *Backend) SetRestartPolicy(ctx context.Context, id, policy string) error {
	err := bounded(ctx, 0, func(ctx context.Context) error {
		_, err := b.cli.ContainerUpdate(ctx, id, container.UpdateConfig{RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyMode(orDefault(policy, "no"))}})
		return err
	})
	if err != nil {
		return b.wrap(err, "updating restart policy of container %s", id)
	}
	return nil
}

// KernelVersion implements deploy.Backend.
func (b *Backend) KernelVersion(ctx context.Context) (string, error) {
	var info system.Info
	err := bounded(ctx, 0, func(ctx context.Context) (err error) {
		info, err = b.cli.Info(ctx)
		return err
	})
	if err != nil {
		return "", b.wrap(err, "reading engine info")
	}
	return info.KernelVersion, nil
}

// IsNotFound reports whether err means the container is gone.
func IsNotFound(err error) bool { return errors.Is(err, deploy.ErrNotFound) }

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// envMap turns a container's KEY=value environment into a map.
func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

var _ deploy.Execer = (*Backend)(nil)

// Exec implements deploy.Execer.
func (b *Backend) Exec(ctx context.Context, id string, cmd []string) (string, error) {
	var stdout, stderr bytes.Buffer
	err := bounded(ctx, time.Minute, func(ctx context.Context) error { // the command's own run time
		created, err := b.cli.ContainerExecCreate(ctx, id, container.ExecOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
		if err != nil {
			return err
		}
		att, err := b.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
		if err != nil {
			return err
		}
		defer att.Close()
		if _, err := stdcopy.StdCopy(&stdout, &stderr, att.Reader); err != nil {
			return err
		}
		ins, err := b.cli.ContainerExecInspect(ctx, created.ID)
		if err != nil {
			return err
		}
		if ins.ExitCode != 0 {
			return fmt.Errorf("exit status %d: %s", ins.ExitCode, strings.TrimSpace(stderr.String()+stdout.String()))
		}
		return nil
	})
	if err != nil {
		return stdout.String(), b.wrap(err, "running %q in container %s", cmd[0], id)
	}
	return stdout.String(), nil
}
