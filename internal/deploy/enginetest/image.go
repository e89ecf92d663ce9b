// Package enginetest builds the test engine image: the simulated engine (cmd/simengine)
// behind the engineshim launcher, FROM scratch, on whatever Docker Engine a test uses. No
// registry is involved.
package enginetest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// TestLabel marks every container and image a test creates, so Sweep can find leftovers.
const TestLabel = "dev.llmserve.test"

// RunLabel carries RunID on the containers a test process creates, so a check for leftovers
// looks only at its own: another test run sharing the engine has containers with TestLabel
// alive at the same time, and they are not this run's leftovers.
const RunLabel = "dev.llmserve.test.run"

// RunID identifies this test process among the runs sharing an engine.
var RunID = rand.Text()

// HCLLabels is the labels argument a test configuration gives its containers, so Sweep and
// the checks for leftovers find them as this run's.
func HCLLabels() string {
	return fmt.Sprintf("{ %q = \"true\", %q = %q }", TestLabel, RunLabel, RunID)
}

// dockerfile installs the shim under the names the provider's default entrypoints use.
const dockerfile = `FROM scratch
COPY simengine /simengine
COPY engineshim /usr/bin/python3
COPY engineshim /usr/bin/llama-server
COPY engineshim /usr/bin/nvidia-smi
LABEL ` + TestLabel + `=true
`

// BuildBinaries compiles the simulated engine and the shim as static binaries into dir.
func BuildBinaries(ctx context.Context, dir string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	for name, pkg := range map[string]string{
		"simengine":  "./cmd/simengine",
		"engineshim": "./internal/deploy/enginetest/engineshim",
	} {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(dir, name), pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building %s for the test image: %w\n%s", pkg, err, out)
		}
	}
	return nil
}

// BuildImage builds the test image as tag on cli's engine from the binaries in dir, labelled
// with this run (RunLabel) so that only this run's Sweep removes it.
func BuildImage(ctx context.Context, cli *client.Client, dir, tag string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(data))}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := add("Dockerfile", 0o644, []byte(dockerfile)); err != nil {
		return fmt.Errorf("writing build context: %w", err)
	}
	for _, name := range []string{"simengine", "engineshim"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("reading %s for the build context (run BuildBinaries first): %w", name, err)
		}
		if err := add(name, 0o755, data); err != nil {
			return fmt.Errorf("writing build context: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("writing build context: %w", err)
	}
	resp, err := cli.ImageBuild(ctx, &buf, build.ImageBuildOptions{Tags: []string{tag}, Remove: true, ForceRemove: true,
		Labels: map[string]string{RunLabel: RunID}})
	if err != nil {
		return fmt.Errorf("building test image %s: %w", tag, err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var msg struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading build output for %s: %w", tag, err)
		}
		if msg.Error != "" {
			return fmt.Errorf("building test image %s: %s", tag, msg.Error)
		}
	}
}

// Sweep removes every container this test process created (TestLabel with this RunID), and
// with removeImages every test image it built, on cli's engine. It is the cleanup of last
// resort after a failed test. Anything else is left alone: containers the provider created
// for anyone else (deploy.ManagedLabel alone), such as a user's quickstart, and another test
// run's containers and images on a shared engine, which may be in use right now.
func Sweep(ctx context.Context, cli *client.Client, removeImages bool) error {
	var errs []string
	ours := filters.NewArgs(filters.Arg("label", TestLabel), filters.Arg("label", RunLabel+"="+RunID))
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: ours})
	if err != nil {
		return fmt.Errorf("listing containers to sweep: %w", err)
	}
	for _, c := range cs {
		if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, err.Error())
		}
	}
	if removeImages {
		imgs, err := cli.ImageList(ctx, image.ListOptions{Filters: ours})
		if err != nil {
			return fmt.Errorf("listing test images to sweep: %w", err)
		}
		for _, im := range imgs {
			if _, err := cli.ImageRemove(ctx, im.ID, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("sweeping test leftovers: %s", strings.Join(errs, "; "))
	}
	return nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("locating the module root with go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the module; run the tests from the repository")
	}
	return filepath.Dir(mod), nil
}
