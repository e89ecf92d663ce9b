package provider

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/docker"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/enginetest"
)

// TestAccInferenceServer_remoteTLS deploys on a second dockerd that listens only on
// tcp://127.0.0.1 with --tlsverify, with certificates made here: the remote-host path as a
// user with a tcp:// engine sees it. The daemon has no bridge, so the server uses host
// networking.
func TestAccInferenceServer_remoteTLS(t *testing.T) {
	testAccPreCheck(t)
	tlsm, err := enginetest.NewTLSMaterial()
	if err != nil {
		t.Fatal(err)
	}
	d := enginetest.StartTLSDaemon(t, tlsm)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The image is built on the second daemon itself: it exists nowhere else there, so a
	// container that runs proves the provider talked to that daemon.
	bin := t.TempDir()
	if err := enginetest.BuildBinaries(ctx, bin); err != nil {
		t.Fatal(err)
	}
	if err := enginetest.BuildImage(ctx, d.Client, bin, accImage); err != nil {
		t.Fatalf("%v\n--- dockerd log ---\n%s", err, d.Log())
	}
	b := docker.NewBackend(d.Client, d.Host)
	certDir := filepath.Join(t.TempDir(), "certs")
	if err := tlsm.WriteClientDir(certDir); err != nil {
		t.Fatal(err)
	}
	pemProvider := fmt.Sprintf(`
provider "llmserve" {
  docker_host = %q
  ca_pem      = %q
  cert_pem    = %q
  key_pem     = %q
}
`, d.Host, tlsm.CAPEM, tlsm.ClientCertPEM, tlsm.ClientKeyPEM)

	t.Run("pem", func(t *testing.T) {
		name := accContainer + "-tls"
		port := enginetest.FreePort(t)
		cfg := testAccInferenceServerConfig(name, fmt.Sprintf("  network_mode = \"host\"\n  port = %d", port))
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
			CheckDestroy:             testAccCheckGone(b, name),
			Steps: []resource.TestStep{
				{
					Config: pemProvider + cfg,
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(accResource, tfjsonpath.New("id"), knownvalue.StringRegexp(regexp.MustCompile(`^[0-9a-f]{64}$`))),
						statecheck.ExpectKnownValue(accResource, tfjsonpath.New("running"), knownvalue.Bool(true)),
						statecheck.ExpectKnownValue(accResource, tfjsonpath.New("network_mode"), knownvalue.StringExact("host")),
						// Host networking on a remote engine: the engine's port under the
						// docker_host name.
						statecheck.ExpectKnownValue(accResource, tfjsonpath.New("endpoint"), knownvalue.StringExact(fmt.Sprintf("http://127.0.0.1:%d", port))),
						statecheck.ExpectKnownValue(accResource, tfjsonpath.New("image_digest"), knownvalue.StringRegexp(regexp.MustCompile(`^sha256:[0-9a-f]{64}$`))),
					},
					Check: resource.ComposeTestCheckFunc(
						testAccCheckCompletion("sim/qwen-test", ""),
						testAccCheckOnEngine(b, name),
					),
				},
				{
					// The same engine through cert_path: refresh reads the container over
					// TLS with the files, and nothing changes.
					Config: fmt.Sprintf(`
provider "llmserve" {
  docker_host = %q
  cert_path   = %q
}
`, d.Host, certDir) + cfg,
					ConfigPlanChecks: resource.ConfigPlanChecks{
						PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
					},
					Check: testAccCheckOnEngine(b, name),
				},
			},
		})
	})

	t.Run("environment", func(t *testing.T) {
		// Nothing in the provider block: DOCKER_HOST, DOCKER_CERT_PATH and DOCKER_TLS_VERIFY.
		t.Setenv("DOCKER_HOST", d.Host)
		t.Setenv("DOCKER_CERT_PATH", certDir)
		t.Setenv("DOCKER_TLS_VERIFY", "1")
		name := accContainer + "-tls-env"
		port := enginetest.FreePort(t)
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
			CheckDestroy:             testAccCheckGone(b, name),
			Steps: []resource.TestStep{{
				Config: testAccInferenceServerConfig(name, fmt.Sprintf("  network_mode = \"host\"\n  port = %d", port)),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(accResource, tfjsonpath.New("endpoint"), knownvalue.StringExact(fmt.Sprintf("http://127.0.0.1:%d", port))),
				},
				Check: resource.ComposeTestCheckFunc(
					testAccCheckCompletion("sim/qwen-test", ""),
					testAccCheckOnEngine(b, name),
				),
			}},
		})
	})

	t.Run("refused", func(t *testing.T) {
		other, err := enginetest.NewTLSMaterial()
		if err != nil {
			t.Fatal(err)
		}
		name := accContainer + "-tls-refused"
		cfg := testAccInferenceServerConfig(name, fmt.Sprintf("  network_mode = \"host\"\n  port = %d", enginetest.FreePort(t)))
		tests := []struct {
			name     string
			provider string
			env      map[string]string
			want     *regexp.Regexp
		}{
			{
				// The engine's certificate is checked against ca_pem, never skipped.
				name: "engine certificate from another CA",
				provider: fmt.Sprintf(`
provider "llmserve" {
  docker_host = %q
  ca_pem      = %q
  cert_pem    = %q
  key_pem     = %q
}
`, d.Host, other.CAPEM, tlsm.ClientCertPEM, tlsm.ClientKeyPEM),
				want: regexp.MustCompile(`(?s)tcp://127\.0\.0\.1:\d+.*x509:\s+certificate\s+signed\s+by\s+unknown\s+authority`),
			},
			{
				// --tlsverify on the engine refuses a client certificate it did not sign.
				name: "client certificate from another CA",
				provider: fmt.Sprintf(`
provider "llmserve" {
  docker_host = %q
  ca_pem      = %q
  cert_pem    = %q
  key_pem     = %q
}
`, d.Host, tlsm.CAPEM, other.ClientCertPEM, other.ClientKeyPEM),
				want: regexp.MustCompile(`(?s)tcp://127\.0\.0\.1:\d+.*remote\s+error:\s+tls:`),
			},
			{
				// DOCKER_TLS_VERIFY without material is an error, not plain TCP.
				name:     "DOCKER_TLS_VERIFY without material",
				provider: `provider "llmserve" {}`,
				env:      map[string]string{"DOCKER_HOST": d.Host, "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": ""},
				want:     regexp.MustCompile(`DOCKER_TLS_VERIFY\s+is\s+set\s+but\s+no\s+TLS\s+material`),
			},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				for k, v := range tt.env {
					t.Setenv(k, v)
				}
				resource.Test(t, resource.TestCase{
					ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
					CheckDestroy:             testAccCheckGone(b, name),
					Steps: []resource.TestStep{{
						Config:      tt.provider + cfg,
						ExpectError: tt.want,
					}},
				})
			})
		}
	})
}

// testAccCheckOnEngine checks that the container in state runs on the engine b talks to.
func testAccCheckOnEngine(b *docker.Backend, name string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		st, err := b.Inspect(context.Background(), name)
		if err != nil {
			return fmt.Errorf("container %s is not on the engine: %w", name, err)
		}
		if id := s.RootModule().Resources[accResource].Primary.ID; st.ID != id || !st.Running {
			return fmt.Errorf("engine has %s (running %t), state has %s", st.ID, st.Running, id)
		}
		return nil
	}
}
