package runner

// Reaching a server that publishes nothing: one TCP connection into the server container's
// network namespace, carried through the Docker Engine the provider already talks to. The
// runner image's `relay` mode, in a container sharing that namespace with its standard input
// and output attached, copies bytes between them and the server's loopback port; the
// provider's end is a net.Conn an http.Client dials. No port is published, no other program
// is needed in the engine's image, and the API key travels inside the HTTP stream, never in
// the relay's command, environment or labels.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/docker"
)

// RelayKind is KindLabel's value on a relay container.
const RelayKind = "relay"

// relayDialWait is how long a relay retries a server port that refuses connections (the
// engine still loading) before it gives up: one relay container per readiness poll would
// churn the engine host while a model loads for minutes.
const relayDialWait = 10 * time.Second

// relay is the runner's `relay <host:port>` mode: it connects to addr (retrying while it is
// refused, for relayDialWait) and copies stdin to the connection and the connection to
// stdout until the server closes it.
func relay(ctx context.Context, addr string, stdin io.Reader, stdout, stderr io.Writer) int {
	deadline := time.Now().Add(relayDialWait)
	var conn net.Conn
	for {
		var err error
		d := net.Dialer{Timeout: 2 * time.Second}
		conn, err = d.DialContext(ctx, "tcp", addr)
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			fmt.Fprintf(stderr, "%v", err)
			return 1
		}
		time.Sleep(100 * time.Millisecond)
	}
	defer conn.Close()
	go func() {
		_, _ = io.Copy(conn, stdin)
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite() // the request is whole: the server may answer and close
		}
	}()
	if _, err := io.Copy(stdout, conn); err != nil {
		fmt.Fprintf(stderr, "%v", err)
		return 1
	}
	return 0
}

// HTTPClient is a client whose connections reach into the network namespace of the server
// container target (id or name) through the engine: each connection is one relay container
// sharing that namespace, removed when the connection closes. Requests go to the server's
// address as it sees itself: http://127.0.0.1:<port>. Keep-alive keeps the relays few; call
// CloseIdleConnections when done.
func (d *Docker) HTTPClient(target string) *http.Client {
	var mu sync.Mutex
	var img string
	dial := func(ctx context.Context, _, addr string) (net.Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		if img == "" {
			i, err := d.image(ctx)
			if err != nil {
				return nil, fmt.Errorf("the relay into the server container %s: %w", target, err)
			}
			img = i
		}
		return d.dialRelay(ctx, img, target, addr)
	}
	return &http.Client{Transport: &http.Transport{DialContext: dial, MaxIdleConnsPerHost: 1, IdleConnTimeout: 5 * time.Second}}
}

// dialRelay starts one relay container in target's network namespace, attached.
func (d *Docker) dialRelay(ctx context.Context, img, target, addr string) (net.Conn, error) {
	var created container.CreateResponse
	err := docker.Bounded(ctx, 0, func(ctx context.Context) (err error) {
		created, err = d.Cli.ContainerCreate(ctx,
			&container.Config{Image: img, Cmd: []string{"runner", "relay", addr},
				OpenStdin: true, StdinOnce: true, AttachStdin: true, AttachStdout: true, AttachStderr: true,
				Labels: map[string]string{KindLabel: RelayKind, TargetLabel: target, deploy.ManagedLabel: "true"}},
			&container.HostConfig{NetworkMode: container.NetworkMode("container:" + target), AutoRemove: true}, nil, nil, "")
		return err
	})
	if err != nil {
		return nil, d.wrap(err, "creating a relay into the server container %s (image %s)", target, img)
	}
	c := &relayConn{d: d, id: created.ID}
	hj, err := d.Cli.ContainerAttach(ctx, created.ID, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		_ = c.remove()
		return nil, d.wrap(err, "attaching to the relay into the server container %s", target)
	}
	c.hj = hj
	if err := docker.Bounded(ctx, 0, func(ctx context.Context) error {
		return d.Cli.ContainerStart(ctx, created.ID, container.StartOptions{})
	}); err != nil {
		_ = c.Close()
		return nil, d.wrap(err, "starting a relay into the server container %s (image %s)", target, img)
	}
	c.local, c.remote = net.Pipe()
	go c.demux()
	return c, nil
}

// relayConn is the provider's end of a relay: writes go to its stdin, reads come from its
// demultiplexed stdout; what it said on stderr becomes the read error (why it could not
// connect).
type relayConn struct {
	d             *Docker
	id            string
	hj            types.HijackedResponse
	local, remote net.Conn
	stderr        bytes.Buffer
	once          sync.Once
}

func (c *relayConn) demux() {
	_, _ = stdcopy.StdCopy(c.remote, &c.stderr, c.hj.Reader)
	_ = c.remote.Close() // stderr is whole before Read sees the end
}

func (c *relayConn) Read(p []byte) (int, error) {
	n, err := c.local.Read(p)
	if errors.Is(err, io.EOF) && c.stderr.Len() > 0 {
		return n, fmt.Errorf("relay in the server's network namespace: %s", strings.TrimSpace(c.stderr.String()))
	}
	return n, err
}

func (c *relayConn) Write(p []byte) (int, error) { return c.hj.Conn.Write(p) }

func (c *relayConn) Close() error {
	c.once.Do(func() {
		if c.hj.Conn != nil {
			_ = c.hj.CloseWrite()
			c.hj.Close()
		}
		if c.local != nil {
			_ = c.local.Close()
		}
		_ = c.remove()
	})
	return nil
}

// remove removes the relay container; AutoRemove does it too once the relay exits, and a
// relay whose stdin closed exits, so either may be first.
func (c *relayConn) remove() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return c.d.Cli.ContainerRemove(ctx, c.id, container.RemoveOptions{Force: true})
}

func (c *relayConn) LocalAddr() net.Addr  { return c.local.LocalAddr() }
func (c *relayConn) RemoteAddr() net.Addr { return c.local.RemoteAddr() }
func (c *relayConn) SetDeadline(t time.Time) error {
	_ = c.hj.Conn.SetWriteDeadline(t)
	return c.local.SetReadDeadline(t)
}
func (c *relayConn) SetReadDeadline(t time.Time) error  { return c.local.SetReadDeadline(t) }
func (c *relayConn) SetWriteDeadline(t time.Time) error { return c.hj.Conn.SetWriteDeadline(t) }
