package provider

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

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
