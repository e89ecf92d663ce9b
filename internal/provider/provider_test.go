package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/docker"
)

// testAccProtoV6ProviderFactories serves the provider in-process to the real Terraform CLI.
var testAccProtoV6ProviderFactories = map[string]func() (tfprotov6.ProviderServer, error){
	"llmserve": ProtocolServer("test"),
}

// testAccPreCheck skips an acceptance test unless TF_ACC is set. resource.Test skips too, but
// only after the test has built images or started daemons and servers for it.
func testAccPreCheck(t *testing.T) {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1")
	}
}

// testAccTinyModel is the absolute path of the generated GGUF model that the real llama.cpp
// tests serve. When it is missing the test fails and names the script that builds it.
func testAccTinyModel(t *testing.T) string {
	t.Helper()
	model, err := filepath.Abs("../../.cache/models/tiny-llama.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(model); err != nil {
		t.Fatalf("the tiny model is missing (%v): run scripts/build-model.sh", err)
	}
	return model
}

// testAccRequireLlamaCppImage fails the test, naming the script that builds it, when the
// llama.cpp image is not on b's engine.
func testAccRequireLlamaCppImage(t *testing.T, b *docker.Backend) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := b.Client().ImageInspect(ctx, quickstartImage); err != nil {
		t.Fatalf("image %s is missing (%v): run scripts/build-llamacpp-image.sh", quickstartImage, err)
	}
}

// TestMain clears what an interrupted earlier acceptance run left on the Docker Engine before
// any test creates a container.
func TestMain(m *testing.M) {
	if os.Getenv("TF_ACC") != "" {
		if b, err := docker.NewConnection(docker.ConfigFromEnv(docker.Config{})).Backend(); err == nil {
			removeStaleTestContainers(b)
		}
	}
	os.Exit(m.Run())
}

// removeStaleTestContainers removes the stopped containers an interrupted earlier run of these
// tests left under their names (llmserve-acc-*: a killed go test, a dockerd restarted under
// it), which would otherwise fail the next run's create with a clash. A running one may be
// another run's and is left alone.
func removeStaleTestContainers(b *docker.Backend) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := b.Client().ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("name", "llmserve-acc-"))})
	if err != nil {
		return // no engine here: the tests that need one say so
	}
	for _, c := range list {
		if c.State == container.StateRunning || len(c.Names) == 0 || !strings.HasPrefix(strings.TrimPrefix(c.Names[0], "/"), "llmserve-acc-") {
			continue
		}
		if err := b.Client().ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil {
			fmt.Fprintf(os.Stderr, "removing %s, which an earlier run left %s: %v\n", c.Names[0], c.State, err)
			continue
		}
		fmt.Fprintf(os.Stderr, "removed %s, which an interrupted earlier run left (%s)\n", c.Names[0], c.Status)
	}
}
