package runner

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/system"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/docker"
)

// BinaryEnv overrides the binary the runner image is built from (by default the running
// provider's own, os.Executable): tests run the provider inside the test binary, and a
// provider running on another OS can point it at the release's linux binary.
const BinaryEnv = "LLMSERVE_RUNNER_BINARY"

// ImageRepository is the name of the runner images the provider builds, tagged with the
// binary's hash, so each provider build has its own and builds it once per engine.
const ImageRepository = "llmserve-runner"

// binaryPath is the provider binary a runner image is built from.
func binaryPath(configured string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	if p := os.Getenv(BinaryEnv); p != "" {
		return p, nil
	}
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the provider's own binary for the runner image: %w; set %s or runner.docker.image", err, BinaryEnv)
	}
	return p, nil
}

// goArch names the engine's architecture (docker info: x86_64, aarch64) as Go does.
func goArch(engine string) string {
	switch engine {
	case "x86_64", "amd64":
		return "amd64"
	case "aarch64", "arm64":
		return "arm64"
	}
	return engine
}

// elfArch is the Go architecture of a Linux executable, or why it cannot run FROM scratch.
func elfArch(bin []byte) (string, error) {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return "", fmt.Errorf("it is not a Linux executable")
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", fmt.Errorf("it is linked dynamically (built with cgo); build it with CGO_ENABLED=0, as the release is")
		}
	}
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", nil
	case elf.EM_AARCH64:
		return "arm64", nil
	}
	return f.Machine.String(), nil
}

// CheckEngine says whether the runner image can be built for the engine from the binary
// (the configured path, BinaryEnv or the provider's own): a Linux engine of the binary's
// architecture, and a static binary. Nothing is created.
func (d *Docker) CheckEngine(ctx context.Context) error {
	_, _, err := d.binary(ctx)
	return err
}

// binary reads the runner binary and checks it against the engine.
func (d *Docker) binary(ctx context.Context) ([]byte, string, error) {
	p, err := binaryPath(d.Binary)
	if err != nil {
		return nil, "", err
	}
	var info system.Info
	err = docker.Bounded(ctx, 0, func(ctx context.Context) (err error) { info, err = d.Cli.Info(ctx); return err })
	if err != nil {
		return nil, "", d.wrap(err, "reading the engine's architecture")
	}
	bin, err := os.ReadFile(p)
	if err != nil {
		return nil, "", fmt.Errorf("reading the provider binary %s for the runner image: %w; set runner.docker.image", p, err)
	}
	want := goArch(info.Architecture)
	arch, err := elfArch(bin)
	if err == nil && (info.OSType != "linux" || arch != want) {
		err = fmt.Errorf("it is for linux/%s and the engine runs %s/%s", arch, info.OSType, want)
	}
	if err != nil {
		return nil, "", &ImageError{Host: d.Host, Binary: p, Arch: want, Why: err.Error()}
	}
	return bin, p, nil
}

// ImageError is a runner image that cannot be built from the provider binary for the engine.
type ImageError struct {
	Host, Binary, Arch, Why string
}

func (e *ImageError) Error() string {
	return fmt.Sprintf("the runner image cannot be built on %s from the provider binary %s: %s. Set runner.docker.image to an image of the provider's linux_%s release binary "+
		"(FROM scratch, the binary as its ENTRYPOINT), or %s to that binary", e.Host, e.Binary, e.Why, e.Arch, BinaryEnv)
}

// image is the runner image on the engine: runner.docker.image as given (pulled when
// missing), or built from the provider binary FROM scratch, once per binary.
func (d *Docker) image(ctx context.Context) (string, error) {
	if d.Image != "" {
		if err := d.inspectImage(ctx, d.Image); err == nil {
			return d.Image, nil
		} else if !cerrdefs.IsNotFound(err) {
			return "", d.wrap(err, "inspecting runner.docker.image %q", d.Image)
		}
		opened := false
		err := docker.Stream(ctx, 0, func(ctx context.Context) (io.ReadCloser, error) {
			rc, err := d.Cli.ImagePull(ctx, d.Image, image.PullOptions{})
			opened = err == nil
			return rc, err
		}, buildStream)
		switch {
		case err != nil && !opened:
			return "", d.wrap(err, "runner.docker.image %q is not on the engine and pulling it failed; load it (docker load) or check the registry", d.Image)
		case err != nil:
			return "", d.wrap(err, "pulling runner.docker.image %q", d.Image)
		}
		return d.Image, nil
	}
	bin, _, err := d.binary(ctx)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(bin)
	tag := ImageRepository + ":" + hex.EncodeToString(sum[:8])
	if err := d.inspectImage(ctx, tag); err == nil {
		return tag, nil
	} else if !cerrdefs.IsNotFound(err) {
		return "", d.wrap(err, "inspecting the runner image %s", tag)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dockerfile := []byte("FROM scratch\nCOPY llmserve-runner /llmserve-runner\nENTRYPOINT [\"/llmserve-runner\"]\n")
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"Dockerfile", 0o644, dockerfile}, {"llmserve-runner", 0o755, bin}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			return "", err
		}
		if _, err := tw.Write(f.data); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	err = docker.Stream(ctx, docker.UploadTime(buf.Len()), func(ctx context.Context) (io.ReadCloser, error) {
		resp, err := d.Cli.ImageBuild(ctx, &buf, build.ImageBuildOptions{Tags: []string{tag}, Remove: true, ForceRemove: true,
			Labels: map[string]string{KindLabel: "docker"}})
		return resp.Body, err
	}, buildStream)
	if err != nil {
		return "", d.wrap(err, "building the runner image %s", tag)
	}
	return tag, nil
}

func (d *Docker) inspectImage(ctx context.Context, ref string) error {
	return docker.Bounded(ctx, 0, func(ctx context.Context) error { _, err := d.Cli.ImageInspect(ctx, ref); return err })
}

// buildStream drains a build's or pull's progress stream; its errors arrive in it.
func buildStream(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var msg struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if msg.Error != "" {
			return fmt.Errorf("%s", msg.Error)
		}
	}
}
